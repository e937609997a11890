"""Side's decision flow: score each citation's source, look for better ones, and suggest.

For every claim of an article: get the cited source (evidence corpus, disk cache, or fetch:
all of a check's sources at once, within one time budget, see :mod:`side.sources.batch`; a dead
or unreadable page is read from an archived copy, see :class:`CheckSources`),
score the claim against it, retrieve candidates from the corpus (hybrid: 100 sparse + 100 dense
passages, grouped to documents), score those with the same verifier, rank the existing
citation among them, and flag it when its level is partially or not supported (cuts chosen on
train data), or when a candidate supports the claim clearly better. Flags also carry Side's
URL-depth signal: citations to a bare domain fail verification far more often than deep links.

A weak citation (partially or not supported) is first checked against the other sources the
same article cites: they are read for the check anyway, and reusing one (``<ref name="X" />``)
is a smaller, surer fix than a new source. At most ``own_sources`` of them are verified per weak
claim, the most relevant by BM25 first; a supporting one is the first suggestion.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from side.errors import CannotCheckError, ForeignSourceError, SourceFetchError, UnsupportedContentError
from side.extract.citeweb import cite_web
from side.extract.claims import Citation, Claim
from side.extract.refnames import can_name, propose_ref_name, ref_tag, reuse_tag
from side.retrieval.pool import bm25_max, order_by
from side.sources.archive import wayback_timestamp
from side.sources.batch import FetchBudget, call_with_deadline, fetch_all
from side.sources.states import LANGUAGE_SAMPLE_CHARS, SourceState, assess_source, detect_language
from side.text import split_sentences
from side.verify.judge import SIDE, JudgeRequest, JudgeVerdict
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.verifier import Evidence, Query, Shortlist, Verdict, Verifier

__all__ = [
    "BETTER_MARGIN", "DEFAULT_CANDIDATES", "DEFAULT_OWN_SOURCES", "REUSE_MESSAGE", "url_depth", "cite_web",
    "SourceStatus", "SourceCopy", "SuggestionOrigin", "Suggestion", "OwnSource", "own_sources",
    "Result", "ArticleResults", "SourceLoader", "Readable", "checkable", "ReadPlan", "LoadedSource",
    "CheckSources", "make_source_loader", "loader_from_config", "source_results", "Pipeline",
    "claim_query", "ReadSource", "ReadSink",
]

if TYPE_CHECKING:
    from side.extract.lead import ArticleLead
    from side.prepared import PreparedCheck
    from side.retrieval.fusion import DocumentHit
    from side.retrieval.retriever import Retriever
    from side.sources.archive import ArchiveReader
    from side.sources.fetch import Source
    from side.verify.cascade import Cascade
    from side.verify.lead import LeadVerdict

log = logging.getLogger(__name__)

#: A candidate must beat the current source by this much support to flag it on its own.
BETTER_MARGIN = 0.15
#: Candidates from the corpus scored per claim.
DEFAULT_CANDIDATES = 3
#: Other sources of the same article verified per weak claim (the most relevant by BM25).
DEFAULT_OWN_SOURCES = 3
#: What a suggestion to reuse one of the article's own sources tells the editor.
REUSE_MESSAGE = "this article already cites a source that supports this"


def url_depth(url: str | None) -> int | None:
    """Number of path segments: 0 for a site's front page (a generic citation)."""
    if not url:
        return None
    path = urlsplit(url.strip()).path
    return len([seg for seg in path.split("/") if seg])


class SourceStatus(StrEnum):
    """Where the cited source's text came from, or why there is none.

    A StrEnum, so the stored and JSON values stay the plain strings they always were.
    """

    CORPUS = "corpus"
    CACHE = "cache"
    FETCHED = "fetched"
    NO_URL = "no_url"
    UNAVAILABLE = "unavailable"
    #: Fetched, but what was read is not the source (a paywall teaser, a wall, a soft 404, a
    #: foreign page...: :mod:`side.sources.states`); never scored, never flagged.
    CANNOT_CHECK = "cannot_check"


