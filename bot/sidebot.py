"""Side's citation bot: checks the citations that new edits add, and reports weak ones.

It follows the wiki's recent changes (article namespace, no bot edits, no reverts), finds the
citations each edit added (``side.extract.wikitext.added_citations`` on the old and new wikitext),
submits one Check per revision to the results store and the queue, where a worker scores each
citation against its source. Finished checks appear on the dashboard; citations found not
supported at the high-precision operating point may also be reported in a new talk-page
section, under the rules in ``bot/README.md`` (run page, {{bots}}/{{nobots}}/optout, daily
cap, cooldown, never the same suggestion twice). By default it is a dry run: it prints each section it would
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

-backlog            Backlog mode: read the tracking categories of maintenance tags
                    ({{failed verification}}, {{citation needed}}...; bot.backlog_templates and
                    bot.backlog_categories), submit a Check per page with its tagged claims
                    (origin backlog, shown on the dashboard's Backlog view), and exit. Resumes
                    after the pages done (bot.backlog_checkpoint, or var/backlog-WIKI.json).
                    It never edits the wiki and posts nothing, so it takes no -post.

-templates:A,B      With -backlog: only these tags (names or redirects, e.g. fv,cn).

-maxpages:N         With -backlog: read at most N new pages this run (default:
                    bot.backlog_max_pages).

-help               This text; -help:global also lists pywikibot's global options.

Global pywikibot options apply too, as in any pywikibot script (pywikibot.handle_args), among
them -simulate (nothing is written to the wiki, even with -post: pywikibot simulates the talk-
page saves; checks still go to the store and queue), -user:NAME, -site:FAMILY:CODE and
-dir:PYWIKIBOT_DIR. Settings come from side.toml's [bot] section and SIDE_BOT_* variables.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.backlog import BacklogBot, BacklogCheckpoint, BacklogSettings, Submit, backlog_checkpoint_path
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
from bot.limits import CRASHED_TWICE, UNREADABLE, RevisionLimits, RevisionSkipped, revision_claims
from bot.options import (
    SideBotOptions,
    UsageError,
    handle_global_args,
    is_own,
    one_line_help,
    parse_options,
    print_help,
    wants_help,
)
from service.store import CheckRequest, Origin, Store
from side.config import Config
from side.errors import ConfigError, SideError
from side.extract.lead import read_lead

if TYPE_CHECKING:
    from pywikibot.site import APISite

    from bot.reporter import Reporter

log = logging.getLogger(__name__)

#: Changes whose revisions are fetched in one batch.
BATCH_CHANGES = 25
#: Longest wait between retries after errors (API down, maxlag past pywikibot's own retries).
MAX_BACKOFF_S = 300.0
EXIT_USAGE = 2


class CitationBot:
    """Follows recent changes and submits one Check per revision that adds citations."""

    def __init__(self, site: APISite, feed: ChangeFeed, store: Store, submit: Submit, checkpoints: CheckpointFile,
                 wiki: str, reporter: Reporter | None = None, poll_s: float = 10.0,
                 namespaces: tuple[int, ...] = (0,), limits: RevisionLimits | None = None) -> None:
        self.site = site
        self.feed = feed
        self.store = store
        self.submit = submit
        self.checkpoints = checkpoints
        self.wiki = wiki
        self.reporter = reporter
        self.poll_s = poll_s
        self.namespaces = namespaces
        self.limits = limits or RevisionLimits()
        self.own_user = site.username() or ""
        self.checkpoint: Checkpoint = checkpoints.load(wiki)
        self.counter: Counter[str] = Counter()
        self._stopping = False

    # -- one revision ------------------------------------------------------------------------

    def skip(self, change: Change, reason: str, detail: str) -> None:
        """Count a revision the bot will not read, with its reason, for the run summary."""
        self.counter[f"skipped: {reason}"] += 1
        log.warning("skip %s r%d: %s (%s)", change.title, change.revision, reason, detail)

    def too_large(self, change: Change) -> bool:
        """Whether the change's revisions are over the size cap by the sizes the feed gave."""
        try:
            self.limits.check_sizes(change.new_size, change.old_size, downloaded=False)
        except RevisionSkipped as skipped:
            self.skip(change, skipped.reason, skipped.detail)
            return True
        return False

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
        try:
            claims = revision_claims(old.text if old else "", new.text, new.title, self.limits)
            lead = read_lead(new.text, new.title) if claims else None
        except RevisionSkipped as skipped:
            self.skip(change, skipped.reason, skipped.detail)
            return None
        except (MemoryError, RecursionError) as exc:  # the revision's fault: retrying would fail again
            self.skip(change, UNREADABLE, f"{type(exc).__name__} while reading it")
            return None
        if not claims:
            self.counter["no citation"] += 1
            return None
        record, enqueued = self.submit(CheckRequest(wiki=self.wiki, title=new.title, revision=change.revision,
                                                parent_revision=change.parent_revision or None, origin=Origin.BOT,
                                                claims=list(claims), lead=lead))
        if enqueued:
            self.counter["submitted"] += 1
            log.info("submitted %s r%d: %d new citations -> %s", new.title, change.revision, len(claims), record.id)
        else:
            self.counter["known"] += 1
            log.info("already submitted %s r%d (%s, %s)", new.title, change.revision, record.id, record.status)
        return record.id

    def treat_batch(self, changes: list[Change]) -> None:
        """Fetch the texts of a batch of changes at once, then handle and checkpoint each in order.

        Revisions over the size cap are not downloaded. Before a change is read, the checkpoint
        records it as in progress; a change that was in progress when the bot died
        ``MAX_ATTEMPTS`` times is skipped ("crashed twice") instead of read again.
        """
        wanted: dict[int, Change] = {}
        for change in changes:
            reason = skip_reason(change, self.namespaces, self.own_user)
            if reason:
                self.counter["skipped"] += 1
                log.debug("skip rc %d %s: %s", change.rcid, change.title, reason)
            elif not self.too_large(change):
                wanted[change.rcid] = change
        sizes = {r: n for c in wanted.values() for r, n in ((c.revision, c.new_size), (c.parent_revision, c.old_size))}
        texts = fetch_revisions(self.site, list(sizes), sizes) if sizes else {}
        for change in changes:
            check_id = self.treat_started(change, texts) if change.rcid in wanted else None
            checkpoint = self.checkpoint.advance(change.position)
            if check_id and self.reporter is not None:
                checkpoint = checkpoint.add_pending(check_id)
            self.checkpoint = checkpoint
            self.checkpoints.save(checkpoint)
            self.counter["handled"] += 1

    def treat_started(self, change: Change, texts: dict[int, RevisionText]) -> str | None:
        """:meth:`treat_change`, recorded durably as in progress first (the poison-revision rule)."""
        earlier = self.checkpoint.earlier_attempt(change.rcid, change.revision)
        if earlier is not None and earlier.crashed_out:
            self.skip(change, CRASHED_TWICE, f"the bot died {earlier.attempts} times while handling it")
            return None
        before = self.checkpoint
        self.checkpoint = before.attempt(change.rcid, change.revision)
        self.checkpoints.save(self.checkpoint)
        try:
            return self.treat_change(change, texts)
        except Exception:
            # an error the loop retries (Redis, the store) is no crash: only a dead process leaves
            # this attempt recorded
            self.checkpoint = before
            self.checkpoints.save(before)
            raise

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

