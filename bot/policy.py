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
* **threshold** — only citations whose score is under the verifier's high-precision
  ``report_threshold`` (chosen on dev data), and flagged, are worth a talk-page message; the
  dashboard still shows everything.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import mwparserfromhell

from service.store import Store, StoredResult, suggestion_key, utcnow
from side.errors import ConfigError
from side.pipeline import SourceStatus

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


def report_threshold(configured: float, model_dir: str | Path | None = None) -> float:
    """The score under which a flagged citation goes to a talk page.

    A non-negative configured value wins; otherwise the shipped verifier's ``report_threshold``
    (its high-precision operating point, chosen on dev data), read from the combiner file
    without loading the model.
    """
    if configured >= 0:
        return configured
    from side.verify.crossencoder import DEFAULT_MODEL_DIR
    from side.verify.verifier import COMBINER_FILE, Combiner

    path = Path(model_dir or DEFAULT_MODEL_DIR) / COMBINER_FILE
    combiner = Combiner.load(path)
    if combiner is None:
        raise ConfigError(f"no usable verifier combiner at {path}: set bot.report_threshold")
    return float(combiner.report_threshold)


def is_reportable(result: StoredResult, threshold: float) -> bool:
    """A flagged citation whose source was read and scored under the high-precision threshold.

    A citation whose page is not the source (``cannot_check``: a paywall, a wall, a foreign
    page) is never flagged by the pipeline; it is refused here too, whatever a store row says.
    """
    return (result.flagged and result.source_status != SourceStatus.CANNOT_CHECK and result.score is not None
            and result.score < threshold)


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
