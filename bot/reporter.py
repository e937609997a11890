"""The reporting half of the bot: finished checks -> talk-page sections, under the policy.

The bot submits one Check per revision and remembers it as pending (in the checkpoint).
After each poll the :class:`Reporter` looks at the pending checks in the store: checks still
queued or running stay pending, failed ones are dropped (the dashboard shows them), and done
ones are turned into at most one talk-page section with the citations found not supported at
the report's operating point (:func:`bot.policy.report_decision`: never partially supported,
never could not be checked), if every rule in :mod:`bot.policy` allows it.

Modes: a dry run (the default) prints each section it would post and records it in the
store's dry-run ledger (``posted=False``), so it is printed once and the cap and cooldown
behave as they would; ``-post`` saves the section through pywikibot (``Page.save``, which also
enforces ``botMayEdit`` and honours ``-simulate``) and records it as posted.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from bot.policy import (
    Decision,
    ReportPolicy,
    exclusion_reason,
    is_run_enabled,
    report_decision,
    result_suggestion_key,
)
from bot.report import ReportItem, TalkReport, build_report
from service.store import Check, CheckStatus, Store
from side.config import BotConfig
from side.ranking import queue_key

if TYPE_CHECKING:
    from pywikibot.site import APISite

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportOutcome:
    """What happened to one finished check (for logs, tests and the benchmark)."""

    check_id: str
    title: str
    status: str  # "posted" | "printed" | "simulated" | "skipped" | "nothing"
    reason: str = ""
    report: TalkReport | None = None


class Reporter:
    """Turns finished bot checks into talk-page reports."""

    def __init__(self, site: APISite, store: Store, config: BotConfig, threshold: float | None, public_url: str,
                 post: bool = False, out: TextIO | None = None) -> None:
        from pywikibot import config as pwb_config

        self.site = site
        self.store = store
        self.config = config
        #: A configured report cut on the support score, or None: each result's stored ``reportable``.
        self.threshold = threshold
        self.public_url = public_url.rstrip("/")
        self.post = post
        self.simulate = bool(pwb_config.simulate)
        self.out = out or sys.stdout
        #: Real posts go to the posted ledger; dry runs and -simulate to the dry-run ledger.
        self.policy = ReportPolicy(store, config.wiki, config.daily_cap, config.cooldown_hours,
                                   posted=post and not self.simulate)
        self.outcomes: list[ReportOutcome] = []

    @property
    def enabled_here(self) -> bool:
        return self.config.wiki in self.config.talk_report_wikis

    def handle(self, check_ids: Iterable[str]) -> set[str]:
        """Report what is finished; returns the check ids that are no longer pending."""
        finished: set[str] = set()
        for check_id in check_ids:
            record = self.store.check(check_id)
            if record is None or record.status == CheckStatus.FAILED:
                if record is not None:
                    log.warning("check %s of %s failed: %s", check_id, record.title, record.error[:200])
                finished.add(check_id)
            elif record.status == CheckStatus.DONE:
                self.outcomes.append(self.report_check(record))
                finished.add(check_id)
        return finished

    def items_for(self, record: Check) -> list[ReportItem]:
        """The citations of a finished check worth a talk-page message, not reported before, in
        queue order (:func:`side.ranking.queue_key`: the level's band, then Side's score with the
        queue's signals)."""
        items = []
        stored = self.store.results(record.id)
        stored.sort(key=lambda r: queue_key(r, r.priority.score if r.priority else None))
        for result in stored:
            decision = report_decision(result, self.threshold)
            if not decision:
                log.debug("not reporting result %d of %s: %s", result.id, record.title, decision.reason)
                continue
            key = result_suggestion_key(record.wiki, result)
            if self.policy.is_new(key) and key not in {i.suggestion_key for i in items}:
                items.append(ReportItem(result, key))
        return items

    def report_check(self, record: Check) -> ReportOutcome:
        items = self.items_for(record)
        if not items:
            return ReportOutcome(record.id, record.title, "nothing",
                                 "no new citation is not supported at the report's operating point")
        if self.post and not self.enabled_here:
            return self._skip(record, f"talk-page reports are not enabled on {record.wiki} (talk_report_wikis)")
        article = self.current_article(record.title)
        if article is None:
            return self._skip(record, "the article was deleted since the edit")
        decision = self.policy.article_decision(article.title())
        if not decision:
            return self._skip(record, decision.reason)
        items = items[: self.policy.remaining_today()]
        talk = article.toggleTalkPage()
        decision = self.page_decision(talk)
        if not decision:
            return self._skip(record, decision.reason)
        report = build_report(record.wiki, article.title(), talk.title(), record.id, record.revision, items,
                              f"{self.public_url}/dashboard/checks/{record.id}", self.config.run_page,
                              self.config.feedback_page, self.config.optout_name, lang=self.site.lang,
                              max_bytes=self.room_on(talk))
        return self._deliver(record, talk, report)

    def current_article(self, title: str):
        """The article as it is now: None when deleted, its new title when moved (a redirect)."""
        import pywikibot

        article = pywikibot.Page(self.site, title)
        if not article.exists():
            return None
        if article.isRedirectPage():
            article = article.getRedirectTarget()
        return article if article.exists() else None

    def room_on(self, talk) -> int:
        """Bytes a new section may take on ``talk``: the wiki's page size limit (``bot.max_page_bytes``)
        less what the page holds already."""
        used = len(talk.text.encode("utf-8")) if talk.exists() else 0
        return self.config.max_page_bytes - used

    def page_decision(self, talk) -> Decision:
        """Bot exclusion on the talk page: {{nobots}}, {{bots|deny/allow}}, {{bots|optout=}}."""
        text = talk.text if talk.exists() else ""
        reason = exclusion_reason(text, self.site.username() or "", self.config.optout_name)
        if reason:
            return Decision(False, f"{talk.title()} has {reason}")
        if talk.exists() and not talk.botMayEdit():
            return Decision(False, f"{talk.title()} excludes this bot (botMayEdit)")
        return Decision(True)

    def run_page_decision(self) -> Decision:
        """The emergency shutoff, read fresh before every post."""
        import pywikibot

        page = pywikibot.Page(self.site, self.config.run_page)
        try:
            text = page.get(force=True) if page.exists() else None
        except pywikibot.exceptions.Error as exc:
            return Decision(False, f"cannot read the run page {self.config.run_page}: {exc}")
        if not is_run_enabled(text):
            return Decision(False, f"the run page [[{self.config.run_page}]] does not say yes")
        return Decision(True)

    def _deliver(self, record: Check, talk, report: TalkReport) -> ReportOutcome:
        if not self.post:
            print(report.preview(), file=self.out, flush=True)
            self._record(report, posted=False)
            return ReportOutcome(record.id, record.title, "printed", report=report)
        decision = self.run_page_decision()
        if not decision:
            return self._skip(record, decision.reason)
        import pywikibot

        try:
            talk.save(summary=report.summary, section="new", sectiontitle=report.heading, text=report.body,
                      minor=False, bot=True, quiet=True)
        except pywikibot.exceptions.OtherPageSaveError as exc:  # botMayEdit and kin
            return self._skip(record, f"not saved: {exc}")
        except pywikibot.exceptions.Error as exc:
            log.warning("could not post to %s: %s", talk.title(), exc)
            return self._skip(record, f"save failed: {exc}")
        self._record(report, posted=not self.simulate)
        status = "simulated" if self.simulate else "posted"
        log.info("%s report on %s (%d citations)", status, report.talk_title, len(report.items))
        return ReportOutcome(record.id, record.title, status, report=report)

    def _record(self, report: TalkReport, posted: bool) -> None:
        for item in report.items:
            self.store.record_report(report.wiki, report.title, report.check_id, item.result.id,
                                     item.suggestion_key, report.talk_title, posted=posted)

    def _skip(self, record: Check, reason: str) -> ReportOutcome:
        log.info("no report for %s (%s): %s", record.title, record.id, reason)
        return ReportOutcome(record.id, record.title, "skipped", reason)