def apply_options(config: Config, options: SideBotOptions) -> Config:
    """Command-line options over the [bot] settings."""
    bot, opt = config.bot, options.opt
    changes = {k: v for k, v in (("wiki", opt.wiki), ("api_url", opt.api), ("checkpoint", opt.checkpoint),
                                 ("poll_interval_s", opt.poll)) if v is not None}
    if opt.api and not opt.wiki:
        changes.setdefault("wiki", "local" if bot.wiki == "enwiki" else bot.wiki)
    if opt.stream:
        changes["stream"] = True
    changes["dry_run"] = not opt.post
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


def build_backlog_bot(config: Config, options: SideBotOptions) -> BacklogBot:
    """The backlog mode's bot: the tags' tracking categories, the store and queue, its checkpoint."""
    from bot.site import open_site

    opt, bot = options.opt, config.bot
    if opt.post:
        raise UsageError("-backlog posts nothing (results go to the dashboard), so it takes no -post")
    for name in ("once", "wait", "limit", "start", "stream", "streamurl", "poll", "noreport"):
        if opt[name] != SideBotOptions.available_options[name]:
            raise UsageError(f"-{name} is for following recent changes, not for -backlog")
    templates = [t for t in opt.templates.split(",") if t.strip()] if opt.templates else None
    settings = BacklogSettings.from_config(bot, templates, opt.maxpages)
    site = open_site(site_spec(config), login=True)
    store = Store.open(config.database_url)
    path = backlog_checkpoint_path(bot.backlog_checkpoint, bot.wiki, config.var_dir)
    log.info("backlog of %s on %s: %s, at most %d pages", ", ".join(settings.templates), bot.wiki,
             ", ".join(settings.category_list()), settings.max_pages)
    return BacklogBot(site, make_submit(config, store), BacklogCheckpoint.load(path, bot.wiki), bot.wiki, settings)


