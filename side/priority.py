"""The patrol queue's order: failure likelihood, and the signals patrollers trust beside it.

A patroller's first look goes to citations that most likely fail verification (1 - the
verifier's support score). Three things they read off a citation before opening it add to that:

- **URL depth**: a citation to a site's front page (depth 0, Side's "generic URL" signal) points
  at no page that could say the claim; the Side paper found such citations fail verification far
  more often than deep links.
- **Domain reliability**: the status of the cited domain on English Wikipedia's perennial
  sources list (WP:RSP), kept as data in ``side/models/reliability/perennial_sources.tsv`` with
  its source and date. Deprecated and blacklisted domains weigh most.
- **Reference age and survival**: from the page's history, when the cited URL first appeared and
  how many later revisions kept it. A reference few edits have seen has had few readers check it.

Each signal adds a bounded, weighted amount to the failure likelihood
(:class:`~side.config.PriorityConfig`); a signal that is unknown (no URL, a malformed one, no
history) adds nothing, so it never pushes a citation up or down by accident. The parts are kept
(:class:`Priority`) so the dashboard shows why a citation stands where it does.
``benchmarks/priority.py`` measures each signal's effect on the top of the queue.
"""

from __future__ import annotations

import csv
import logging
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from side.config import PriorityConfig
    from side.extract.wikiapi import HistoryRevision
    from side.pipeline import Result

__all__ = [
    "PERENNIAL_SOURCES", "Reliability", "PerennialEntry", "PerennialSources", "load_perennial_sources",
    "ReferenceHistory", "reference_history", "PrioritySignals", "PriorityPart", "Priority", "priority",
    "result_priority", "order", "Prioritizer", "url_host_path", "url_depth_of",
]

log = logging.getLogger(__name__)

#: The shipped copy of WP:RSP (its header says where it comes from and when).
PERENNIAL_SOURCES = Path(__file__).parent / "models" / "reliability" / "perennial_sources.tsv"


class Reliability(StrEnum):
    """A domain's status on the perennial sources list; UNLISTED when the list does not name it."""

    GENERALLY_RELIABLE = "generally_reliable"
    NO_CONSENSUS = "no_consensus"
    GENERALLY_UNRELIABLE = "generally_unreliable"
    DEPRECATED = "deprecated"
    BLACKLISTED = "blacklisted"
    UNLISTED = "unlisted"

    @property
    def risk(self) -> float:
        """0 (no reason for doubt, or nothing known) to 1 (blacklisted): what the weight multiplies."""
        return _RISK[self]

    @property
    def text(self) -> str:
        return self.value.replace("_", " ")


_RISK = {Reliability.GENERALLY_RELIABLE: 0.0, Reliability.UNLISTED: 0.0, Reliability.NO_CONSENSUS: 0.25,
         Reliability.GENERALLY_UNRELIABLE: 0.5, Reliability.DEPRECATED: 0.75, Reliability.BLACKLISTED: 1.0}


@dataclass(frozen=True)
class PerennialEntry:
    """One row of the list: a domain (or ``domain/path`` prefix) and the status of its source."""

    domain: str
    reliability: Reliability
    name: str
    last_discussed: str = ""


def url_host_path(url: str | None) -> tuple[str, str] | None:
    """(host without ``www.`` and port, lower case; path) of an http(s) or scheme-less URL, or
    None when it has no host, another scheme (``javascript:``...) or cannot be parsed: a
    malformed URL is no domain, never an error."""
    if not url or not isinstance(url, str):
        return None
    text = url.strip()
    if "://" in text:
        if not text.lower().startswith(("http://", "https://")):
            return None
    elif _SCHEME.match(text):
        return None
    elif not text.startswith("//"):
        text = "//" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return None
    if not host or not _HOST.fullmatch(host):
        return None
    return host.removeprefix("www."), parts.path or "/"


#: A scheme without ``//`` (``mailto:``, ``javascript:``); ``host:8080`` is a port, not one.
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:(?!\d)", re.IGNORECASE)
#: What a host name (or IPv4/IPv6 literal, as urlsplit gives it) may hold.
_HOST = re.compile(r"[\w.-]+|[0-9a-f:.]+", re.IGNORECASE)


