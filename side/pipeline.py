"""Side's decision flow: score each citation's source, look for better ones, and suggest.

For every claim of an article: get the cited source (evidence corpus, disk cache, or fetch:
all of a check's sources at once, within one time budget, see :mod:`side.sources.batch`),
score the claim against it, retrieve candidates from the corpus (hybrid: 100 sparse + 100 dense
passages, grouped to documents), score those with the same verifier, rank the existing
citation among them, and flag it when its support is below the threshold chosen on dev data,
or when a candidate supports the claim clearly better. Flags also carry Side's URL-depth signal:
citations to a bare domain fail verification far more often than deep links.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from side.errors import SourceFetchError
from side.extract.claims import Claim
from side.sources.batch import FetchBudget, call_with_deadline, fetch_all
from side.sources.states import assess_source
from side.text import split_sentences
from side.verify.verifier import Evidence, Query, Verdict, Verifier

__all__ = [
    "BETTER_MARGIN", "DEFAULT_CANDIDATES", "url_depth", "cite_web", "SourceStatus", "Suggestion",
    "Result", "ArticleResults", "SourceLoader", "CheckSources", "make_source_loader", "Pipeline",
    "claim_query", "fetched_outcome",
]

if TYPE_CHECKING:
    from side.retrieval.fusion import DocumentHit
    from side.retrieval.retriever import Retriever

log = logging.getLogger(__name__)

#: A candidate must beat the current source by this much support to flag it on its own.
BETTER_MARGIN = 0.15
#: Candidates from the corpus scored per claim.
DEFAULT_CANDIDATES = 3


def url_depth(url: str | None) -> int | None:
    """Number of path segments: 0 for a site's front page (a generic citation)."""
    if not url:
        return None
    path = urlsplit(url.strip()).path
    return len([seg for seg in path.split("/") if seg])


def cite_web(url: str, title: str, website: str = "", today: date | None = None) -> str:
    """A ready-to-paste ``{{cite web}}`` for a suggested source."""
    website = website or urlsplit(url).netloc.removeprefix("www.")
    safe = lambda s: s.replace("{{", "").replace("}}", "").replace("|", "{{!}}").strip()
    parts = [f"url={url}", f"title={safe(title) or safe(website)}"]
    if website:
        parts.append(f"website={safe(website)}")
    parts.append(f"access-date={(today or date.today()).isoformat()}")
    return "{{cite web |" + " |".join(parts) + "}}"


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


@dataclass(frozen=True)
class Suggestion:
    """A better Source for a Claim, with the sentence that shows it."""

    url: str
    title: str
    score: float
    evidence: Evidence | None
    cite: str
    doc_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = self.evidence.to_dict() if self.evidence else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Suggestion:
        """The inverse of :meth:`to_dict` (the results store keeps suggestions as this JSON)."""
        evidence = data.get("evidence")
        return cls(url=str(data["url"]), title=str(data.get("title") or ""), score=float(data["score"]),
                   evidence=Evidence.from_dict(evidence) if evidence else None, cite=str(data.get("cite") or ""),
                   doc_id=str(data.get("doc_id") or ""))


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
    #: The cited source's sentences while the Pipeline runs (not reported).
    source_sentences: list[str] = field(default_factory=list, repr=False)

    @property
    def failure_likelihood(self) -> float | None:
        """1 - support score; what the report is ordered by."""
        return None if self.verdict is None else round(1.0 - self.verdict.score, 4)

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim.to_dict(), "source_status": self.source_status, "source_error": self.source_error,
            "verdict": self.verdict.to_dict() if self.verdict else None, "url_depth": self.url_depth,
            "rank": self.rank, "flagged": self.flagged, "reasons": self.reasons,
            "failure_likelihood": self.failure_likelihood,
            "suggestions": [s.to_dict() for s in self.suggestions],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """The inverse of :meth:`to_dict` (``failure_likelihood`` follows from the verdict)."""
        verdict = data.get("verdict")
        rank, depth = data.get("rank"), data.get("url_depth")
        return cls(
            claim=Claim.from_dict(data["claim"]), source_status=SourceStatus(data["source_status"]),
            verdict=Verdict.from_dict(verdict) if verdict else None, source_error=str(data.get("source_error") or ""),
            url_depth=None if depth is None else int(depth), rank=None if rank is None else int(rank),
            flagged=bool(data.get("flagged")), reasons=[str(r) for r in data.get("reasons", [])],
            suggestions=[Suggestion.from_dict(s) for s in data.get("suggestions", [])],
        )


