"""Backlog mode (``side-bot -backlog``): check the claims editors have already tagged.

Wikipedia's tracking categories ("All articles with failed verification", "All articles with
unsourced statements", ...) list hundreds of thousands of pages whose statements an editor
marked. This mode reads their members, finds each tagged claim (:func:`side.extract.tagged.find_tagged`)
and submits one Check per page with origin ``backlog``: a disputed citation is checked again
and better sources are suggested; an uncited claim gets sources suggested from the corpus.
The results go to the dashboard's Backlog view, where an editor fixes the article by hand.
Side never edits an article, and this mode posts nothing at all (no talk-page reports).

A run is bounded: it reads at most ``bot.backlog_max_pages`` new pages (the category listing
itself is asked for no more than the pages done plus that many), at most
``bot.backlog_pages_per_min`` a minute, and records each page done in a checkpoint, so the
next run goes on where this one stopped and a huge category is worked through run by run.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.checkpoint import CheckpointError, write_json_atomically
from service.store import Check, CheckRequest, Origin
from side.config import BotConfig
from side.errors import ConfigError
from side.extract.lead import read_lead
from side.extract.tagged import DEFAULT_ALIASES, find_tagged, normalise_template

if TYPE_CHECKING:
    from pywikibot.site import APISite

__all__ = ["Submit", "BacklogBot", "BacklogCheckpoint", "BacklogSettings", "BacklogSummary", "backlog_checkpoint_path"]

log = logging.getLogger(__name__)

#: Submits a check: store row + queue job; returns the record and whether a job was queued (both
#: modes of the bot take one: this one and :class:`bot.sidebot.CitationBot`).
Submit = Callable[[CheckRequest], tuple[Check, bool]]

#: Pages whose texts are fetched in one API request.
BATCH_PAGES = 25


@dataclass(frozen=True)
class BacklogSettings:
    """Which tags, which categories, how much per run: ``[bot] backlog_*`` with the command line's overrides."""

    templates: tuple[str, ...]
    #: Tracking category of each tag (without the namespace prefix).
    categories: dict[str, str]
    #: Lower-case template name (redirects too) -> canonical tag name.
    aliases: dict[str, str]
    max_pages: int = 200
    pages_per_min: float = 60.0

    @classmethod
    def from_config(cls, bot: BotConfig, templates: Iterable[str] | None = None,
                    max_pages: int | None = None) -> BacklogSettings:
        aliases = {**DEFAULT_ALIASES, **{normalise_template(k): normalise_template(v)
                                         for k, v in bot.backlog_aliases.items()}}
        wanted = tuple(dict.fromkeys(aliases.get(normalise_template(t), normalise_template(t))
                                     for t in (bot.backlog_templates if templates is None else templates)))
        categories = {normalise_template(k): v for k, v in bot.backlog_categories.items()}
        if not wanted:
            raise ConfigError("backlog mode needs at least one template (bot.backlog_templates or -templates:)")
        missing = [t for t in wanted if t not in categories]
        if missing:
            raise ConfigError(f"no tracking category for {', '.join(map(repr, missing))}: "
                              "add it to bot.backlog_categories")
        for template in wanted:  # a tag is always its own alias
            aliases.setdefault(template, template)
        limit = bot.backlog_max_pages if max_pages is None else max_pages
        if limit <= 0:
            raise ConfigError(f"the backlog page limit must be positive, not {limit}")
        return cls(wanted, {t: categories[t] for t in wanted},
                   {a: c for a, c in aliases.items() if c in wanted}, limit, bot.backlog_pages_per_min)

    def category_list(self) -> list[str]:
        """Each tracking category once, in the order of the tags."""
        return list(dict.fromkeys(self.categories[t] for t in self.templates))


def backlog_checkpoint_path(checkpoint: str, wiki: str, var_dir: Path) -> Path:
    return Path(checkpoint) if checkpoint else Path(var_dir) / f"backlog-{wiki}.json"


@dataclass
class BacklogCheckpoint:
    """The pages a backlog run has done (title -> revision read), kept in an atomically replaced file."""

    path: Path
    wiki: str
    done: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, wiki: str) -> BacklogCheckpoint:
        if not path.exists():
            return cls(path, wiki)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            done = {str(k): int(v) for k, v in data["done"].items()}
            owner = str(data["wiki"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"cannot read the backlog checkpoint {path}: {exc}; fix or delete it "
                                  "(deleting it makes the bot start the backlog again)") from exc
        if owner != wiki:
            raise CheckpointError(f"the backlog checkpoint {path} belongs to wiki {owner!r}, not {wiki!r}")
        return cls(path, wiki, done)

    def mark(self, title: str, revision: int) -> None:
        self.done[title] = revision
        self.save()

    def save(self) -> None:
        write_json_atomically(self.path, {"wiki": self.wiki, "done": self.done})


@dataclass
class BacklogSummary:
    """What a run did: pages and claims read, checks submitted, tags skipped by reason."""

    pages: int = 0
    claims: int = 0
    cited: int = 0
    submitted: int = 0
    known: int = 0
    already_done: int = 0
    no_tag: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    check_ids: list[str] = field(default_factory=list)

    def line(self) -> str:
        minutes = max(self.seconds, 1e-9) / 60
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items())) or "none"
        return (f"backlog: {self.pages} pages, {self.claims} tagged claims ({self.cited} cited, "
                f"{self.claims - self.cited} uncited), {self.submitted} checks submitted, {self.known} known, "
                f"{self.already_done} pages done before, {self.no_tag} without a readable tag; "
                f"tags skipped: {skipped}; {self.seconds:.1f} s, {self.pages / minutes:.0f} pages/min, "
                f"{self.claims / minutes:.0f} claims/min")


