"""Fetch many cited sources politely, and go on after a kill where the last run stopped.

``side index build --dump`` reads every source a wiki cites: hundreds of thousands of URLs,
many on the same few hosts. Fetching them is only acceptable if it is polite, and only
practical if an interrupted run need not start over:

* **robots.txt** of every origin is read once per run (through the same guarded fetcher as any
  page) and honoured for ``fetch.user_agent``, ``Crawl-delay`` included (up to
  :data:`MAX_CRAWL_DELAY_S`). Protego reads it as RFC 9309 says: ``*`` and ``$`` in paths, the
  longest match deciding between Allow and Disallow. A robots.txt that is missing (4xx) allows
  everything, and one that cannot be read (5xx, no answer) forbids everything: those URLs are
  tried again by the next run.
* **one host at a time**: :class:`HostPacer` keeps ``crawl.host_interval_s`` seconds between
  the starts of two requests to one host, robots.txt included, while up to
  ``crawl.concurrency`` threads fetch from different hosts. URLs are taken round-robin by host,
  so that the threads are not all waiting on one large site.
* **resumable**: :class:`CrawlState` is a SQLite file holding every URL of the dump with its
  outcome, and the text read from each readable page. A URL is recorded as soon as its fetch
  ends, so a rerun after a kill fetches only what was neither done nor refused; a transient
  failure (a timeout, HTTP 503) is tried again by the next run.

A page is indexed only when Side could check a claim against it: the cannot-check assessment
(:func:`side.sources.states.assess_source`) keeps paywall teasers, soft 404s, walls and shells
out of the evidence index.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from side.config import CrawlConfig, FetchConfig
from side.errors import InputError, SourceFetchError
from side.extract.dump import ARTICLE_NAMESPACE, CitedUrl, cited_urls, iter_pages
from side.sources.fetch import Source, download, fetch_source
from side.sources.states import assess_error, assess_source

__all__ = [
    "MAX_CRAWL_DELAY_S", "CrawlStatus", "CrawledPage", "Outcome", "CrawlReport", "HostPacer", "RobotsRules",
    "product_token", "RobotsCache", "CrawlState", "visit", "crawl",
]

log = logging.getLogger(__name__)

#: The longest robots.txt ``Crawl-delay`` honoured (seconds); a longer one would stall a thread
#: for hours, so it is cut to this.
MAX_CRAWL_DELAY_S = 60.0


class CrawlStatus(StrEnum):
    """What became of one URL. ``pending`` and ``retry`` are fetched by the next run."""

    PENDING = "pending"
    INDEXED = "indexed"
    #: Read, but Side could not check a claim against it (paywall, soft 404...): not indexed.
    UNREADABLE = "unreadable"
    #: robots.txt forbids it: never requested.
    DISALLOWED = "disallowed"
    FAILED = "failed"
    RETRY = "retry"


@dataclass(frozen=True)
class CrawledPage:
    """A readable page as the crawl read it: the cited URL and the text extracted from it."""

    key: str
    url: str
    title: str
    text: str
    sentences: tuple[str, ...]
    fetched_at: str


@dataclass(frozen=True)
class Outcome:
    """The end of one URL's visit: its status, why (for all but ``indexed``), and the source read."""

    status: CrawlStatus
    reason: str = ""
    source: Source | None = None


@dataclass(frozen=True)
class CrawlReport:
    """What a run did: URLs visited now, by status, and the state's totals after it."""

    visited: Counter[str]
    totals: Counter[str]

    def describe(self) -> str:
        now = ", ".join(f"{n} {s}" for s, n in sorted(self.visited.items())) or "nothing"
        left = self.totals[CrawlStatus.PENDING] + self.totals[CrawlStatus.RETRY]
        return f"fetched {sum(self.visited.values())} sources ({now}); {left} left for a later run"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _host(url: str) -> str:
    return urlsplit(url).netloc.lower()


class HostPacer:
    """Spaces requests to one host at least ``interval_s`` apart (a per-host ``Crawl-delay`` may
    lengthen it). Each caller reserves the host's next free slot under a lock and sleeps outside
    it, so threads waiting for one host never hold up another."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = max(0.0, interval_s)
        self._clock, self._sleep = clock, sleep
        self._next: dict[str, float] = {}
        self._intervals: dict[str, float] = {}
        self._lock = threading.Lock()

    def slow_down(self, host: str, interval_s: float) -> None:
        """Keep at least ``interval_s`` between requests to ``host`` (a robots.txt Crawl-delay)."""
        with self._lock:
            self._intervals[host] = max(self.interval_s, interval_s)

    def wait(self, host: str) -> float:
        """Sleep until ``host`` may be asked again; returns the slot's time on the clock."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(host, now))
            self._next[host] = slot + self._intervals.get(host, self.interval_s)
        if slot > now:
            self._sleep(slot - now)
        return slot