@dataclass
class ArticleResults:
    title: str
    results: list[Result]
    seconds: float = 0.0

    def ordered(self) -> list[Result]:
        """Most likely failed verification first; unscored citations last."""
        return sorted(self.results, key=lambda c: (c.failure_likelihood is None, -(c.failure_likelihood or 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "seconds": round(self.seconds, 2),
                "citations": len(self.results), "flagged": sum(c.flagged for c in self.results),
                "results": [c.to_dict() for c in self.ordered()]}


#: Gets a cited source's sentences: returns (status, sentences, title, error).
SourceLoader = Callable[[str], tuple[SourceStatus, list[str], str, str]]


def fetched_outcome(source: Any) -> tuple[SourceStatus, list[str], str, str]:
    """What a fetched Source gives the flow: its sentences when it reads as the cited document,
    else ``cannot_check`` with the reason (and no sentences, so it is neither scored nor flagged).

    The one place that decides readable or not (:func:`side.sources.states.assess_source`), so
    a fallback (another copy of the page) can ask the same question of what it finds.
    """
    assessment = assess_source(source)
    if not assessment.readable:
        log.info("cannot check %s: %s", getattr(source, "final_url", "") or source.url, assessment.describe())
        return SourceStatus.CANNOT_CHECK, [], source.title or "", assessment.describe()
    return SourceStatus.FETCHED, list(source.sentences), source.title or "", ""


class CheckSources:
    """Corpus first (no network), then ``fetch`` (cache-aware ``fetch_source``), if given.

    Called with one URL it loads that one; :meth:`load_many` loads a whole check's URLs at once
    within ``budget`` (concurrently, bounded per host, time shared fairly). A ``fetch`` that
    takes a ``deadline`` keyword is told when its share of the budget ends.
    """

    def __init__(self, retriever: Retriever | None = None, fetch: Callable[..., Any] | None = None,
                 budget: FetchBudget | None = None) -> None:
        self.retriever = retriever
        self.fetch = fetch
        self.budget = budget or FetchBudget()
        self.by_url: dict[str, str] = {}
        if retriever is not None:
            self.by_url = {d.url: d.doc_id for d in retriever.corpus.documents if d.url}

    def _offline(self, url: str) -> tuple[SourceStatus, list[str], str, str] | None:
        """The outcome that needs no network (corpus, or fetching disabled), else None."""
        if self.retriever is not None and url in self.by_url:
            doc = self.retriever.corpus.document(self.by_url[url])
            return SourceStatus.CORPUS, doc.split(), doc.title, ""
        if self.fetch is None:
            return SourceStatus.UNAVAILABLE, [], "", "fetching disabled (offline)"
        return None

    @staticmethod
    def _fetched(source: Any) -> tuple[SourceStatus, list[str], str, str]:
        return fetched_outcome(source)

    def __call__(self, url: str) -> tuple[SourceStatus, list[str], str, str]:
        offline = self._offline(url)
        if offline is not None:
            return offline
        try:
            source = call_with_deadline(self.fetch, url, None)  # type: ignore[arg-type]
        except SourceFetchError as exc:
            return SourceStatus.UNAVAILABLE, [], "", str(exc)
        return self._fetched(source)

    def load_many(self, urls: Iterable[str]) -> dict[str, tuple[SourceStatus, list[str], str, str]]:
        """Every distinct URL's (status, sentences, title, error), fetching within the budget."""
        out: dict[str, tuple[SourceStatus, list[str], str, str]] = {}
        to_fetch: list[str] = []
        for url in dict.fromkeys(urls):
            offline = self._offline(url)
            if offline is None:
                to_fetch.append(url)
            else:
                out[url] = offline
        for url, fetched in fetch_all(to_fetch, self.fetch, self.budget).items():  # type: ignore[arg-type]
            out[url] = ((SourceStatus.UNAVAILABLE, [], "", str(fetched.error)) if fetched.error
                        else self._fetched(fetched.value))
        return out


def make_source_loader(retriever: Retriever | None = None, fetch: Callable[..., Any] | None = None,
                       budget: FetchBudget | None = None) -> CheckSources:
    """Corpus first (no network), then ``fetch`` (cache-aware ``fetch_source``), if given."""
    return CheckSources(retriever, fetch, budget)


class Pipeline:
    """Runs the decision flow; holds the loaded verifier and (optional) evidence index."""

    def __init__(self, verifier: Verifier, retriever: Retriever | None = None, load_source: SourceLoader | None = None,
                 candidates: int = DEFAULT_CANDIDATES, flag_threshold: float | None = None) -> None:
        self.verifier = verifier
        self.retriever = retriever
        self.load_source = load_source or make_source_loader(retriever)
        self.candidates = candidates
        self.flag_threshold = verifier.flag_threshold if flag_threshold is None else flag_threshold

    @classmethod
    def from_config(cls, config: Any, offline: bool = False, index_dir: str | Path | None = None,
                    use_index: bool = True, model_dir: str | Path | None = None,
                    candidates: int = DEFAULT_CANDIDATES, fetch: Callable[[str], Any] | None = None) -> Pipeline:
        """Load the verifier and the evidence index as ``side verify`` does, for long-lived processes.

        ``index_dir`` None means ``config.index_dir`` when one was built there, else no corpus
        suggestions (logged, not an error: a worker without an index still scores citations);
        an explicit ``index_dir`` must exist. ``fetch`` replaces the default cache-aware
        ``fetch_source`` (the worker passes one that retries transient failures); ``offline``
        never fetches. A check's sources are fetched within ``config.fetch``'s budget.
        """
        from side.sources.fetch import fetch_source

        retriever = None
        if use_index:  # first: a missing index is reported before any model loads
            from side.retrieval.retriever import Retriever

            directory = Path(index_dir) if index_dir is not None else Path(config.index_dir)
            if index_dir is None and not directory.is_dir():
                log.info("no evidence index at %s: citations are scored, no corpus suggestions", directory)
            else:
                retriever = Retriever.load(directory, k_sparse=config.retrieval.k_sparse,
                                           k_dense=config.retrieval.k_dense, fusion=config.retrieval.fusion)
        if offline:
            fetch = None
        elif fetch is None:
            fetch = lambda url, deadline=None: fetch_source(url, config.fetch, config.cache_dir, deadline)
        verifier = Verifier.load(model_dir or (config.verifier.model_dir or None), device=config.verifier.device,
                                 precision=config.verifier.precision)
        if retriever is not None:
            retriever.share_encoder(verifier.encoder)
        loader = make_source_loader(retriever, fetch, FetchBudget.from_config(config.fetch))
        return cls(verifier, retriever, loader, candidates=candidates)

    def verify_claims(self, claims: list[Claim], progress: Callable[[int], object] | None = None) -> list[Result]:
        results = self._source_results(claims)
        hits = self._retrieve(claims)
        for start in range(0, len(claims), 8):
            self._score(results[start : start + 8], hits[start : start + 8])
            if progress:
                progress(len(results[start : start + 8]))
        return results

    def verify_article(self, wikitext: str, title: str, context_words: int = 100,
                      progress: Callable[[int], object] | None = None) -> ArticleResults:
        from side.extract.wikitext import extract_claims

        started = time.monotonic()
        claims = extract_claims(wikitext, title, context_words)
        results = self.verify_claims(claims, progress)
        return ArticleResults(title, results, time.monotonic() - started)

    def _source_results(self, claims: list[Claim]) -> list[Result]:
        """A Result per claim with its cited source loaded; each distinct URL is loaded once, all
        of them together when the loader can (:meth:`CheckSources.load_many`)."""
        results = [Result(c, SourceStatus.NO_URL, url_depth=url_depth(c.citation.url)) for c in claims]
        urls = [c.citation.url for c in claims if c.citation.url]
        load_many = getattr(self.load_source, "load_many", None)
        loaded = load_many(urls) if load_many else {u: self.load_source(u) for u in dict.fromkeys(urls)}
        for result in results:
            url = result.claim.citation.url
            if url:
                status, sentences, _title, error = loaded[url]
                result.source_status, result.source_error, result.source_sentences = status, error, list(sentences)
        return results

    def _retrieve(self, claims: list[Claim]) -> list[list]:
        if self.retriever is None or not claims or self.candidates <= 0:
            return [[] for _ in claims]
        return self.retriever.search_batch([c.sparse_query for c in claims], [c.dense_query for c in claims],
                                           k=self.candidates + 1, mode="hybrid")

    def _score(self, results: list[Result], hits: list[list]) -> None:
        items: list[tuple[Query, list[str]]] = []
        owners: list[tuple[int, DocumentHit | None]] = []
        for n, (result, doc_hits) in enumerate(zip(results, hits, strict=False)):
            query = claim_query(result.claim)
            if result.source_sentences:
                items.append((query, result.source_sentences))
                owners.append((n, None))
            for hit in doc_hits:
                if hit.url and hit.url == result.claim.citation.url:
                    continue
                passages = [h.passage.text for h in hit.passages] or [hit.best_passage.text]
                items.append((query, [s for p in passages for s in split_sentences(p)]))
                owners.append((n, hit))
        verdicts = self.verifier.verify_many(items)
        found: dict[int, list[tuple[Any, Verdict]]] = {}
        for (n, hit), verdict in zip(owners, verdicts, strict=False):
            if hit is None:
                results[n].verdict = verdict
            else:
                found.setdefault(n, []).append((hit, verdict))
        for n, result in enumerate(results):
            self._decide(result, found.get(n, [])[: self.candidates])
            result.source_sentences = []

    def _decide(self, result: Result, candidates: list[tuple[Any, Verdict]]) -> None:
        candidates.sort(key=lambda hv: -hv[1].score)
        current = result.verdict.score if result.verdict else None
        better = [(h, v) for h, v in candidates if current is None or v.score > current]
        result.suggestions = [
            Suggestion(h.url, h.title, v.score, v.evidence[0] if v.evidence else None, cite_web(h.url, h.title),
                       h.doc_id)
            for h, v in (better if current is not None else candidates) if v.score >= self.flag_threshold
        ]
        if result.url_depth == 0:
            result.reasons.append("generic URL (a site's front page)")
        if result.verdict is None:
            if result.source_status == SourceStatus.NO_URL:
                result.reasons.append("citation has no URL to verify")
            elif result.source_status == SourceStatus.CANNOT_CHECK:
                result.reasons.append(f"cannot check: {result.source_error}")
            else:
                result.reasons.append(f"source unavailable: {result.source_error}")
            return
        current = result.verdict.score  # the citation's own score, now known to exist
        result.rank = 1 + len(better)
        if result.verdict.reason:
            result.reasons.append(result.verdict.reason)
        if current < self.flag_threshold:
            result.flagged = True
            result.reasons.append(f"support {current:.2f} below threshold {self.flag_threshold:.2f}")
        if better and better[0][1].score >= current + BETTER_MARGIN:
            result.flagged = True
            result.reasons.append(_better_reason(better[0], bool(result.suggestions)))


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
