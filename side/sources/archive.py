"""Archived copies of cited sources: the citation's own archive URL, then the Wayback Machine.

A cited page that is dead (404, a vanished host), unreadable, or that editors have marked
dead can often still be checked against an archived copy. :class:`ArchiveReader` reads one:

1. the citation's own ``archive-url`` (or ``{{webarchive|url=}}``), which editors chose;
2. else the Internet Archive's Wayback Machine, through its availability API
   (``GET <wayback_api>?url=URL&timestamp=YYYYMMDD``), which answers, as documented at
   https://archive.org/help/wayback_api.php::

       {"archived_snapshots": {"closest": {"available": true, "status": "200",
        "url": "http://web.archive.org/web/20130919044612/http://example.com/",
        "timestamp": "20130919044612"}}}

   or ``{"archived_snapshots": {}}`` when it holds no copy.

Every request (the API, the snapshot, each redirect) is an ordinary guarded fetch
(:func:`side.sources.fetch.download`, :func:`side.sources.fetch.fetch_source`): the SSRF guard,
the size cap and the caller's deadline apply as to any cited page, and the API's address is a
setting (``fetch.wayback_api``, ``SIDE_FETCH_WAYBACK_API``), not a constant.

Snapshots are read in their raw form, ``.../web/<timestamp>id_/<url>``, which Wayback-software
archives serve as the original bytes, without the archive's toolbar and rewritten links; the
text is then extracted like any page's.

The real Wayback Machine cannot be reached from the machines this project is built and tested
on: tests/test_archive.py runs this client against a local HTTP server (tests/httpserver.py)
that answers in the API's documented format and serves the snapshots.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from side.config import FetchConfig
from side.errors import ConfigError, NoArchivedCopyError, SourceFetchError
from side.sources.batch import call_with_deadline
from side.sources.fetch import Source, download, fetch_source

__all__ = [
    "MAX_ANSWER_BYTES", "Snapshot", "raw_snapshot_url", "wayback_timestamp", "availability_url",
    "parse_availability", "ArchiveReader",
]

log = logging.getLogger(__name__)

#: Most bytes of an availability answer read (a real one is a few hundred).
MAX_ANSWER_BYTES = 64 * 1024

#: A Wayback-software snapshot path: ``<prefix><timestamp><flags>/<original http(s) URL>``,
#: e.g. ``/web/20130919044612/http://example.com/`` or ``/web/20130919044612if_/https://...``.
_SNAPSHOT_PATH = re.compile(
    r"^(?P<prefix>/(?:[^/]*/)*?)(?P<timestamp>[0-9]{4,14})(?:[a-z]{2}_)?/(?P<original>https?:/.*)$",
    re.IGNORECASE,
)
_TIMESTAMP = re.compile(r"^[0-9]{4,14}$")
#: Answers of the capture the API names that are no copy of a page (it names 3xx captures too:
#: replaying one follows the archived redirect).
_ERROR_STATUS = re.compile(r"^[45][0-9][0-9]$")


@dataclass(frozen=True)
class Snapshot:
    """One archived capture as the availability API names it."""

    url: str
    #: ``YYYYMMDDhhmmss``, or "" when the answer gave none.
    timestamp: str = ""
    #: The HTTP status the archive recorded for the capture ("" when not given).
    status: str = ""


def raw_snapshot_url(url: str) -> str:
    """``url`` with the ``id_`` flag when it is a Wayback-style snapshot URL, else unchanged.

    ``http://web.archive.org/web/20130919044612/http://example.com/`` ->
    ``http://web.archive.org/web/20130919044612id_/http://example.com/``: the archived bytes as
    captured, not the replay page with the archive's toolbar (the Wayback Machine, pywb and
    OpenWayback all serve this form). Other archives' URLs (archive.today's) are read as given.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    match = _SNAPSHOT_PATH.match(parts.path)
    if not match:
        return url
    original = match["original"] + (f"?{parts.query}" if parts.query else "")
    path = f"{match['prefix']}{match['timestamp']}id_/{original}"
    return f"{parts.scheme}://{parts.netloc}{path}"


def wayback_timestamp(*dates: str | None) -> str | None:
    """The first of ``dates`` (as editors write them) that reads as a date, as ``YYYYMMDD``.

    A citation's archive date says which copy the editor chose, its access date what they saw:
    the snapshot closest to it is the likeliest to say what they cited. A value that is already
    a Wayback timestamp (4 to 14 digits) is kept as it is.
    """
    from dateutil import parser

    for text in dates:
        text = (text or "").strip()
        if not text:
            continue
        if _TIMESTAMP.match(text):
            return text
        try:
            when = parser.parse(text, default=datetime(2000, 1, 1))
        except (ValueError, OverflowError):
            log.debug("not a date: %r", text)
            continue
        return when.strftime("%Y%m%d")
    return None


def availability_url(api: str, url: str, timestamp: str | None = None) -> str:
    """The availability API request for ``url`` (closest to ``timestamp`` when given)."""
    query = {"url": url, **({"timestamp": timestamp} if timestamp else {})}
    return f"{api}{'&' if '?' in api else '?'}{urlencode(query)}"


def _malformed(where: str, why: str) -> SourceFetchError:
    """A malformed answer is the service's fault (an error page, a truncated body): transient."""
    return SourceFetchError(f"malformed Wayback availability answer from {where}: {why}", transient=True)