def url_depth_of(url: str | None) -> int | None:
    """Path segments of a URL (0: a site's front page, Side's generic URL, counted as
    :func:`side.pipeline.url_depth` does); None when the URL cannot be read."""
    split = url_host_path(url)
    if split is None:
        return None
    return len([segment for segment in split[1].split("/") if segment])


@dataclass(frozen=True)
class PerennialSources:
    """The list as loaded, with where it comes from."""

    entries: tuple[PerennialEntry, ...]
    source_date: str = ""
    _by_domain: dict[str, tuple[PerennialEntry, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        grouped: dict[str, list[PerennialEntry]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.domain, []).append(entry)
        self._by_domain.update({k: tuple(v) for k, v in grouped.items()})

    def lookup(self, url: str | None) -> tuple[Reliability, PerennialEntry | None]:
        """The status of the most specific listed prefix of ``url``'s host and path.

        ``news.bbc.co.uk/x`` matches ``bbc.co.uk`` (a subdomain is its domain's); ``forbes.com/sites/a``
        matches a ``forbes.com/sites`` row before a ``forbes.com`` one. A domain listed by several
        entries with different statuses (rated per period or topic) is NO_CONSENSUS. Nothing matched,
        or no readable URL: UNLISTED.
        """
        split = url_host_path(url)
        if split is None:
            return Reliability.UNLISTED, None
        host, path = split
        labels = host.split(".")
        segments = [s for s in path.lower().split("/") if s]
        for start in range(len(labels) - 1):
            domain = ".".join(labels[start:])
            for depth in range(len(segments), -1, -1):
                key = "/".join([domain, *segments[:depth]])
                found = self._by_domain.get(key) or self._by_domain.get(key + "/")
                if found:
                    statuses = {e.reliability for e in found}
                    status = found[0].reliability if len(statuses) == 1 else Reliability.NO_CONSENSUS
                    return status, found[0]
        return Reliability.UNLISTED, None

    def reliability(self, url: str | None) -> Reliability:
        return self.lookup(url)[0]


def _read_tsv(path: Path) -> PerennialSources:
    date = ""
    rows: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#"):
                if line.startswith("# DATE:"):
                    date = line.removeprefix("# DATE:").strip().split(" ", 1)[0]
                continue
            rows.append(line)
    entries = []
    for row in csv.DictReader(rows, delimiter="\t"):
        try:
            entries.append(PerennialEntry(row["domain"].strip().lower(), Reliability(row["status"].strip()),
                                          row.get("source", "") or "", row.get("last_discussed", "") or ""))
        except (KeyError, ValueError, AttributeError):
            log.warning("%s: skipped a row that is not domain/status: %r", path, row)
    return PerennialSources(tuple(entries), date)


@lru_cache(maxsize=4)
def load_perennial_sources(path: str | Path | None = None) -> PerennialSources:
    """The perennial sources list (the shipped copy unless ``path``); read once per process."""
    return _read_tsv(Path(path) if path else PERENNIAL_SOURCES)


@dataclass(frozen=True)
class ReferenceHistory:
    """When a cited URL entered a page and how many later revisions kept it.

    ``first_revision`` is the oldest revision read that holds the URL; when the history read is
    cut at ``revisions_read`` revisions, the URL may be older than that (``complete`` False).
    Unknown (no history, URL not found in it): every field None and :attr:`known` False.
    """

    first_revision: int | None = None
    first_seen: datetime | None = None
    age_days: float | None = None
    revisions_survived: int | None = None
    revisions_read: int = 0
    complete: bool = True

    @classmethod
    def unknown(cls) -> ReferenceHistory:
        return cls()

    @property
    def known(self) -> bool:
        return self.revisions_survived is not None

    @property
    def youth(self) -> float:
        """1 for a reference no later edit has kept, falling as edits keep it (1 / (1 + survived));
        0 when unknown, so an unknown history never raises a citation."""
        if self.revisions_survived is None:
            return 0.0
        return 1.0 / (1.0 + self.revisions_survived)

    def to_dict(self) -> dict[str, Any]:
        return {"first_revision": self.first_revision,
                "first_seen": self.first_seen.isoformat() if self.first_seen else None,
                "age_days": self.age_days, "revisions_survived": self.revisions_survived,
                "revisions_read": self.revisions_read, "complete": self.complete}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ReferenceHistory:
        if not data:
            return cls()
        seen = data.get("first_seen")
        return cls(first_revision=data.get("first_revision"),
                   first_seen=datetime.fromisoformat(seen) if seen else None, age_days=data.get("age_days"),
                   revisions_survived=data.get("revisions_survived"),
                   revisions_read=int(data.get("revisions_read") or 0), complete=bool(data.get("complete", True)))


def reference_history(revisions: Sequence[HistoryRevision], url: str | None, now: datetime | None = None,
                      complete: bool = True) -> ReferenceHistory:
    """Age and survival of ``url`` in a page's ``revisions`` (oldest first).

    The reference is taken to enter at the first revision of the latest unbroken run that holds
    it (a URL removed and re-added counts from its return); survival counts the revisions after
    that one, to the newest read. Age runs from that revision's time to ``now`` (default: the
    newest revision's time). Unknown when the URL is empty or no revision holds it.
    """
    needle = (url or "").strip()
    if not needle or not revisions:
        return ReferenceHistory.unknown()
    start = None
    for n, revision in enumerate(revisions):
        if needle in revision.text:
            start = n if start is None else start
        else:
            start = None
    if start is None:
        return ReferenceHistory.unknown()
    first = revisions[start]
    end = now or revisions[-1].timestamp
    age = None if first.timestamp is None or end is None else max(0.0, (end - first.timestamp).total_seconds() / 86400)
    return ReferenceHistory(first_revision=first.revision, first_seen=first.timestamp,
                            age_days=None if age is None else round(age, 2),
                            revisions_survived=len(revisions) - 1 - start,
                            revisions_read=len(revisions), complete=complete or start > 0)


@dataclass(frozen=True)
class PrioritySignals:
    """What the order knows about one citation besides its score."""

    failure_likelihood: float | None
    url: str = ""
    reliability: Reliability = Reliability.UNLISTED
    history: ReferenceHistory = field(default_factory=ReferenceHistory)

    @property
    def url_depth(self) -> int | None:
        return url_depth_of(self.url)


@dataclass(frozen=True)
class PriorityPart:
    """One signal's share of a priority: its name, what it saw, and what it added."""

    signal: str
    value: str
    added: float

    def to_dict(self) -> dict[str, Any]:
        return {"signal": self.signal, "value": self.value, "added": self.added}


@dataclass(frozen=True)
class Priority:
    """A citation's place in the queue: ``score`` (higher first) and the parts that make it."""

    score: float | None
    failure_likelihood: float | None
    url_depth: int | None
    reliability: Reliability
    history: ReferenceHistory
    parts: tuple[PriorityPart, ...] = ()

    @property
    def raised_by(self) -> tuple[PriorityPart, ...]:
        """The signals that added something (what the dashboard names)."""
        return tuple(p for p in self.parts if p.added > 0)

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "failure_likelihood": self.failure_likelihood, "url_depth": self.url_depth,
                "reliability": self.reliability.value, "history": self.history.to_dict(),
                "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Priority | None:
        if not data:
            return None
        try:
            reliability = Reliability(data.get("reliability") or Reliability.UNLISTED)
        except ValueError:
            reliability = Reliability.UNLISTED
        return cls(score=data.get("score"), failure_likelihood=data.get("failure_likelihood"),
                   url_depth=data.get("url_depth"), reliability=reliability,
                   history=ReferenceHistory.from_dict(data.get("history")),
                   parts=tuple(PriorityPart(str(p.get("signal", "")), str(p.get("value", "")),
                                            float(p.get("added") or 0.0)) for p in data.get("parts", [])))


def _finite(value: float | None) -> float | None:
    return value if value is not None and isinstance(value, (int, float)) and math.isfinite(value) else None


def priority(signals: PrioritySignals, weights: PriorityConfig) -> Priority:
    """Failure likelihood plus each signal times its weight; None score for an unscored citation.

    generic URL: ``weights.generic_url`` when the URL is a front page (depth 0);
    reliability: ``weights.reliability`` x the status's risk (0 reliable/unlisted ... 1 blacklisted);
    young reference: ``weights.young_reference`` x 1 / (1 + revisions that kept it).
    """
    likelihood = _finite(signals.failure_likelihood)
    depth = signals.url_depth
    history = signals.history
    parts = (
        PriorityPart("generic_url", "unknown" if depth is None else f"depth {depth}",
                     round(weights.generic_url if depth == 0 else 0.0, 4)),
        PriorityPart("reliability", signals.reliability.text, round(weights.reliability * signals.reliability.risk, 4)),
        PriorityPart("young_reference",
                     "unknown" if not history.known else
                     f"{history.age_days if history.age_days is not None else '?'} days, "
                     f"{history.revisions_survived} later revisions",
                     round(weights.young_reference * history.youth, 4)),
    )
    score = None if likelihood is None else round(likelihood + sum(p.added for p in parts), 4)
    return Priority(score, likelihood, depth, signals.reliability, history, parts)


def result_priority(result: Result, weights: PriorityConfig, sources: PerennialSources | None = None,
                    history: ReferenceHistory | None = None) -> Priority:
    """The priority of one pipeline Result (its cited URL looked up in ``sources``, default the shipped list)."""
    url = result.claim.citation.url or ""
    listed = (sources or load_perennial_sources(weights.perennial_sources or None)).reliability(url)
    return priority(PrioritySignals(result.failure_likelihood, url, listed, history or ReferenceHistory.unknown()),
                    weights)


def order(priorities: Iterable[Priority]) -> list[int]:
    """Indices of ``priorities`` in queue order: highest score first, unscored last."""
    items = list(priorities)
    return sorted(range(len(items)), key=lambda n: (items[n].score is None, -(items[n].score or 0.0)))


class Prioritizer:
    """Priorities for one check's Results: the weights, the list, and the page's history when the
    wiki can be read (``api_url`` gives its Action API URL, or None).

    The history is read once per check, newest ``weights.history_revisions`` revisions up to the
    checked one; a wiki that cannot be reached, a page it does not have, or a check without a
    wiki page gives every reference an unknown history (logged), never a failed check.
    """

    def __init__(self, weights: PriorityConfig, api_url: Callable[[str], str | None] | None = None,
                 sources: PerennialSources | None = None) -> None:
        self.weights = weights
        self.api_url = api_url
        self.sources = sources or load_perennial_sources(weights.perennial_sources or None)

    def histories(self, wiki: str, title: str, revision: int | None,
                  urls: Iterable[str]) -> dict[str, ReferenceHistory]:
        """Each URL's history in the page (unknown ones left out)."""
        from side.errors import SideError
        from side.extract.wikiapi import fetch_history

        api = self.api_url(wiki) if self.api_url and wiki and title else None
        if api is None or self.weights.history_revisions <= 0:
            return {}
        try:
            revisions, complete = fetch_history(api, title, limit=self.weights.history_revisions,
                                                until_revision=revision, timeout_s=10.0)
        except SideError as exc:
            log.info("no history for %s %r: %s", wiki, title, exc)
            return {}
        found = {url: reference_history(revisions, url, complete=complete) for url in set(urls) if url}
        return {url: h for url, h in found.items() if h.known}

    def __call__(self, wiki: str, title: str, revision: int | None, results: Sequence[Result]) -> list[Priority]:
        known = self.histories(wiki, title, revision, (r.claim.citation.url or "" for r in results))
        return [result_priority(r, self.weights, self.sources, known.get(r.claim.citation.url or ""))
                for r in results]
