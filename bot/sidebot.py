"""Side's citation bot: checks the citations that new edits add, and reports weak ones.

It follows the wiki's recent changes (article namespace, no bot edits, no reverts), finds the
citations each edit added (``side.extract.wikitext.added_citations`` on the old and new wikitext),
submits one Check per revision to the results store and the queue, where a worker scores each
citation against its source. Finished checks appear on the dashboard; citations whose score
crosses the high-precision threshold may also be reported in a new talk-page section, under
the rules in ``bot/README.md`` (run page, {{bots}}/{{nobots}}/optout, daily cap, cooldown,
never the same suggestion twice). By default it is a dry run: it prints each section it would
post and posts nothing.

Usage::

    side-bot [options]                 # or: python -m bot.sidebot [options]

These options are specific to this bot:

-post               Really post talk-page reports (default: dry run, print them). Posting
                    also needs the wiki in bot.talk_report_wikis and the run page set to yes.

-once               Handle the recent changes there are now, report what has finished, exit.

-wait:SECONDS       With -once: wait up to SECONDS for the submitted checks to finish and be
                    reported before exiting (default 0).

-limit:N            Stop after handling N recent changes.

-start:TIMESTAMP    On a first run (no checkpoint yet) start at this time (ISO 8601, e.g.
                    2026-11-22T00:00:00Z) instead of at the newest change.

-checkpoint:FILE    Where the last handled change is kept (default: bot.checkpoint, or
                    var/bot-WIKI.json).

-wiki:ID            Wiki id stored with each check, e.g. enwiki (default: bot.wiki).

-api:URL            Action API of a wiki that pywikibot has no family for, e.g. a local
                    MediaWiki (http://127.0.0.1:8080/api.php); default: bot.site.

-stream             Follow Wikimedia's EventStreams instead of polling recentchanges.

-streamurl:URL      With -stream: read this EventStreams-compatible URL instead.

-poll:SECONDS       Seconds between two polls of recent changes (default: bot.poll_interval_s).

-noreport           Submit checks (dashboard) but never compose talk-page reports.

-sideconfig:FILE    Side's TOML configuration (default: $SIDE_CONFIG or ./side.toml).

Global pywikibot options apply too, among them -simulate (nothing is written to the wiki,
even with -post; checks still go to the store and queue), -user:NAME, -site:FAMILY:CODE and
-dir:PYWIKIBOT_DIR. Settings come from side.toml's [bot] section and SIDE_BOT_* variables.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.changes import (
    Change,
    ChangeFeed,
    EventStreamFeed,
    RecentChangesFeed,
    RevisionText,
    fetch_revisions,
    is_revert,
    skip_reason,
)
from bot.checkpoint import Checkpoint, CheckpointError, CheckpointFile, checkpoint_path
from service.store import Check, CheckRequest, Origin, Store
from side.config import Config
from side.errors import ConfigError, InputError, SideError
from side.extract.wikitext import added_citations

if TYPE_CHECKING:
    from pywikibot.site import APISite

    from bot.reporter import Reporter

log = logging.getLogger(__name__)

#: Changes whose revisions are fetched in one batch.
BATCH_CHANGES = 25
#: Longest wait between retries after errors (API down, maxlag past pywikibot's own retries).
MAX_BACKOFF_S = 300.0
EXIT_USAGE = 2

#: Submits a check: store row + queue job; returns the record and whether a job was queued.
Submit = Callable[[CheckRequest], tuple[Check, bool]]


@dataclass(frozen=True)
class BotOptions:
    """The bot's own command-line options (pywikibot's global ones are handled by pywikibot)."""

    post: bool = False
    once: bool = False
    wait_s: float = 0.0
    limit: int | None = None
    start: str | None = None
    checkpoint: str | None = None
    wiki: str | None = None
    api: str | None = None
    stream: bool = False
    stream_url: str | None = None
    poll_s: float | None = None
    report: bool = True
    sideconfig: str | None = None


def _number(name: str, value: str, kind: type) -> float | int:
    try:
        number = kind(value)
    except ValueError:
        raise InputError(f"-{name} needs a number, not {value!r}") from None
    if number < 0:
        raise InputError(f"-{name} must not be negative")
    return number


def parse_options(args: Iterable[str]) -> BotOptions:
    """Parse ``-name`` and ``-name:value`` options; unknown ones are errors."""
    flags = {"post": "post", "once": "once", "stream": "stream"}
    valued = {"start": "start", "checkpoint": "checkpoint", "wiki": "wiki", "api": "api", "streamurl": "stream_url",
              "sideconfig": "sideconfig"}
    options = BotOptions()
    for arg in args:
        name, sep, value = arg.lstrip("-").partition(":")
        if not arg.startswith("-"):
            raise InputError(f"unexpected argument {arg!r} (options start with -)")
        if name in flags and not sep:
            options = replace(options, **{flags[name]: True})
        elif name == "noreport" and not sep:
            options = replace(options, report=False)
        elif name in valued and sep and value:
            options = replace(options, **{valued[name]: value})
        elif name == "wait" and sep:
            options = replace(options, wait_s=float(_number(name, value, float)))
        elif name == "poll" and sep:
            options = replace(options, poll_s=float(_number(name, value, float)))
        elif name == "limit" and sep:
            options = replace(options, limit=int(_number(name, value, int)))
        elif name in flags or name in valued or name in {"noreport", "wait", "poll", "limit"}:
            raise InputError(f"option -{name} " + ("takes no value" if sep else f"needs a value (-{name}:VALUE)"))
        else:
            raise InputError(f"unknown option {arg!r} (see side-bot -help)")
    return options


class CitationBot:
    """Follows recent changes and submits one Check per revision that adds citations."""

    def __init__(self, site: APISite, feed: ChangeFeed, store: Store, submit: Submit, checkpoints: CheckpointFile,
                 wiki: str, reporter: Reporter | None = None, poll_s: float = 10.0,
                 namespaces: tuple[int, ...] = (0,)) -> None:
        self.site = site
        self.feed = feed
        self.store = store
        self.submit = submit
        self.checkpoints = checkpoints
        self.wiki = wiki
        self.reporter = reporter
        self.poll_s = poll_s
        self.namespaces = namespaces
        self.own_user = site.username() or ""
        self.checkpoint: Checkpoint = checkpoints.load(wiki)
        self.counter: Counter[str] = Counter()
        self._stopping = False

    # -- one revision ------------------------------------------------------------------------

    def treat_change(self, change: Change, texts: dict[int, RevisionText]) -> str | None:
        """Submit the citations a change added; returns the check id, or None when nothing was added."""
        new = texts.get(change.revision)
        if new is None:
            self.counter["gone"] += 1
            log.info("skip %s r%d: revision gone (page deleted or text hidden)", change.title, change.revision)
            return None
        old = texts.get(change.parent_revision) if change.parent_revision else None
        if change.parent_revision and old is None:
            self.counter["gone"] += 1
            log.info("skip %s r%d: parent revision %d is hidden", change.title, change.revision,
                     change.parent_revision)
            return None
        if is_revert("", new.tags):
            self.counter["revert"] += 1
            return None
        claims = added_citations(old.text if old else "", new.text, new.title)
        if not claims:
            self.counter["no citation"] += 1
            return None
        record, enqueued = self.submit(CheckRequest(wiki=self.wiki, title=new.title, revision=change.revision,
                                                parent_revision=change.parent_revision or None, origin=Origin.BOT,
                                                claims=list(claims)))
        if enqueued:
            self.counter["submitted"] += 1
            log.info("submitted %s r%d: %d new citations -> %s", new.title, change.revision, len(claims), record.id)
        else:
            self.counter["known"] += 1
            log.info("already submitted %s r%d (%s, %s)", new.title, change.revision, record.id, record.status)
        return record.id

    def treat_batch(self, changes: list[Change]) -> None:
        """Fetch the texts of a batch of changes at once, then handle and checkpoint each in order."""
        wanted = {}
        for change in changes:
            reason = skip_reason(change, self.namespaces, self.own_user)
            if reason:
                self.counter["skipped"] += 1
                log.debug("skip rc %d %s: %s", change.rcid, change.title, reason)
            else:
                wanted[change.rcid] = change
        revisions = [r for c in wanted.values() for r in (c.revision, c.parent_revision)]
        texts = fetch_revisions(self.site, revisions) if revisions else {}
        for change in changes:
            check_id = self.treat_change(change, texts) if change.rcid in wanted else None
            checkpoint = self.checkpoint.advance(change.position)
            if check_id and self.reporter is not None:
                checkpoint = checkpoint.add_pending(check_id)
            self.checkpoint = checkpoint
            self.checkpoints.save(checkpoint)
            self.counter["handled"] += 1

    # -- the loop -----------------------------------------------------------------------------

    def start_position(self, start: str | None) -> None:
        """On a first run, begin at ``start`` or at the newest change (nothing old is replayed)."""
        if self.checkpoint.position is not None or start:
            return
        latest = self.feed.latest()
        self.checkpoint = replace(self.checkpoint, position=latest)
        self.checkpoints.save(self.checkpoint)
        log.info("first run on %s: starting after %s", self.wiki, latest)

    def poll(self, start: str | None = None, limit: int | None = None) -> int:
        """Handle every change available now (or up to ``limit``); returns how many."""
        handled, batch = 0, []
        position = self.checkpoint.position
        for change in self.feed.changes_after(position, start if position is None else None):
            batch.append(change)
            if len(batch) >= BATCH_CHANGES or (limit is not None and handled + len(batch) >= limit):
                self.treat_batch(batch)
                handled, batch = handled + len(batch), []
                if (limit is not None and handled >= limit) or self._stopping:
                    return handled
        if batch:
            self.treat_batch(batch)
            handled += len(batch)
        return handled

    def report(self) -> None:
        if self.reporter is None or not self.checkpoint.pending:
            return
        finished = self.reporter.handle(self.checkpoint.pending)
        if finished:
            self.checkpoint = self.checkpoint.drop_pending(finished)
            self.checkpoints.save(self.checkpoint)

    def run(self, once: bool = False, wait_s: float = 0.0, limit: int | None = None, start: str | None = None) -> None:
        """Poll, submit and report until stopped (SIGTERM/SIGINT), or once."""
        self.start_position(start)
        backoff = self.poll_s or 1.0
        while not self._stopping:
            try:
                handled = self.poll(start, None if limit is None else limit - self.counter["handled"])
                self.report()
                backoff = self.poll_s or 1.0
            except (ConfigError, CheckpointError):
                raise
            except Exception as exc:  # API errors, timeouts, maxlag beyond pywikibot's retries, Redis, DB
                if once:
                    raise
                log.warning("poll failed (%s: %s); retrying in %.0f s", type(exc).__name__, exc, backoff)
                self._sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            if limit is not None and self.counter["handled"] >= limit:
                break
            if once:
                self._drain(wait_s)
                break
            if handled == 0:
                self._sleep(self.poll_s)
        log.info("stopping: %s", dict(self.counter))

    def _drain(self, wait_s: float) -> None:
        """With -once: keep reporting until nothing is pending or ``wait_s`` has passed."""
        deadline = time.monotonic() + wait_s
        while self.checkpoint.pending and time.monotonic() < deadline and not self._stopping:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
            self.report()

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._stopping and time.monotonic() < deadline:
            time.sleep(min(0.2, deadline - time.monotonic()))

    def stop(self, *_args) -> None:
        """Finish the change in hand, save the checkpoint and leave the loop."""
        self._stopping = True


# -- entry point ------------------------------------------------------------------------------

def apply_options(config: Config, options: BotOptions) -> Config:
    """Command-line options over the [bot] settings."""
    bot = config.bot
    changes = {k: v for k, v in (("wiki", options.wiki), ("api_url", options.api), ("checkpoint", options.checkpoint),
                                 ("poll_interval_s", options.poll_s)) if v is not None}
    if options.api and not options.wiki:
        changes.setdefault("wiki", "local" if bot.wiki == "enwiki" else bot.wiki)
    if options.stream:
        changes["stream"] = True
    changes["dry_run"] = not options.post
    return replace(config, bot=replace(bot, **changes))


def make_submit(config: Config, store: Store) -> Submit:
    """Store + queue through ``service.queue.submit`` (one job per check, job id = check id)."""
    from service.queue import get_queue, redis_connection, submit

    queue = get_queue(redis_connection(config.service.redis_url), config.service)
    return lambda new: submit(store, queue, new, config.service)


def site_spec(config: Config):
    from bot.site import SiteSpec

    bot = config.bot
    return SiteSpec(wiki=bot.wiki, site=bot.site, api_url=bot.api_url, user=bot.user, password_file=bot.password_file)


def build_bot(config: Config, options: BotOptions, out=None) -> CitationBot:
    """Open the site, the store and the queue, and assemble the bot (after ``handle_args``)."""
    from bot.policy import report_threshold
    from bot.reporter import Reporter
    from bot.site import open_site

    bot = config.bot
    site = open_site(site_spec(config), login=True)
    store = Store.open(config.database_url)
    feed = (EventStreamFeed(site, url=options.stream_url, wait_s=bot.poll_interval_s) if bot.stream
            else RecentChangesFeed(site))
    reporter = None
    if options.report:
        threshold = report_threshold(bot.report_threshold, config.verifier.model_dir or None)
        reporter = Reporter(site, store, bot, threshold, config.service.public_url, post=not bot.dry_run, out=out)
        log.info("report threshold %.3f; %s", threshold,
                 "posting" if not bot.dry_run else "dry run (printing what would be posted)")
    checkpoint = checkpoint_path(bot.checkpoint, bot.wiki, config.var_dir)
    return CitationBot(site, feed, store, make_submit(config, store), CheckpointFile(checkpoint), bot.wiki,
                       reporter=reporter, poll_s=bot.poll_interval_s)


#: The bot's own option names (everything else goes to pywikibot's handle_args).
OWN_OPTIONS = frozenset({"post", "once", "stream", "noreport", "wait", "poll", "limit", "start", "checkpoint",
                         "wiki", "api", "streamurl", "sideconfig"})


#: pywikibot's global options (``pywikibot.handle_args``), besides its numeric config settings.
GLOBAL_OPTIONS = frozenset({"help", "config", "dir", "site", "family", "code", "lang", "user", "putthrottle", "pt",
                            "log", "nolog", "cosmeticchanges", "cc", "simulate", "debug", "verbose", "v",
                            "daemonize", "maxlag"})


def is_global_option(arg: str) -> bool:
    """Whether pywikibot's ``handle_args`` takes this argument (so it is not a typo of ours)."""
    from pywikibot import config

    name = arg[1:].partition(":")[0] if arg.startswith("-") else ""
    setting = getattr(config, name, None)
    return name in GLOBAL_OPTIONS or (isinstance(setting, int) and not isinstance(setting, bool))