def _run_backlog(bot: BacklogBot) -> int:
    try:
        bot.run()
    except KeyboardInterrupt:
        log.info("interrupted; %d pages done so far", len(bot.checkpoint.done))
        return 130
    except SideError as exc:
        print(f"side-bot: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def build_bot(config: Config, options: SideBotOptions, out=None) -> CitationBot | BacklogBot:
    """Open the site, the store and the queue, and assemble the bot (after ``handle_args``)."""
    from bot.policy import report_threshold
    from bot.reporter import Reporter
    from bot.site import open_site

    if options.opt.backlog:
        return build_backlog_bot(config, options)
    bot = config.bot
    site = open_site(site_spec(config), login=True)
    store = Store.open(config.database_url)
    feed = (EventStreamFeed(site, url=options.opt.streamurl, wait_s=bot.poll_interval_s) if bot.stream
            else RecentChangesFeed(site))
    reporter = None
    if not options.opt.noreport:
        threshold = report_threshold(bot.report_threshold)
        reporter = Reporter(site, store, bot, threshold, config.service.public_url, post=not bot.dry_run, out=out)
        posting = "posting, simulated by pywikibot (-simulate)" if reporter.simulate else "posting"
        point = ("the checks' own (not supported and reportable)" if threshold is None
                 else f"not supported with support under {threshold:.3f} (bot.report_threshold)")
        log.info("reporting citations %s; %s", point,
                 posting if not bot.dry_run else "dry run (printing what would be posted)")
    checkpoint = checkpoint_path(bot.checkpoint, bot.wiki, config.var_dir)
    return CitationBot(site, feed, store, make_submit(config, store), CheckpointFile(checkpoint), bot.wiki,
                       reporter=reporter, poll_s=bot.poll_interval_s, limits=RevisionLimits.from_config(bot))


def prepare(argv: list[str]) -> tuple[Config, SideBotOptions]:
    """Settings, then pywikibot's global options, then a strict check of what is left.

    The site must be pywikibot's default before ``handle_args`` (which checks it), and the
    bot's own options say which site that is, so they are read first.
    """
    from bot.site import configure_pywikibot
    from side.config import load_config

    options = parse_options(a for a in argv if is_own(a))
    config = apply_options(load_config(options.opt.sideconfig), options)
    configure_pywikibot(site_spec(config))
    unknown = [a for a in handle_global_args(argv) if not is_own(a)]
    if unknown:
        raise UsageError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}")
    return config, options


def _configure_logging() -> None:
    level = os.environ.get("SIDE_BOT_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("urllib3", "trafilatura", "htmldate", "charset_normalizer", "rq"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(*args: str) -> int:
    """Console entry point (``side-bot``); pywikibot's global options are handled too."""
    argv = list(args) if args else sys.argv[1:]
    which = wants_help(argv)
    if which is not None:
        print_help(__name__, which)
        return 0
    _configure_logging()
    try:
        config, options = prepare(argv)
        bot = build_bot(config, options)
    except UsageError as exc:
        print(f"side-bot: error: {one_line_help(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit:  # handle_args refused -site/-family/-code, and said why in one line
        return EXIT_USAGE
    except SideError as exc:
        print(f"side-bot: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    signal.signal(signal.SIGTERM, bot.stop)
    opt = options.opt
    if isinstance(bot, BacklogBot):
        return _run_backlog(bot)
    try:
        bot.run(once=opt.once, wait_s=opt.wait, limit=opt.limit, start=opt.start)
    except KeyboardInterrupt:
        log.info("interrupted; checkpoint at %s", bot.checkpoint.position)
        return 130
    except SideError as exc:
        print(f"side-bot: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
