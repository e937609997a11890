"""Recent changes: which edits the bot looks at, in the wiki's order, and their texts.

Two feeds give the same :class:`Change` objects:

* :class:`RecentChangesFeed` polls ``list=recentchanges`` (any MediaWiki). It asks for the
  changes after a :class:`~bot.checkpoint.Position` with ``rccontinue=<ts>|<rcid + 1>`` and
  follows ``continue`` through every page, so nothing between two polls is skipped and nothing
  is returned twice. Filters run on the server (article namespace, no bot-flagged edits, edits
  and page creations only).
* :class:`EventStreamFeed` follows Wikimedia's EventStreams (``recentchange``) through
  ``pywikibot.comms.eventstreams``; a reader thread keeps the stream open while the bot works.

Reverts are skipped too: their tags (``mw-rollback``, ``mw-undo``, ``mw-manual-revert``) come
with the change, or with the revision when the stream did not carry them, and a revert restores
citations the article already had. :func:`fetch_revisions` then reads the old and new
wikitext of many revisions in one request.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from bot.checkpoint import Position

if TYPE_CHECKING:
    from pywikibot.site import APISite

log = logging.getLogger(__name__)

#: Change tags MediaWiki (1.36+) puts on reverting edits.
REVERT_TAGS = frozenset({"mw-rollback", "mw-undo", "mw-manual-revert"})
#: Edit summaries of reverts made by tools that do not tag them (Twinkle, Huggle, by hand).
REVERT_SUMMARY = re.compile(
    r"^\s*(?:reverted\b|undid revision\b|revert(?:ing|ed)? (?:to|edits?|vandalism)\b|rv[v]?\b|"
    r"rollback\b|\[\[(?:wp|wikipedia):(?:rvv|rv|revert)\b)", re.IGNORECASE)
#: Revisions per ``prop=revisions`` request (the API's limit for clients without apihighlimits).
REVISIONS_PER_REQUEST = 50
#: ... and bytes of wikitext per request, where the sizes are known: 50 revisions of 2 MiB would
#: be one 100 MiB answer, parsed whole.
REVISION_BYTES_PER_REQUEST = 8 * 1024 * 1024


@dataclass(frozen=True)
class Change:
    """One entry of the recent-changes log (an edit or a page creation)."""

    rcid: int
    timestamp: str
    type: str
    namespace: int
    title: str
    revision: int
    parent_revision: int
    user: str
    comment: str = ""
    bot: bool = False
    tags: tuple[str, ...] = ()
    #: Bytes of wikitext of the revision before the change and after it (0: not known).
    old_size: int = 0
    new_size: int = 0

    @property
    def position(self) -> Position:
        return Position(self.timestamp, self.rcid)

    @classmethod
    def from_recentchange(cls, entry: dict[str, Any]) -> Change:
        """From a ``list=recentchanges`` entry (formatversion 1 or 2)."""
        return cls(rcid=int(entry["rcid"]), timestamp=entry["timestamp"], type=entry["type"],
                   namespace=int(entry["ns"]), title=entry["title"], revision=int(entry.get("revid") or 0),
                   parent_revision=int(entry.get("old_revid") or 0), user=entry.get("user", ""),
                   comment=entry.get("comment", ""), bot=entry.get("bot") not in (None, False),
                   tags=tuple(entry.get("tags", ())), old_size=int(entry.get("oldlen") or 0),
                   new_size=int(entry.get("newlen") or 0))

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Change:
        """From an EventStreams ``recentchange`` event (unix ``timestamp``, ``revision.old/new``)."""
        revision = event.get("revision") or {}
        length = event.get("length") or {}
        stamp = datetime.fromtimestamp(int(event["timestamp"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return cls(rcid=int(event["id"]), timestamp=stamp, type=event["type"], namespace=int(event["namespace"]),
                   title=event["title"], revision=int(revision.get("new") or 0),
                   parent_revision=int(revision.get("old") or 0), user=event.get("user", ""),
                   comment=event.get("comment", ""), bot=bool(event.get("bot")), tags=tuple(event.get("tags", ())),
                   old_size=int(length.get("old") or 0), new_size=int(length.get("new") or 0))


def is_revert(comment: str, tags: Iterable[str]) -> bool:
    """Whether an edit undoes earlier ones (its tags, or a revert tool's edit summary)."""
    return bool(REVERT_TAGS.intersection(tags)) or bool(REVERT_SUMMARY.match(comment or ""))


def skip_reason(change: Change, namespaces: Iterable[int] = (0,), own_user: str = "") -> str | None:
    """Why the bot ignores a change, or None when it should look at it."""
    if change.type not in ("edit", "new"):
        return f"{change.type} entry"
    if change.namespace not in set(namespaces):
        return f"namespace {change.namespace}"
    if change.bot:
        return "bot edit"
    if own_user and change.user == own_user:
        return "own edit"
    if is_revert(change.comment, change.tags):
        return "revert"
    return None


class ChangeFeed(Protocol):
    """Where changes come from: polling (:class:`RecentChangesFeed`) or a stream (:class:`EventStreamFeed`)."""

    def latest(self) -> Position | None: ...

    def changes_after(self, position: Position | None, start: str | None = None) -> Iterator[Change]: ...


def _ts14(iso: str) -> str:
    """``2026-11-22T16:28:07Z`` -> ``20261122162807`` (rccontinue's timestamp form)."""
    return re.sub(r"[^0-9]", "", iso)[:14]


class RecentChangesFeed:
    """Polls ``list=recentchanges`` after a position, with continuation."""

    def __init__(self, site: APISite, namespaces: Iterable[int] = (0,), page_size: int = 500) -> None:
        self.site = site
        self.namespaces = tuple(namespaces)
        self.page_size = page_size
        self.requests = 0

    def _params(self) -> dict[str, str]:
        return {"action": "query", "list": "recentchanges", "rcdir": "newer", "rctype": "edit|new",
                "rcnamespace": "|".join(str(n) for n in self.namespaces), "rcshow": "!bot",
                "rcprop": "user|comment|flags|timestamp|title|ids|tags|sizes", "rclimit": str(self.page_size),
                "formatversion": "2"}

    def _submit(self, params: dict[str, str]) -> dict[str, Any]:
        from pywikibot.data import api

        self.requests += 1
        return api.Request(site=self.site, parameters=params, use_get=True).submit()

    def latest(self) -> Position | None:
        """The newest change of the wiki (any kind): where a first run starts."""
        data = self._submit({"action": "query", "list": "recentchanges", "rcprop": "timestamp|ids",
                             "rclimit": "1", "formatversion": "2"})
        entries = data.get("query", {}).get("recentchanges", [])
        return Position(entries[0]["timestamp"], int(entries[0]["rcid"])) if entries else None

    def changes_after(self, position: Position | None, start: str | None = None) -> Iterator[Change]:
        """Every change after ``position`` (or from ``start``, ISO 8601), oldest first, until now."""
        params = self._params()
        if position is not None:
            params["rccontinue"] = f"{_ts14(position.timestamp)}|{position.rcid + 1}"
        elif start:
            params["rcstart"] = start
        while True:
            data = self._submit(params)
            for entry in data.get("query", {}).get("recentchanges", []):
                change = Change.from_recentchange(entry)
                if position is None or change.position > position:
                    yield change
            if "continue" not in data:
                return
            params.update(data["continue"])


class EventStreamFeed:
    """Wikimedia EventStreams (``recentchange``), read by a thread into a queue.

    ``url`` points at another server speaking the same protocol (a local stand-in); by default
    pywikibot derives it from the site's family (``stream.wikimedia.org``).
    """

    def __init__(self, site: APISite, namespaces: Iterable[int] = (0,), url: str | None = None,
                 wait_s: float = 10.0) -> None:
        self.site = site
        self.namespaces = tuple(namespaces)
        self.url = url
        self.wait_s = wait_s
        self._queue: queue.Queue[Change | Exception] = queue.Queue(maxsize=10000)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def latest(self) -> Position | None:
        return RecentChangesFeed(self.site, self.namespaces).latest()

    def _stream(self, since: str | None):
        from pywikibot.comms.eventstreams import EventStreams

        kwargs: dict[str, Any] = {"site": self.site, "streams": "recentchange"}
        if self.url:
            kwargs["url"] = self.url + (f"?since={since}" if since else "")
        elif since:
            kwargs["since"] = since
        stream = EventStreams(**kwargs)
        stream.register_filter(wiki=self.site.dbName())  # enwiki; server_name may lack the port
        stream.register_filter(type=("edit", "new"), namespace=self.namespaces)
        stream.register_filter(ftype="none", bot=True)
        return stream

    def _read(self, since: str | None) -> None:
        try:
            for event in self._stream(since):
                if self._stop.is_set():
                    return
                self._queue.put(Change.from_event(event))
        except Exception as exc:  # noqa: BLE001 -- surfaced to the main loop, which backs off and reconnects
            self._queue.put(exc)

    def changes_after(self, position: Position | None, start: str | None = None) -> Iterator[Change]:
        """Changes after ``position`` that arrived so far, waiting up to ``wait_s`` for the first."""
        if self._thread is None or not self._thread.is_alive():
            since = position.timestamp if position else start
            self._thread = threading.Thread(target=self._read, args=(since,), name="eventstreams", daemon=True)
            self._thread.start()
        timeout: float | None = self.wait_s
        while True:
            try:
                item = self._queue.get(timeout=timeout) if timeout else self._queue.get_nowait()
            except queue.Empty:
                return
            timeout = None
            if isinstance(item, Exception):
                raise item
            if position is None or item.position > position:
                yield item

    def close(self) -> None:
        self._stop.set()


@dataclass(frozen=True)
class RevisionText:
    """The wikitext of one revision, under the page's current title (it may have moved)."""

    revision: int
    parent_revision: int
    title: str
    text: str
    tags: tuple[str, ...] = ()


def revision_batches(revisions: Iterable[int], sizes: dict[int, int] | None = None) -> list[list[int]]:
    """Revision ids in ascending order, cut into requests of at most ``REVISIONS_PER_REQUEST``
    revisions and, where ``sizes`` knows them, ``REVISION_BYTES_PER_REQUEST`` bytes."""
    sizes = sizes or {}
    batches: list[list[int]] = []
    batch: list[int] = []
    total = 0
    for revision in sorted({r for r in revisions if r > 0}):
        size = sizes.get(revision, 0)
        if batch and (len(batch) >= REVISIONS_PER_REQUEST or total + size > REVISION_BYTES_PER_REQUEST):
            batches.append(batch)
            batch, total = [], 0
        batch.append(revision)
        total += size
    if batch:
        batches.append(batch)
    return batches


def fetch_revisions(site: APISite, revisions: Iterable[int],
                    sizes: dict[int, int] | None = None) -> dict[int, RevisionText]:
    """Texts of many revisions, in requests bounded by :func:`revision_batches`.

    Revisions that are gone (deleted page, suppressed text) are simply absent from the
    result: the caller skips their changes.
    """
    from pywikibot.data import api

    batches = revision_batches(revisions, sizes)
    found: dict[int, RevisionText] = {}
    for batch in batches:
        params = {"action": "query", "prop": "revisions", "rvprop": "ids|content|tags", "rvslots": "main",
                  "revids": "|".join(str(r) for r in batch), "formatversion": "2"}
        while True:
            data = api.Request(site=site, parameters=params).submit()
            for page in data.get("query", {}).get("pages", []):
                for rev in page.get("revisions", []):
                    slot = rev.get("slots", {}).get("main", {})
                    if "content" not in slot:
                        continue  # text hidden (revision deletion)
                    found[int(rev["revid"])] = RevisionText(int(rev["revid"]), int(rev.get("parentid") or 0),
                                                            page["title"], slot["content"], tuple(rev.get("tags", ())))
            if "continue" not in data:
                break
            params.update(data["continue"])
    missing = {r for batch in batches for r in batch} - set(found)
    if missing:
        log.info("revisions gone or hidden: %s", sorted(missing))
    return found