class SourceCopy(StrEnum):
    """Which copy of a cited page was read: the page at its URL, or an archived copy of it."""

    LIVE = "live"
    ARCHIVE = "archive"


class SuggestionOrigin(StrEnum):
    """Where a suggested source comes from: a reference the article already has, or the corpus."""

    ARTICLE = "article"
    CORPUS = "corpus"


@dataclass(frozen=True)
class Suggestion:
    """A better Source for a Claim, with the sentence that shows it.

    ``cite`` is what to paste after the claim: a ``{{cite web}}`` for a corpus page, the reuse
    ``<ref name="X" />`` for one of the article's own sources (origin ARTICLE, ``reuse_ref`` the
    name). When that ref has no name yet, ``name_ref`` is the original ref with the proposed
    name added, to paste over it first ("" when the ref is named already).
    """

    url: str
    title: str
    score: float
    evidence: Evidence | None
    cite: str
    doc_id: str = ""
    origin: SuggestionOrigin = SuggestionOrigin.CORPUS
    reuse_ref: str = ""
    name_ref: str = ""

    @property
    def message(self) -> str:
        """What the editor is told of where the source comes from ("" for a corpus page)."""
        return REUSE_MESSAGE if self.origin is SuggestionOrigin.ARTICLE else ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = self.evidence.to_dict() if self.evidence else None
        data["message"] = self.message
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Suggestion:
        """The inverse of :meth:`to_dict` (the results store keeps suggestions as this JSON)."""
        evidence = data.get("evidence")
        return cls(url=str(data["url"]), title=str(data.get("title") or ""), score=float(data["score"]),
                   evidence=Evidence.from_dict(evidence) if evidence else None, cite=str(data.get("cite") or ""),
                   doc_id=str(data.get("doc_id") or ""),
                   origin=SuggestionOrigin(data.get("origin") or SuggestionOrigin.CORPUS),
                   reuse_ref=str(data.get("reuse_ref") or ""), name_ref=str(data.get("name_ref") or ""))


@dataclass(frozen=True)
class OwnSource:
    """A source the article cites, read for the check: a candidate to reuse for another claim.

    ``name`` is its ref's name, or the one Side proposes (``named`` False) when it has none.
    """

    url: str
    citation: Citation
    title: str
    sentences: tuple[str, ...]
    name: str
    named: bool

    def suggestion(self, verdict: Verdict) -> Suggestion:
        """The reuse of this source, with the sentence that supports the claim."""
        return Suggestion(self.url, self.title, verdict.score, verdict.evidence[0] if verdict.evidence else None,
                          reuse_tag(self.name), origin=SuggestionOrigin.ARTICLE, reuse_ref=self.name,
                          name_ref="" if self.named else ref_tag(self.citation, self.name))


def own_sources(results: Iterable[Result]) -> dict[str, OwnSource]:
    """The article's readable cited sources by URL, each with a ref name (its own, or proposed).

    A URL cited by several refs is reused by the first named one; a source whose ref has no
    name is kept only when Side can give its ref with a name (see :func:`can_name`).
    """
    results = list(results)
    taken = {r.claim.citation.name for r in results if r.claim.citation.name}
    by_url: dict[str, list[Result]] = {}
    for result in results:
        url = result.claim.citation.url
        if url and result.source_sentences and result.claim.citation.kind != "short":
            by_url.setdefault(url, []).append(result)
    pool: dict[str, OwnSource] = {}
    for url, uses in by_url.items():
        named = next((r.claim.citation for r in uses if r.claim.citation.name), None)
        citation = named or next((r.claim.citation for r in uses if can_name(r.claim.citation)), None)
        if citation is None:
            continue
        if named is not None:
            name = str(named.name)
        else:
            name = propose_ref_name(citation, taken)
            taken.add(name)
        title = citation.title or uses[0].claim.citation.title or ""
        pool[url] = OwnSource(url, citation, title, tuple(uses[0].source_sentences), name, named is not None)
    return pool