def parse_availability(data: bytes, where: str) -> Snapshot | None:
    """The closest snapshot an availability answer names, None when it names none.

    Anything but the documented shape is a :class:`SourceFetchError` saying what is wrong.
    """
    try:
        answer = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _malformed(where, f"not JSON ({exc})") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("archived_snapshots"), dict):
        raise _malformed(where, "no \"archived_snapshots\" object")
    closest = answer["archived_snapshots"].get("closest")
    if closest is None:
        return None
    if not isinstance(closest, dict):
        raise _malformed(where, "\"closest\" is not an object")
    if closest.get("available") is False:
        return None
    url, timestamp, status = closest.get("url"), closest.get("timestamp", ""), closest.get("status", "")
    if not isinstance(url, str) or urlsplit(url).scheme.lower() not in ("http", "https"):
        raise _malformed(where, f"the snapshot URL is {url!r}, not an http(s) URL")
    if not isinstance(timestamp, str) or (timestamp and not _TIMESTAMP.match(timestamp)):
        raise _malformed(where, f"the snapshot timestamp is {timestamp!r}")
    return Snapshot(url, timestamp, str(status or ""))


def _part_of(deadline: float | None, fraction: float) -> float | None:
    """An instant ``fraction`` of the way from now to ``deadline`` (None stays None)."""
    if deadline is None:
        return None
    now = time.monotonic()
    return now + max(0.0, deadline - now) * fraction


class ArchiveReader:
    """Reads a cited source's archived copy (see the module doc).

    ``fetch`` reads a snapshot URL into a :class:`Source` (``fetch(url, deadline=...)``); by
    default :func:`fetch_source` with ``config`` and ``cache_dir``, so a snapshot once read is
    not fetched again. A worker passes its own (retrying) fetch.
    """

    def __init__(self, config: FetchConfig, fetch: Callable[..., Source] | None = None,
                 cache_dir: Path | None = None) -> None:
        self.config = config
        self.api = (config.wayback_api or "").strip()
        if self.api:
            parts = urlsplit(self.api)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"fetch.wayback_api must be an http(s) URL or empty, not {self.api!r}")
        self._answers = dataclasses.replace(config, max_bytes=min(config.max_bytes, MAX_ANSWER_BYTES))
        self.fetch: Callable[..., Source] = fetch or (
            lambda url, deadline=None: fetch_source(url, config, cache_dir, deadline))

    def can_read(self, archive_url: str | None) -> bool:
        """Whether there is anywhere to look: the citation's archive URL, or Wayback lookups."""
        return bool(archive_url) or bool(self.api)

    def lookup(self, url: str, timestamp: str | None = None, deadline: float | None = None) -> Snapshot:
        """The Wayback Machine's snapshot of ``url`` closest to ``timestamp``.

        Raises :class:`NoArchivedCopyError` when it has none (or lookups are off), and
        :class:`SourceFetchError` when the API fails or answers something malformed.
        """
        if not self.api:
            raise NoArchivedCopyError("no Wayback Machine lookup (fetch.wayback_api is empty)")
        answer = download(availability_url(self.api, url, timestamp), self._answers, deadline, types=None)
        snapshot = parse_availability(answer.data, self.api)
        if snapshot is None:
            raise NoArchivedCopyError(f"the Wayback Machine has no archived copy of {url}")
        if _ERROR_STATUS.match(snapshot.status):
            raise NoArchivedCopyError(f"the Wayback Machine's copy of {url} is an HTTP {snapshot.status} "
                                      f"page ({snapshot.url})")
        return snapshot

    def read_snapshot(self, url: str, deadline: float | None = None) -> Source:
        """The text of the snapshot at ``url``, read in its raw (``id_``) form when it has one."""
        return call_with_deadline(self.fetch, raw_snapshot_url(url), deadline)

    def read(self, url: str, archive_url: str | None = None, timestamp: str | None = None,
             deadline: float | None = None) -> Source:
        """The archived copy of ``url``: ``archive_url`` first (given the first half of the time
        to ``deadline`` when a Wayback lookup may follow), then the Wayback Machine's closest
        snapshot to ``timestamp``.

        Every request ends by ``deadline`` (a :func:`time.monotonic` instant) and each within
        ``config.timeout_s``. When no copy could be read, the error names each attempt; it is
        transient when any attempt's failure was.
        """
        failures: list[tuple[str, SourceFetchError]] = []
        tried: set[str] = set()
        if archive_url:
            until = _part_of(deadline, 0.5) if self.api else deadline
            try:
                return self.read_snapshot(archive_url, until)
            except SourceFetchError as exc:
                log.info("archived copy %s of %s failed: %s", archive_url, url, exc)
                failures.append(("the citation's archive-url", exc))
                tried.add(raw_snapshot_url(archive_url))
            if not self.api:
                raise failures[0][1]
        try:
            snapshot = self.lookup(url, timestamp, deadline)
            if raw_snapshot_url(snapshot.url) in tried:
                raise NoArchivedCopyError(f"the Wayback Machine's copy of {url} is the archive-url that failed")
            return self.read_snapshot(snapshot.url, deadline)
        except SourceFetchError as exc:
            log.info("Wayback copy of %s failed: %s", url, exc)
            failures.append(("the Wayback Machine", exc))
        if len(failures) == 1:
            raise failures[0][1]
        raise SourceFetchError("; ".join(f"{what}: {exc}" for what, exc in failures),
                               transient=any(exc.transient for _, exc in failures))

    def __repr__(self) -> str:
        return f"ArchiveReader(api={self.api!r})"
