"""When the bot may post a talk-page report: the compliance rules, in one place.

Every rule errs towards silence, because a bot that posts wrong or too many messages is
blocked, and rightly so:

* **run page** — an on-wiki page (``User:SideBot/Run``) must say ``yes`` before anything is
  posted; any editor can stop the bot by changing it (as InternetArchiveBot does). A missing
  or unreadable page means no.
* **bot exclusion** — ``{{nobots}}`` and ``{{bots|deny=…}}`` / ``{{bots|allow=…}}`` (pywikibot's
  ``botMayEdit``, repeated here on the text so a just-saved template counts before the links
  tables catch up) and ``{{bots|optout=side}}`` / ``optout=all`` (the message-type opt-out,
  which pywikibot ignores).
* **rate** — a daily cap of reported citations per wiki, a cooldown per article (one section
  per article per day by default) and never the same Suggestion twice, all counted in the
  store so they hold across restarts and several bot processes.
* **level** — only a citation the worker found *not supported*, and ``reportable`` (under the
  verifier's talk-page operating point, precision >= 0.9 chosen on train data, decided when the
  check ran and stored with the result) is worth a talk-page message. *Partially supported*
  and *could not be checked* are never reported, whatever a score or a flag says; the
  dashboard still shows everything. A configured ``bot.report_threshold`` replaces the stored
  operating point with a stricter or looser score cut, never the level rule.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import mwparserfromhell

from service.store import Store, StoredResult, suggestion_key, utcnow
from side.pipeline import SourceStatus
from side.verify.levels import VerdictLevel

log = logging.getLogger(__name__)

#: Words that switch the bot on when they open the run page.
RUN_WORDS = frozenset({"yes", "true", "on", "run"})


@dataclass(frozen=True)
class Decision:
    """Whether something may be posted, and why not when it may not."""

    allowed: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.allowed


ALLOW = Decision(True)


def is_run_enabled(text: str | None) -> bool:
    """Whether the run page says yes: its first word, outside comments, is yes/true/on/run."""
    if not text:
        return False
    visible = re.sub(r"<!--.*?(?:-->|$)", " ", text, flags=re.DOTALL)
    words = re.findall(r"[a-z]+", visible.lower())
    return bool(words) and words[0] in RUN_WORDS


def _names(value: str) -> set[str]:
    return {name.strip().lower() for name in value.split(",") if name.strip()}


def exclusion_reason(text: str, bot_user: str, optout_name: str) -> str | None:
    """Why the bot-exclusion templates on a page keep this bot out, or None.

    Follows Wikipedia's {{bots}} documentation: ``{{nobots}}``, ``{{bots|deny=all|X}}``,
    ``{{bots|allow=none|list without X}}``, ``{{bots|optout=all|name}}``.
    """
    user = bot_user.strip().lower()
    for template in mwparserfromhell.parse(text or "").filter_templates(recursive=True):
        name = str(template.name).strip().lower().replace("_", " ")
        if name.startswith("template:"):
            name = name.removeprefix("template:").strip()
        if name == "nobots":
            return "{{nobots}}"
        if name != "bots":
            continue
        params = {str(p.name).strip().lower(): str(p.value).strip() for p in template.params}
        if "deny" in params and (_names(params["deny"]) & {"all", user}):
            return "{{bots|deny=...}}"
        if "allow" in params and not (_names(params["allow"]) & {"all", user}):
            return "{{bots|allow=...}} without this bot"
        if "optout" in params and (_names(params["optout"]) & {"all", optout_name.lower()}):
            return f"{{{{bots|optout={optout_name}}}}}"
    return None


#: Source states with no text of the cited source that was scored: never reported.
UNREAD = frozenset({SourceStatus.CANNOT_CHECK, SourceStatus.UNAVAILABLE, SourceStatus.NO_URL})


def report_threshold(configured: float) -> float | None:
    """The talk-page operating point the bot applies: a non-negative configured score cut, or
    None to use each result's stored ``reportable``.

    ``reportable`` was decided by the worker's pipeline with the verifier it scored with (its
    combiner's ``report_threshold``, precision >= 0.9 on train data), so the bot needs no model
    and cannot disagree with the check it reports; ``bot.report_threshold`` is for a wiki that
    asks for another cut.
    """
    return configured if configured >= 0 else None


def report_decision(result: StoredResult, threshold: float | None = None) -> Decision:
    """Whether one stored result may go to a talk page, and why not.

    Only *not supported* results qualify: a result that could not be checked (a paywall, a wall,
    a foreign page, nothing read), is partially supported, or that Side is unsure of (its level a
    guess between the sure flag cut and the supported cut) never does, whatever a row's flag or
    score says. Then the operating point: the stored ``reportable`` (``threshold`` None), or a
    support score under the configured ``threshold``.
    """
    level = result.level
    if level is not VerdictLevel.NOT_SUPPORTED:
        return Decision(False, f"{level.text}: only not supported citations are reported")
    if result.source_status in UNREAD or result.score is None:
        return Decision(False, "the cited source was not scored")
    if getattr(result, "unsure", False):  # Side's guess, between its sure flag cut and its supported cut
        return Decision(False, "Side is unsure of its level: never reported")
    if not result.flagged:
        return Decision(False, "not flagged")
    if threshold is None:
        if not result.reportable:
            return Decision(False, "not supported, but not at the report's operating point")
        return ALLOW
    if result.score >= threshold:
        return Decision(False, f"support {result.score:.2f} not under the configured report threshold "
                               f"{threshold:.2f}")
    return ALLOW


def is_reportable(result: StoredResult, threshold: float | None = None) -> bool:
    """:func:`report_decision` as a yes or no."""
    return bool(report_decision(result, threshold))


def result_suggestion_key(wiki: str, result: StoredResult) -> str:
    """Identity of what a report says about a citation: the article, the claim and the source
    proposed (or the cited URL when there is no better source), so it is never said twice on a
    talk page, whatever later revisions do."""
    target = result.suggestions[0].url if result.suggestions else "cited:" + result.citation_url
    return suggestion_key(wiki, f"{result.title}\x1f{result.claim_key}", target)


class ReportPolicy:
    """The store-backed rate rules for one wiki.

    ``posted`` selects the ledger: True counts real posts; a dry run counts its own
    would-be posts (``posted=False`` rows), so it prints what a real run would do, once.
    """

    def __init__(self, store: Store, wiki: str, daily_cap: int, cooldown_hours: float, posted: bool = True,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.wiki = wiki
        self.daily_cap = daily_cap
        self.cooldown = timedelta(hours=cooldown_hours)
        self.posted = posted
        self.clock = clock

    def remaining_today(self) -> int:
        """Citations that may still be reported in the last 24 hours' window."""
        used = self.store.reports_since(self.wiki, self.clock() - timedelta(days=1), posted=self.posted)
        return max(0, self.daily_cap - used)

    def article_decision(self, title: str) -> Decision:
        """Cap and cooldown for a new section about ``title``."""
        if self.remaining_today() <= 0:
            return Decision(False, f"daily cap of {self.daily_cap} reported citations reached on {self.wiki}")
        last = self.store.last_report(self.wiki, title, posted=self.posted)
        if last is not None and self.clock() - last.created_at < self.cooldown:
            return Decision(False, f"article reported at {last.created_at:%Y-%m-%d %H:%M} UTC; cooldown "
                                   f"{self.cooldown.total_seconds() / 3600:g} h")
        return ALLOW

    def is_new(self, key: str) -> bool:
        return not self.store.suggestion_reported(self.wiki, key, posted=self.posted)