@dataclass
class Result:
    """The outcome for one use of a citation."""

    claim: Claim
    source_status: SourceStatus
    verdict: Verdict | None = None
    source_error: str = ""
    url_depth: int | None = None
    #: 1 when the current source is the best supported; None when it could not be scored.
    rank: int | None = None
    flagged: bool = False
    reasons: list[str] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    #: Which copy of a fetched source was read (None for corpus documents and unread sources) ...
    source_copy: SourceCopy | None = None
    #: ... the URL actually read (after redirects; a snapshot's URL for an archived copy) ...
    source_url: str = ""
    #: ... and why that copy rather than the live page at first try ("" when it was).
    source_fallback: str = ""
    #: Not supported at the talk-page report's operating point (precision >= 0.9 on train data).
    reportable: bool = False
    #: The cited source's sentences while the Pipeline runs (not reported).
    source_sentences: list[str] = field(default_factory=list, repr=False)
    #: The claim's :class:`Shortlist` of those sentences, when a reader made it (not reported).
    source_shortlist: Shortlist | None = field(default=None, repr=False, compare=False)
    #: Who decided the level: "Side", or "LLM: <model>" when the judge's verdict was taken.
    decided_by: str = SIDE
    #: The judge's answer when it was asked (also when its verdict was not taken: see judge_note).
    judge: JudgeVerdict | None = None
    #: Why the judge's verdict is not the one shown, or why it is still to come ("" when neither).
    judge_note: str = ""
    #: The judge's request while the citation waits to be judged later (endpoint down, slow or out
    #: of budget): what the worker stores so nothing is lost.
    judge_request: JudgeRequest | None = field(default=None, repr=False)
    #: A readable source in a language Side's verifier does not read, for the judge (not reported) ...
    foreign_sentences: list[str] = field(default_factory=list, repr=False)
    #: ... and its language code.
    source_language: str = ""

    @property
    def judge_pending(self) -> bool:
        """The citation keeps Side's verdict for now and is to be judged later."""
        return self.judge_request is not None

    @property
    def failure_likelihood(self) -> float | None:
        """1 - support score; what the report is ordered by (None: the citation was not scored)."""
        if self.verdict is None or self.verdict.level is VerdictLevel.CANNOT_CHECK:
            return None
        return round(1.0 - self.verdict.score, 4)

    @property
    def level(self) -> VerdictLevel:
        """What the editor is told: supported, partially / not supported, or cannot check."""
        return self.verdict.level if self.verdict else VerdictLevel.CANNOT_CHECK

    @property
    def level_reason(self) -> str:
        """Why the citation cannot be checked ("" when it could be)."""
        if self.level is not VerdictLevel.CANNOT_CHECK:
            return ""
        if self.verdict is not None:
            return self.verdict.reason or "the source could not be read"
        if self.source_status == SourceStatus.NO_URL:
            return "the citation has no URL to read"
        return self.source_error or "the source could not be read"

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim.to_dict(), "source_status": self.source_status, "source_error": self.source_error,
            "verdict": self.verdict.to_dict() if self.verdict else None, "url_depth": self.url_depth,
            "level": self.level, "level_reason": self.level_reason,
            "rank": self.rank, "flagged": self.flagged, "reportable": self.reportable, "reasons": self.reasons,
            "failure_likelihood": self.failure_likelihood,
            "suggestions": [s.to_dict() for s in self.suggestions],
            "source_copy": self.source_copy, "source_url": self.source_url, "source_fallback": self.source_fallback,
            "decided_by": self.decided_by, "judge": self.judge.to_dict() if self.judge else None,
            "judge_note": self.judge_note, "judge_pending": self.judge_pending,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """The inverse of :meth:`to_dict` (``level`` and ``failure_likelihood`` follow from the verdict)."""
        verdict = data.get("verdict")
        rank, depth = data.get("rank"), data.get("url_depth")
        return cls(
            claim=Claim.from_dict(data["claim"]), source_status=SourceStatus(data["source_status"]),
            verdict=Verdict.from_dict(verdict) if verdict else None, source_error=str(data.get("source_error") or ""),
            url_depth=None if depth is None else int(depth), rank=None if rank is None else int(rank),
            flagged=bool(data.get("flagged")), reportable=bool(data.get("reportable")),
            reasons=[str(r) for r in data.get("reasons", [])],
            suggestions=[Suggestion.from_dict(s) for s in data.get("suggestions", [])],
            source_copy=SourceCopy(data["source_copy"]) if data.get("source_copy") else None,
            source_url=str(data.get("source_url") or ""), source_fallback=str(data.get("source_fallback") or ""),
            decided_by=str(data.get("decided_by") or SIDE),
            judge=JudgeVerdict.from_dict(data["judge"]) if data.get("judge") else None,
            judge_note=str(data.get("judge_note") or ""),
        )