class BacklogBot:
    """Reads the tracking categories' members, finds their tagged claims, submits Checks."""

    def __init__(self, site: APISite, submit: Submit, checkpoint: BacklogCheckpoint, wiki: str,
                 settings: BacklogSettings, sleep: Callable[[float], Any] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.site = site
        self.submit = submit
        self.checkpoint = checkpoint
        self.wiki = wiki
        self.settings = settings
        self.sleep = sleep
        self.clock = clock
        self._stopping = False
        self._last_page: float | None = None

    def members(self) -> Iterator[tuple[str, Any]]:
        """(category, page) for the articles of each tracking category not done yet.

        Each listing asks for no more than the pages done plus the run's limit, so even a
        category whose every page is done is read to a bound, never without end.
        """
        import pywikibot

        bound = len(self.checkpoint.done) + self.settings.max_pages
        seen: set[str] = set()
        for name in self.settings.category_list():
            category = pywikibot.Category(self.site, name if ":" in name else f"Category:{name}")
            for page in category.articles(namespaces=[0], total=bound):
                title = page.title()
                if title in seen:
                    continue
                seen.add(title)
                yield name, page

    def run(self) -> BacklogSummary:
        summary = BacklogSummary()
        started = self.clock()
        batch: list[tuple[str, Any]] = []
        for category, page in self.members():
            if self._stopping:
                break
            if page.title() in self.checkpoint.done:
                summary.already_done += 1
                continue
            batch.append((category, page))
            if summary.pages + len(batch) >= self.settings.max_pages or len(batch) >= BATCH_PAGES:
                self._treat_batch(batch, summary)
                batch = []
                if summary.pages >= self.settings.max_pages:
                    break
        if batch and not self._stopping:
            self._treat_batch(batch, summary)
        summary.seconds = self.clock() - started
        log.info("%s", summary.line())
        return summary

    def _treat_batch(self, batch: list[tuple[str, Any]], summary: BacklogSummary) -> None:
        """Fetch the batch's texts in one request, then handle and checkpoint each page."""
        categories = {page.title(): category for category, page in batch}
        for page in self.site.preloadpages([page for _, page in batch], groupsize=BATCH_PAGES):
            if self._stopping:
                return
            self._throttle()
            self.treat_page(page.title(), page.latest_revision_id, page.text, categories.get(page.title(), ""),
                            summary)

    def _throttle(self) -> None:
        """At most ``pages_per_min`` pages a minute."""
        if self.settings.pages_per_min <= 0:
            return
        gap = 60.0 / self.settings.pages_per_min
        now = self.clock()
        if self._last_page is not None and now - self._last_page < gap:
            self.sleep(gap - (now - self._last_page))
        self._last_page = self.clock()

    def treat_page(self, title: str, revision: int, text: str, category: str, summary: BacklogSummary) -> str | None:
        """Submit one Check with the page's tagged claims; returns its id, None when it has none."""
        found = find_tagged(text, title, self.settings.aliases)
        summary.pages += 1
        summary.skipped.update(found.skipped)
        tagged = [t for t in found.claims if t.template in self.settings.templates]
        check_id = None
        if not tagged:
            summary.no_tag += 1
            log.info("no readable tag in %s r%d (skipped: %s)", title, revision, dict(found.skipped) or "none")
        else:
            claims = [t.claim(title, category=self.settings.categories.get(t.template, category)) for t in tagged]
            record, enqueued = self.submit(CheckRequest(wiki=self.wiki, title=title, revision=revision,
                                                        origin=Origin.BACKLOG, claims=claims,
                                                        lead=read_lead(text, title)))
            summary.claims += len(tagged)
            summary.cited += sum(t.cited for t in tagged)
            summary.check_ids.append(record.id)
            summary.submitted += enqueued
            summary.known += not enqueued
            check_id = record.id
            log.info("%s %s r%d: %d tagged claims -> %s", "submitted" if enqueued else "already submitted",
                     title, revision, len(tagged), record.id)
        self.checkpoint.mark(title, revision)
        return check_id

    def stop(self, *_args: object) -> None:
        """Finish the page in hand, keep the checkpoint and end the run."""
        self._stopping = True