@dataclass(frozen=True)
class RobotsRules:
    """One origin's robots.txt: its parsed rules, or why it could not be read (then nothing is allowed)."""

    parser: Protego | None
    error: str = ""

    def allows(self, user_agent: str, url: str) -> bool:
        """Whether the group of ``user_agent``'s product token (``SideBot`` of ``SideBot/0.1 (...)``,
        matched case-insensitively as RFC 9309 says) allows ``url``."""
        return self.parser is not None and self.parser.can_fetch(url, product_token(user_agent))


def product_token(user_agent: str) -> str:
    """The product token robots.txt groups name: ``SideBot`` of ``SideBot/0.1 (citation verification)``."""
    return user_agent.split("/")[0].strip()


class RobotsCache:
    """robots.txt per origin, each read once (one thread reads it while the others wait)."""

    def __init__(self, config: FetchConfig, pacer: HostPacer) -> None:
        self.config, self.pacer = config, pacer
        self._rules: dict[str, RobotsRules] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def rules(self, url: str) -> RobotsRules:
        origin = _origin(url)
        with self._lock:
            lock = self._locks.setdefault(origin, threading.Lock())
        with lock:
            if origin not in self._rules:
                self._rules[origin] = self._read(origin)
            return self._rules[origin]

    def _read(self, origin: str) -> RobotsRules:
        self.pacer.wait(_host(origin))
        try:
            body = download(origin + "/robots.txt", self.config, types=None).data
        except SourceFetchError as exc:
            if exc.status is not None and 400 <= exc.status < 500 and exc.status != 429:
                return RobotsRules(Protego.parse(""))  # no robots.txt: everything is allowed
            log.info("robots.txt of %s could not be read: %s", origin, exc)
            return RobotsRules(None, " ".join(str(exc).split())[:200])
        parser = Protego.parse(body.decode("utf-8", errors="replace"))
        delay = parser.crawl_delay(product_token(self.config.user_agent))
        if delay:
            self.pacer.slow_down(_host(origin), min(float(delay), MAX_CRAWL_DELAY_S))
        return RobotsRules(parser)


def visit(url: str, config: FetchConfig, robots: RobotsCache, pacer: HostPacer) -> Outcome:
    """Fetch ``url`` if robots.txt allows it, and say whether its page can be indexed."""
    rules = robots.rules(url)
    if rules.parser is None:
        return Outcome(CrawlStatus.RETRY, f"robots.txt of {_origin(url)} could not be read: {rules.error}")
    if not rules.allows(config.user_agent, url):
        return Outcome(CrawlStatus.DISALLOWED, f"robots.txt of {_origin(url)} disallows it")
    pacer.wait(_host(url))
    try:
        source = fetch_source(url, config)
    except SourceFetchError as exc:
        status = CrawlStatus.RETRY if exc.transient else CrawlStatus.FAILED
        return Outcome(status, assess_error(exc).describe())
    assessment = assess_source(source)
    if not assessment.readable:
        return Outcome(CrawlStatus.UNREADABLE, assessment.describe())
    return Outcome(CrawlStatus.INDEXED, source=source)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    key TEXT PRIMARY KEY, url TEXT NOT NULL, fetch_url TEXT NOT NULL, host TEXT NOT NULL,
    article TEXT NOT NULL, cite_title TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    reason TEXT NOT NULL DEFAULT '', title TEXT NOT NULL DEFAULT '', text TEXT, sentences TEXT,
    fetched_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS urls_status ON urls (status);