@dataclass
class ArticleResults:
    title: str
    results: list[Result]
    seconds: float = 0.0
    #: The sources fetched and readable in this check (what joins the evidence corpus).
    sources: list[ReadSource] = field(default_factory=list, repr=False)

    def ordered(self) -> list[Result]:
        """Most likely failed verification first; unscored citations last."""
        return sorted(self.results, key=lambda c: (c.failure_likelihood is None, -(c.failure_likelihood or 0.0)))

    def level_counts(self) -> dict[VerdictLevel, int]:
        """Citations per verdict level, every level named (zeros too), in the levels' order."""
        counts = Counter(result.level for result in self.results)
        return {level: counts[level] for level in VerdictLevel}

    def levels_text(self) -> str:
        """The counts in words: "1 supported, 1 partially supported, 1 not supported, 0 cannot check"."""
        return ", ".join(f"{n} {level.text}" for level, n in self.level_counts().items())

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "seconds": round(self.seconds, 2),
                "citations": len(self.results), "flagged": sum(c.flagged for c in self.results),
                "levels": {level.value: n for level, n in self.level_counts().items()},
                "results": [c.to_dict() for c in self.ordered()]}


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


@dataclass(frozen=True)
class ReadSource:
    """A copy of a cited source that was read and judged readable (never a "cannot check"
    page): what a check hands to the evidence corpus, so the corpus grows from every source
    Side reads (see :mod:`side.retrieval.ingest`)."""

    #: The URL as cited.
    cited_url: str
    #: The URL actually read (after redirects; a snapshot's URL for an archived copy).
    url: str
    title: str
    text: str
    sentences: tuple[str, ...] = ()
    #: The page's published date when the fetcher found one, else "".
    date: str = ""
    #: When the copy was fetched (ISO 8601).
    fetched_at: str = ""
    copy: SourceCopy = SourceCopy.LIVE

    @classmethod
    def of(cls, cited_url: str, copy: SourceCopy, source: Source) -> ReadSource:
        return cls(cited_url, source.final_url or source.url, source.title or "", source.text,
                   tuple(source.sentences), source.date or "", source.fetched_at or "", copy)


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


#: One check's citations being judged: its Results, each claim's corpus hits, its own sources.
_Group = tuple[list[Result], list[list], dict[str, OwnSource]]