def prepare(argv: list[str]) -> tuple[Config, BotOptions]:
    """Settings, then pywikibot: the site must be pywikibot's default before ``handle_args``
    (which opens it); then the remaining arguments are the bot's own, checked strictly."""
    import pywikibot

    from bot.site import configure_pywikibot
    from side.config import load_config

    own = [a for a in argv if a.startswith("-") and a[1:].partition(":")[0] in OWN_OPTIONS]
    unknown = [a for a in argv if a not in own and not is_global_option(a)]
    if unknown:
        raise InputError(f"unknown option {unknown[0]!r} (see side-bot -help)")
    options = parse_options(own)
    config = apply_options(load_config(options.sideconfig), options)
    configure_pywikibot(site_spec(config))
    try:
        local_args = pywikibot.handle_args(argv, do_help=False)
    except (pywikibot.exceptions.Error, OSError) as exc:
        raise ConfigError(f"cannot open wiki {config.bot.wiki}: {type(exc).__name__}: {exc}") from exc
    return config, parse_options(local_args)


def _configure_logging() -> None:
    level = os.environ.get("SIDE_BOT_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("urllib3", "trafilatura", "htmldate", "charset_normalizer", "rq"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(*args: str) -> int:
    """Console entry point (``side-bot``); pywikibot's global options are handled too."""
    argv = list(args) if args else sys.argv[1:]
    if any(a in ("-help", "--help", "-h") for a in argv):
        print(__doc__)
        return 0
    os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")
    _configure_logging()
    try:
        config, options = prepare(argv)
        bot = build_bot(config, options)
    except SideError as exc:
        print(f"side-bot: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    signal.signal(signal.SIGTERM, bot.stop)
    try:
        bot.run(once=options.once, wait_s=options.wait_s, limit=options.limit, start=options.start)
    except KeyboardInterrupt:
        log.info("interrupted; checkpoint at %s", bot.checkpoint.position)
        return 130
    except SideError as exc:
        print(f"side-bot: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