CREATE TABLE IF NOT EXISTS dumps (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
"""

#: Commit the URLs found while scanning after this many pages.
_SCAN_BATCH = 500


class CrawlState:
    """The crawl's SQLite file: every cited URL, its status, and the text of readable pages.

    Used from one thread (the crawl's): the fetching threads return outcomes, which are
    recorded and committed one by one, so a kill loses at most the fetches in flight.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:  # a folder, or a file that is no SQLite database
            raise InputError(f"the crawl's state {self.path} cannot be opened as SQLite ({exc}); "
                             "name another file (crawl.state)") from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, cited: Iterable[CitedUrl]) -> int:
        """Record URLs not seen before as pending; returns how many were new."""
        before = self._db.total_changes
        self._db.executemany(
            "INSERT OR IGNORE INTO urls (key, url, fetch_url, host, article, cite_title) VALUES (?, ?, ?, ?, ?, ?)",
            [(c.key, c.url, c.fetch_url, _host(c.fetch_url), c.article, c.title) for c in cited])
        return self._db.total_changes - before

    def scan(self, dump: str | Path) -> int:
        """Record every URL the dump's articles cite; a dump scanned before (same path, size and
        modification time) is not read again. Returns the URLs new to the state."""
        dump = Path(dump)
        stat = dump.stat() if dump.is_file() else None
        if stat is not None and self._db.execute(
                "SELECT 1 FROM dumps WHERE path = ? AND size = ? AND mtime_ns = ?",
                (str(dump.resolve()), stat.st_size, stat.st_mtime_ns)).fetchone():
            log.info("%s was scanned before; fetching what is left", dump)
            return 0
        added = 0
        for number, page in enumerate(iter_pages(dump), 1):
            if page.namespace == ARTICLE_NAMESPACE and page.text:
                added += self.add(cited_urls(page))
            if number % _SCAN_BATCH == 0:
                self._db.commit()
        assert stat is not None  # iter_pages refused a missing file
        self._db.execute("INSERT OR REPLACE INTO dumps VALUES (?, ?, ?)",
                         (str(dump.resolve()), stat.st_size, stat.st_mtime_ns))
        self._db.commit()
        return added

    def todo(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(key, fetch URL) of the URLs still to fetch, round-robin by host."""
        rows = self._db.execute(
            "SELECT key, fetch_url FROM (SELECT key, fetch_url, rowid AS r, ROW_NUMBER() OVER "
            "(PARTITION BY host ORDER BY rowid) AS turn FROM urls WHERE status IN (?, ?)) "
            "ORDER BY turn, r LIMIT ?",
            (CrawlStatus.PENDING.value, CrawlStatus.RETRY.value, -1 if limit is None else limit))
        return [(str(k), str(u)) for k, u in rows]

    def record(self, key: str, outcome: Outcome) -> None:
        source = outcome.source
        if source is None:
            self._db.execute("UPDATE urls SET status = ?, reason = ? WHERE key = ?",
                             (outcome.status.value, outcome.reason, key))
        else:
            self._db.execute(
                "UPDATE urls SET status = ?, reason = '', title = ?, text = ?, sentences = ?, fetched_at = ? "
                "WHERE key = ?", (outcome.status.value, source.title, source.text,
                                  json.dumps(list(source.sentences), ensure_ascii=False), source.fetched_at, key))
        self._db.commit()

    def totals(self) -> Counter[str]:
        rows = self._db.execute("SELECT status, COUNT(*) FROM urls GROUP BY status")
        return Counter({str(status): int(count) for status, count in rows})

    def statuses(self) -> dict[str, tuple[str, str]]:
        """URL as cited -> (status, reason), for reports and tests."""
        return {str(u): (str(s), str(r)) for u, s, r in self._db.execute("SELECT url, status, reason FROM urls")}

    def pages(self) -> Iterator[CrawledPage]:
        """The readable pages read so far, in the order their URLs were found."""
        rows = self._db.execute(
            "SELECT key, url, title, cite_title, text, sentences, fetched_at FROM urls WHERE status = ? "
            "ORDER BY rowid", (CrawlStatus.INDEXED.value,))
        for key, url, title, cite_title, text, sentences, fetched_at in rows:
            yield CrawledPage(key, url, title or cite_title or url, text or "",
                              tuple(json.loads(sentences or "[]")), fetched_at)


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="fetching cited sources", unit="url", disable=None if enabled else True)


def crawl(state: CrawlState, fetch: FetchConfig, settings: CrawlConfig, limit: int | None = None,
          progress: bool = True) -> CrawlReport:
    """Visit the state's pending URLs (at most ``limit``), recording each outcome as it ends."""
    todo = state.todo(limit)
    pacer = HostPacer(settings.host_interval_s)
    robots = RobotsCache(fetch, pacer)
    visited: Counter[str] = Counter()
    window = max(1, settings.concurrency) * 2
    queue = iter(todo)
    with ThreadPoolExecutor(max(1, settings.concurrency), thread_name_prefix="crawl") as pool, \
            _progress(len(todo), progress) as bar:
        running: dict[Future[Outcome], str] = {}
        while True:
            for key, url in queue:
                running[pool.submit(visit, url, fetch, robots, pacer)] = key
                if len(running) >= window:
                    break
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                outcome = future.result()
                state.record(running.pop(future), outcome)
                visited[outcome.status.value] += 1
                bar.update()
    return CrawlReport(visited, state.totals())