class Pipeline:
    """Runs the decision flow; holds the loaded verifier and (optional) evidence index."""

    def __init__(self, verifier: Verifier, retriever: Retriever | None = None, load_source: SourceLoader | None = None,
                 candidates: int = DEFAULT_CANDIDATES, flag_threshold: float | None = None,
                 own_sources: int = DEFAULT_OWN_SOURCES, cascade: Cascade | None = None) -> None:
        self.verifier = verifier
        #: The LLM judge's tier (:mod:`side.verify.cascade`); None: Side decides every verdict.
        self.cascade = cascade
        self.retriever = retriever
        self.load_source = load_source or make_source_loader(retriever)
        self.candidates = candidates
        #: The article's other sources verified per weak claim (0: none).
        self.own_sources = own_sources
        self.flag_threshold = verifier.flag_threshold if flag_threshold is None else flag_threshold
        cuts = verifier.levels
        #: Score to level; an explicit ``flag_threshold`` moves the supported cut (and the ones under it).
        #: The verifier decides every level with these cuts (and names the unsupported words then).
        self.levels = cuts if flag_threshold is None else LevelThresholds(
            flag_threshold, min(cuts.not_supported, flag_threshold), min(cuts.report, flag_threshold))

    @classmethod
    def from_config(cls, config: Any, offline: bool = False, index_dir: str | Path | None = None,
                    use_index: bool = True, model_dir: str | Path | None = None,
                    candidates: int = DEFAULT_CANDIDATES, fetch: Callable[[str], Any] | None = None,
                    readable: Readable = checkable, cascade: Cascade | None = None) -> Pipeline:
        """Load the verifier and the evidence index as ``side verify`` does, for long-lived processes.

        ``index_dir`` None means ``config.index_dir`` when one was built there, else no corpus
        suggestions (logged, not an error: a worker without an index still scores citations);
        an explicit ``index_dir`` must exist. ``fetch`` replaces the default cache-aware
        ``fetch_source`` (the worker passes one that retries transient failures); ``offline``
        never fetches. A check's sources are fetched within ``config.fetch``'s budget, archived
        copies read through ``fetch`` too unless ``config.fetch.archive`` is off; ``readable``
        judges each copy read (see :class:`CheckSources`). ``cascade`` None means the one ``[judge]``
        configures (in-process rate budget and cache; none when the judge is off).
        """
        retriever = None
        if use_index:  # first: a missing index is reported before any model loads
            from side.retrieval.backends import load_retriever

            directory = Path(index_dir) if index_dir is not None else Path(config.index_dir)
            if index_dir is None and not directory.is_dir():
                log.info("no evidence index at %s: citations are scored, no corpus suggestions", directory)
            else:
                retriever = load_retriever(directory, config.retrieval.backend, _milvus_settings(config),
                                           encoder_model=config.encoder.model,
                                           k_sparse=config.retrieval.k_sparse, k_dense=config.retrieval.k_dense,
                                           fusion=config.retrieval.fusion,
                                           bm25_max_postings=config.retrieval.bm25_max_postings)
        verifier = Verifier.from_config(config, model_dir)  # settles torch's threads (side.threads)
        if retriever is not None:
            retriever.share_encoder(verifier.encoder)
        loader = loader_from_config(config, retriever, fetch, offline, readable)
        if cascade is None:
            from side.verify.cascade import Cascade as _Cascade

            cascade = _Cascade.from_config(config)
        return cls(verifier, retriever, loader, candidates=candidates, own_sources=config.verifier.own_sources,
                   cascade=cascade)

    def verify_claims(self, claims: list[Claim], progress: Callable[[int], object] | None = None,
                      on_read: ReadSink | None = None) -> list[Result]:
        """Results for ``claims``; ``on_read`` is told of each source fetched and readable.

        The two halves a split deployment runs in different processes, here one after the
        other: :meth:`prepare` (no model) and :meth:`judge` (the models).
        """
        return self.judge(claims, self.prepare(claims, on_read), progress)

    def prepare(self, claims: list[Claim], on_read: ReadSink | None = None) -> PreparedCheck:
        """The part of :meth:`verify_claims` that needs no model (see :class:`side.prepared.Preparer`)."""
        from side.prepared import Preparer

        shortlist = getattr(self.verifier, "shortlist", Preparer.shortlist)
        neighbours = getattr(self.verifier, "shortlist_neighbours", Preparer.neighbours)
        return Preparer(self.load_source, shortlist, neighbours).prepare(claims, on_read)

    def judge(self, claims: list[Claim], prepared: PreparedCheck,
              progress: Callable[[int], object] | None = None) -> list[Result]:
        """The Results of ``claims`` from their :meth:`prepare`'d sources: retrieval, the models
        and the decision, eight claims at a time."""
        results = prepared.results(claims)
        pool = own_sources(results)  # the sentences stay here until every claim is decided
        hits = self._retrieve(claims)
        for start in range(0, len(claims), 8):
            self._score([(results[start : start + 8], hits[start : start + 8], pool)])
            if progress:
                progress(len(results[start : start + 8]))
        return results

    def judge_many(self, checks: list[tuple[list[Claim], PreparedCheck]]) -> list[list[Result]]:
        """:meth:`judge` for several checks at once: every claim of every check goes through
        each model in one pass, so the models batch across checks (by length, see
        :meth:`side.verify.crossencoder.CrossEncoder.predict`). Each check's own sources are
        offered only to its own claims."""
        everything = [prepared.results(claims) for claims, prepared in checks]
        hits = self._retrieve([claim for claims, _ in checks for claim in claims])
        groups: list[_Group] = []
        for results in everything:
            groups.append((results, hits[: len(results)], own_sources(results)))
            hits = hits[len(results) :]
        self._score(groups)
        return everything

    def verify_lead(self, lead: ArticleLead) -> list[LeadVerdict]:
        """Each uncited lead claim checked against the article's body (one Source for all of
        them, see :mod:`side.verify.lead`), levelled with this pipeline's cuts."""
        from side.verify.lead import check_lead

        return check_lead(self.verifier, lead, self.levels)

    def verify_article(self, wikitext: str, title: str, context_words: int = 100,
                      progress: Callable[[int], object] | None = None) -> ArticleResults:
        from side.extract.wikitext import extract_claims

        started = time.monotonic()
        claims = extract_claims(wikitext, title, context_words)
        read: list[ReadSource] = []
        results = self.verify_claims(claims, progress, read.append)
        return ArticleResults(title, results, time.monotonic() - started, read)

    def _retrieve(self, claims: list[Claim]) -> list[list]:
        if self.retriever is None or not claims or self.candidates <= 0:
            return [[] for _ in claims]
        return self.retriever.search_batch([c.sparse_query for c in claims], [c.dense_query for c in claims],
                                           k=self.candidates + 1, mode="hybrid")

    def _score(self, groups: list[_Group]) -> None:
        """Decide every Result of ``groups``, all their (claim, source) pairs verified together."""
        items: list[tuple[Query, list[str]]] = []
        shortlists: list[Shortlist | None] = []
        owners: list[tuple[Result, DocumentHit | None]] = []
        for results, hits, _ in groups:
            for result, doc_hits in zip(results, hits, strict=False):
                query = claim_query(result.claim)
                if result.source_sentences:
                    items.append((query, result.source_sentences))
                    shortlists.append(result.source_shortlist)
                    owners.append((result, None))
                for hit in doc_hits:
                    if hit.url and hit.url == result.claim.citation.url:
                        continue
                    passages = [h.passage.text for h in hit.passages] or [hit.best_passage.text]
                    items.append((query, [s for p in passages for s in split_sentences(p)]))
                    shortlists.append(None)
                    owners.append((result, hit))
        # Only the cited source's verdict shows its unsupported words: a corpus candidate's are never read.
        verdicts = self.verifier.verify_many(items, self.levels, [hit is None for _, hit in owners],
                                             shortlists=shortlists)
        found: dict[int, list[tuple[Any, Verdict]]] = {}
        for (result, hit), verdict in zip(owners, verdicts, strict=False):
            if hit is None:
                result.verdict = verdict
            else:
                found.setdefault(id(result), []).append((hit, verdict))
        if self.cascade is not None:
            self.cascade.run([result for results, _, _ in groups for result in results])
        for results, _, _ in groups:
            for result in results:
                self._decide(result, found.get(id(result), [])[: self.candidates])
                result.source_sentences, result.source_shortlist, result.foreign_sentences = [], None, []
        self._reuse([(results, pool) for results, _, pool in groups if pool])

    def _reuse(self, groups: list[tuple[list[Result], dict[str, OwnSource]]]) -> None:
        """Suggest, first, the article's own source that best supports each weak claim.

        Only a claim whose citation was scored partially or not supported is looked at; at most
        ``own_sources`` other sources each, the most relevant by BM25 first, verified together.
        A source is suggested when its level is supported and it beats the citation's own score.
        """
        items: list[tuple[Query, list[str]]] = []
        owners: list[tuple[Result, OwnSource]] = []
        for results, pool in groups:
            for result in results:
                if self.own_sources <= 0 or result.level not in _WEAK:
                    continue
                others = [s for url, s in pool.items() if url != result.claim.citation.url]
                if len(others) > self.own_sources:
                    scores = bm25_max(result.claim.text, [s.sentences for s in others])
                    others = [others[n] for n in order_by(scores)[: self.own_sources]]
                query = claim_query(result.claim)
                for source in others:
                    items.append((query, list(source.sentences)))
                    owners.append((result, source))
        best: dict[int, tuple[OwnSource, Verdict]] = {}
        verdicts = self.verifier.verify_many(items, self.levels, [False] * len(items)) if items else []
        for (result, source), verdict in zip(owners, verdicts, strict=False):
            current = result.verdict.score if result.verdict else 0.0
            if verdict.level is not VerdictLevel.SUPPORTED or verdict.score <= current:
                continue
            if id(result) not in best or verdict.score > best[id(result)][1].score:
                best[id(result)] = (source, verdict)
        for result in (result for results, _ in groups for result in results):
            if id(result) in best:
                source, verdict = best[id(result)]
                result.suggestions.insert(0, source.suggestion(verdict))
                result.reasons.append(f'{REUSE_MESSAGE}: ref "{source.name}" ({verdict.score:.2f})')

    def _decide(self, result: Result, candidates: list[tuple[Any, Verdict]]) -> None:
        candidates = sorted(candidates, key=lambda hv: -hv[1].score)
        current = result.verdict.score if result.verdict and result.level is not VerdictLevel.CANNOT_CHECK else None
        better = [(h, v) for h, v in candidates if current is None or v.score > current]
        result.suggestions = [
            Suggestion(h.url, h.title, v.score, v.evidence[0] if v.evidence else None, cite_web(h.url, h.title),
                       h.doc_id)
            for h, v in (better if current is not None else candidates) if v.score >= self.flag_threshold
        ]
        if result.url_depth == 0:
            result.reasons.append("generic URL (a site's front page)")
        if result.judge_note:
            result.reasons.append(result.judge_note)
        if result.verdict is None:
            if result.source_status == SourceStatus.NO_URL:
                result.reasons.append("citation has no URL to verify")
            elif result.source_status == SourceStatus.CANNOT_CHECK:
                result.reasons.append(f"cannot check: {result.source_error}")
            else:
                result.reasons.append(f"source unavailable: {result.source_error}")
            return
        if result.verdict.reason:
            result.reasons.append(result.verdict.reason)
        if result.level is VerdictLevel.CANNOT_CHECK:  # nothing was scored: never flagged, never reported
            return
        current = result.verdict.score  # the citation's own score, now known to exist
        result.rank = 1 + len(better)
        if result.level.needs_review:
            result.flagged = True
            if result.decided_by != SIDE:  # the judge's level; a talk page reports Side's own only
                result.reasons.append(f"{result.level.text} ({result.decided_by})")
            else:
                result.reasons.append(f"{result.level.text}: support {current:.2f} below {self.flag_threshold:.2f}")
                result.reportable = self.levels.reportable(result.level, current)
        if better and better[0][1].score >= current + BETTER_MARGIN:
            result.flagged = True
            result.reasons.append(_better_reason(better[0], bool(result.suggestions)))


#: The levels at which the article's own sources are searched for one that supports the claim.
_WEAK = frozenset({VerdictLevel.PARTIALLY_SUPPORTED, VerdictLevel.NOT_SUPPORTED})


def _milvus_settings(config: Any) -> Any:
    """MilvusSettings of ``config`` when its retrieval backend is milvus (imports no pymilvus)."""
    if config.retrieval.backend != "milvus":
        return None
    from side.retrieval.milvus import MilvusSettings

    return MilvusSettings.from_config(config)


def _better_reason(best: tuple[Any, Verdict], suggested: bool) -> str:
    """Name the page that outscores the citation, so a patroller can look at it.

    A page can outscore a weak citation and still fall below the flag threshold that suggestions
    need; the reason then says so, instead of promising a suggestion the report does not show.
    """
    hit, verdict = best
    name = hit.title or hit.url or "a corpus page"
    why = f"corpus page \"{name}\" supports the claim better ({verdict.score:.2f})"
    return why if suggested else f"{why}, though too weakly to suggest"


def claim_query(claim: Claim) -> Query:
    return Query(claim.text, claim.article_title, claim.section_path, claim.left_context)
