"""Reading a check's cited sources: the corpus first, then the disk cache or a fetch within the
check's budget, then an archived copy; each copy read is judged readable or "cannot check" with
the reason. Used by the pipeline (:mod:`side.pipeline`) and by readers (:mod:`side.prepared`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from side.errors import CannotCheckError, ForeignSourceError, SourceFetchError, UnsupportedContentError
from side.extract.claims import Citation, Claim
from side.sources.archive import wayback_timestamp
from side.sources.batch import FetchBudget, call_with_deadline, fetch_all
from side.sources.states import LANGUAGE_SAMPLE_CHARS, SourceState, assess_source, detect_language

if TYPE_CHECKING:
    from side.retrieval.retriever import Retriever
    from side.sources.archive import ArchiveReader
    from side.sources.fetch import Source

from side.results import ReadSource, Result, SourceCopy, SourceStatus, url_depth

log = logging.getLogger(__name__)

__all__ = [
    "SourceLoader", "Readable", "checkable", "ReadPlan", "ReadSink",
    "LoadedSource", "CheckSources", "make_source_loader", "source_results", "loader_from_config",
]


#: Gets a cited source's sentences: returns (status, sentences, title, error).
SourceLoader = Callable[[str], tuple[SourceStatus, list[str], str, str]]

#: Whether a fetched copy of a source can be checked (its text is the cited document, not a
#: paywall or an error page). False, or a :class:`SourceFetchError` saying why, sends the check
#: on to the next copy (see :class:`CheckSources`).
Readable = Callable[["Source"], bool]


def checkable(source: Source) -> bool:
    """The default :data:`Readable`: the copy is the cited document and gave a sentence to check.

    The one place that decides (:func:`side.sources.states.assess_source`): a wall, a teaser, a
    shell or a page in another language raises :class:`CannotCheckError` with the reason, so
    the next copy (the archive) is tried, and the citation ends "cannot check" if none reads.
    """
    assessment = assess_source(source)
    if not assessment.readable:
        log.info("cannot check %s: %s", source.final_url or source.url, assessment.describe())
        if assessment.state is SourceState.UNSUPPORTED_LANGUAGE and source.sentences:
            code, _ = detect_language(source.text[:LANGUAGE_SAMPLE_CHARS])
            if code and code != "en" and "undecodable" not in assessment.evidence:
                raise ForeignSourceError(assessment.describe(), language=code, sentences=tuple(source.sentences))
        raise CannotCheckError(assessment.describe())
    return bool(source.sentences)


@dataclass(frozen=True)
class ReadPlan:
    """How to read one cited URL: where an archived copy is, and what the citation says of the
    original (dead: read the archive first; usurped or unfit: never read the original)."""

    url: str
    archive_url: str | None = None
    #: The Wayback snapshot to ask for the one closest to (``YYYYMMDD``), from the citation's dates.
    timestamp: str | None = None
    archive_first: bool = False
    live: bool = True
    #: Why the archive comes first, as the report says it ("" when it does not).
    why_archive: str = ""
    #: Why nothing may be fetched for it (a spent fetch budget): corpus or cache only ("" when it may).
    no_fetch: str = ""

    @classmethod
    def for_citations(cls, url: str, citations: Iterable[Citation], no_fetch: str = "") -> ReadPlan:
        """The plan for ``url`` from every citation of it in a check: the first archive URL and
        dates given; archive first if any marks the URL dead, no live read if any marks it unfit."""
        citations = list(citations)
        archive_url = next((c.archive_url for c in citations if c.archive_url), None)
        dated = next((c for c in citations if c.archive_date or c.access_date or c.date), None)
        timestamp = wayback_timestamp(dated.archive_date, dated.access_date, dated.date) if dated else None
        marked = next((c for c in citations if c.archive_first), None)
        why = ""
        if marked is not None:
            why = (f"the citation marks its URL {marked.url_status}" if marked.url_status and not marked.dead_link
                   else "the citation is tagged {{dead link}}")
        return cls(url, archive_url, timestamp, archive_first=marked is not None,
                   live=all(c.live_usable for c in citations), why_archive=why, no_fetch=no_fetch)


#: Told of each readable source a check read (the corpus ingestion's producer, in a worker).
ReadSink = Callable[[ReadSource], object]


@dataclass(frozen=True)
class LoadedSource:
    """A cited source as loaded for a check: its sentences, or why there are none, and which
    copy of it was read."""

    status: SourceStatus
    sentences: tuple[str, ...] = ()
    title: str = ""
    error: str = ""
    copy: SourceCopy | None = None
    #: The URL actually read (after redirects), "" when nothing was read.
    url: str = ""
    #: Why this copy and not the live page at first try ("" when it was).
    fallback: str = ""
    #: The copy read, when one was fetched and readable (None for corpus documents and failures).
    read: ReadSource | None = field(default=None, compare=False, repr=False)
    #: A cannot-check source that reads as a document in another language: its sentences and
    #: language code, for the judge (Side itself never scores them).
    foreign: tuple[str, ...] = field(default=(), compare=False, repr=False)
    language: str = ""

    def as_tuple(self) -> tuple[SourceStatus, list[str], str, str]:
        """The :data:`SourceLoader` shape: (status, sentences, title, error)."""
        return self.status, list(self.sentences), self.title, self.error

    @classmethod
    def from_tuple(cls, loaded: tuple[SourceStatus, list[str], str, str]) -> LoadedSource:
        status, sentences, title, error = loaded
        return cls(SourceStatus(status), tuple(sentences), title, error)


_COPY_NAMES = {SourceCopy.LIVE: "live copy", SourceCopy.ARCHIVE: "archived copy"}


def _part_of(deadline: float | None, fraction: float) -> float | None:
    """An instant ``fraction`` of the way from now to ``deadline`` (None stays None)."""
    if deadline is None:
        return None
    now = time.monotonic()
    return now + max(0.0, deadline - now) * fraction


class CheckSources:
    """Corpus first (no network), then ``fetch`` (cache-aware ``fetch_source``), if given.

    Called with one URL it loads that one; :meth:`load_plans` loads a
    whole check's URLs at once within ``budget`` (concurrently, bounded per host, time shared
    fairly). A ``fetch`` that takes a ``deadline`` keyword is told when its share ends.

    With an ``archive`` (:class:`~side.sources.archive.ArchiveReader`), a live page that fails
    (dead, blocked, timed out, unsupported) or that ``readable`` refuses is read from its
    archived copy instead, within the same share of the budget: the first copy tried gets at
    most half of it, so a hanging site leaves time for the archive. A citation that marks its
    URL dead is read from the archive first (the live page only if that fails); one marked
    usurped or unfit never from its URL. Without an archive, only the live page is read.

    A plan with ``no_fetch`` (a service's fetch budget was spent for it) is read from the corpus
    or through ``cached`` (a cache lookup that never touches the network) and nothing else; it
    ends "cannot check" with the plan's reason when neither has it.
    """

    def __init__(self, retriever: Retriever | None = None, fetch: Callable[..., Any] | None = None,
                 budget: FetchBudget | None = None, archive: ArchiveReader | None = None,
                 readable: Readable = checkable, cached: Callable[[str], Source | None] | None = None) -> None:
        self.retriever = retriever
        self.fetch = fetch
        self.budget = budget or FetchBudget()
        self.archive = archive
        self.readable = readable
        self.cached = cached
        self.by_url: dict[str, str] = {}
        if retriever is not None:
            self.by_url = {d.url: d.doc_id for d in retriever.corpus.documents if d.url}

    def _offline(self, url: str) -> LoadedSource | None:
        """The outcome that needs no network (corpus, or fetching disabled), else None."""
        if self.retriever is not None and url in self.by_url:
            doc = self.retriever.corpus.document(self.by_url[url])
            return LoadedSource(SourceStatus.CORPUS, tuple(doc.split()), doc.title)
        if self.fetch is None:
            return LoadedSource(SourceStatus.UNAVAILABLE, error="fetching disabled (offline)")
        return None

    def _unfetched(self, plan: ReadPlan) -> LoadedSource:
        """A plan that may not be fetched: the cached copy if one is there, else why not."""
        source = self.cached(plan.url) if self.cached is not None else None
        try:
            if source is not None and self.readable(source):
                return LoadedSource(SourceStatus.CACHE, tuple(source.sentences), source.title or "", "",
                                    SourceCopy.LIVE, source.final_url)
        except SourceFetchError:
            pass
        return LoadedSource(SourceStatus.UNAVAILABLE, error=f"cannot check (fetch budget): {plan.no_fetch}")

    def _copies(self, plan: ReadPlan) -> list[SourceCopy]:
        """The copies to try, in order (the archive only where there is somewhere to look)."""
        if self.archive is None:
            return [SourceCopy.LIVE]
        archived = [SourceCopy.ARCHIVE] if self.archive.can_read(plan.archive_url) else []
        if not plan.live:
            return archived
        return [*archived, SourceCopy.LIVE] if plan.archive_first else [SourceCopy.LIVE, *archived]

    def _read(self, copy: SourceCopy, plan: ReadPlan, deadline: float | None) -> Source:
        """One copy's Source, or the SourceFetchError saying why it cannot be checked."""
        if copy is SourceCopy.LIVE:
            source = call_with_deadline(self.fetch, plan.url, deadline)  # type: ignore[arg-type]
        else:
            assert self.archive is not None
            source = self.archive.read(plan.url, plan.archive_url, plan.timestamp, deadline)
        if not self.readable(source):
            raise UnsupportedContentError(f"nothing to check in {source.final_url}")
        return source

    def load(self, plan: ReadPlan, deadline: float | None = None) -> LoadedSource:
        """One URL's source by ``plan``, every copy tried ending by ``deadline``."""
        offline = self._offline(plan.url)
        if offline is not None:
            return offline
        if plan.no_fetch:
            return self._unfetched(plan)
        copies = self._copies(plan)
        if not copies:
            return LoadedSource(SourceStatus.UNAVAILABLE, error=f"{plan.why_archive} and gives no archived copy")
        notes = [plan.why_archive] if copies[0] is SourceCopy.ARCHIVE and plan.why_archive else []
        cannot_check = False
        foreign: ForeignSourceError | None = None
        for n, copy in enumerate(copies):
            until = deadline if n == len(copies) - 1 else _part_of(deadline, 0.5)
            try:
                source = self._read(copy, plan, until)
            except SourceFetchError as exc:
                cannot_check = cannot_check or isinstance(exc, CannotCheckError)
                if isinstance(exc, ForeignSourceError) and foreign is None:
                    foreign = exc
                notes.append(f"{_COPY_NAMES[copy]}: {exc}" if len(copies) > 1 else str(exc))
                continue
            return LoadedSource(SourceStatus.FETCHED, tuple(source.sentences), source.title or "", "", copy,
                                source.final_url, "; ".join(notes), ReadSource.of(plan.url, copy, source))
        if cannot_check:  # something was read, and it was not the cited document (or not in English)
            if foreign is not None:
                return LoadedSource(SourceStatus.CANNOT_CHECK, error="; ".join(notes), foreign=foreign.sentences,
                                    language=foreign.language)
            return LoadedSource(SourceStatus.CANNOT_CHECK, error="; ".join(notes))
        return LoadedSource(SourceStatus.UNAVAILABLE, error="; ".join(notes))

    def __call__(self, url: str) -> tuple[SourceStatus, list[str], str, str]:
        return self.load(ReadPlan(url)).as_tuple()

    def load_plans(self, plans: Iterable[ReadPlan]) -> dict[str, LoadedSource]:
        """Every plan's URL's source, fetching within the budget."""
        by_url = {plan.url: plan for plan in plans}
        out: dict[str, LoadedSource] = {}
        to_fetch: list[str] = []
        for url, plan in by_url.items():
            offline = self._offline(url)
            if offline is not None:
                out[url] = offline
            elif plan.no_fetch:
                out[url] = self._unfetched(plan)
            else:
                to_fetch.append(url)

        def load(url: str, deadline: float | None = None) -> LoadedSource:
            return self.load(by_url[url], deadline)

        for url, fetched in fetch_all(to_fetch, load, self.budget).items():
            out[url] = (LoadedSource(SourceStatus.UNAVAILABLE, error=str(fetched.error)) if fetched.error
                        else fetched.value or LoadedSource(SourceStatus.UNAVAILABLE, error="nothing loaded"))
        return out


def make_source_loader(retriever: Retriever | None = None, fetch: Callable[..., Any] | None = None,
                       budget: FetchBudget | None = None, archive: ArchiveReader | None = None,
                       readable: Readable = checkable,
                       cached: Callable[[str], Source | None] | None = None) -> CheckSources:
    """Corpus first (no network), then ``fetch`` (cache-aware ``fetch_source``), if given; then
    the ``archive`` for a page that fails or that ``readable`` refuses; ``cached`` for a URL
    that may not be fetched (see :class:`CheckSources`)."""
    return CheckSources(retriever, fetch, budget, archive, readable, cached)


def source_results(load_source: SourceLoader, claims: list[Claim], on_read: ReadSink | None = None) -> list[Result]:
    """A Result per claim with its cited source loaded, not yet scored; each distinct URL is
    loaded once, all of them together when the loader can (:meth:`CheckSources.load_plans`).
    A URL is read without fetching when a claim citing it says so (:attr:`Claim.no_fetch`)."""
    results = [Result(c, SourceStatus.NO_URL, url_depth=url_depth(c.citation.url)) for c in claims]
    cited: dict[str, list[Citation]] = {}
    no_fetch: dict[str, str] = {}
    for claim in claims:
        if claim.citation.url:
            cited.setdefault(claim.citation.url, []).append(claim.citation)
            if claim.no_fetch:
                no_fetch.setdefault(claim.citation.url, claim.no_fetch)
    loaded = _load(load_source, cited, no_fetch)
    if on_read is not None:
        for source in loaded.values():
            if source.read is not None:
                on_read(source.read)
    for result in results:
        url = result.claim.citation.url
        if url:
            source = loaded[url]
            result.source_status, result.source_error = source.status, source.error
            result.source_sentences = list(source.sentences)
            result.source_copy, result.source_url, result.source_fallback = source.copy, source.url, source.fallback
            result.foreign_sentences, result.source_language = list(source.foreign), source.language
    return results


def _load(load_source: SourceLoader, cited: dict[str, list[Citation]], no_fetch: dict[str, str],
          ) -> dict[str, LoadedSource]:
    """Each cited URL's source, through the richest interface the loader has."""
    load_plans = getattr(load_source, "load_plans", None)
    if load_plans is not None:
        return dict(load_plans([ReadPlan.for_citations(url, citations, no_fetch.get(url, ""))
                                for url, citations in cited.items()]))
    return {url: LoadedSource(SourceStatus.UNAVAILABLE, error=f"cannot check (fetch budget): {no_fetch[url]}")
            if url in no_fetch else LoadedSource.from_tuple(load_source(url)) for url in cited}


def loader_from_config(config: Any, retriever: Retriever | None = None, fetch: Callable[..., Any] | None = None,
                       offline: bool = False, readable: Readable = checkable) -> CheckSources:
    """The source loader ``config`` describes: ``fetch`` (default: the cache-aware
    ``fetch_source``; none when ``offline``) within ``config.fetch``'s budget, archived copies
    through it unless ``config.fetch.archive`` is off, and the cache for a URL a check may not
    fetch (its fetch budget spent)."""
    from side.sources.fetch import fetch_source, load_cached

    if offline:
        fetch = None
    elif fetch is None:
        fetch = lambda url, deadline=None: fetch_source(url, config.fetch, config.cache_dir, deadline)
    archive = None
    if fetch is not None and config.fetch.archive:
        from side.sources.archive import ArchiveReader

        archive = ArchiveReader(config.fetch, fetch)
    return make_source_loader(retriever, fetch, FetchBudget.from_config(config.fetch), archive, readable,
                              cached=lambda url: load_cached(config.cache_dir, url))
