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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from side.extract.citeweb import cite_web
from side.extract.claims import Claim
from side.reading import (
    CheckSources,
    LoadedSource,
    Readable,
    ReadPlan,
    ReadSink,
    SourceLoader,
    checkable,
    loader_from_config,
    make_source_loader,
    source_results,
)
from side.results import (
    REUSE_MESSAGE,
    ArticleResults,
    OwnSource,
    ReadSource,
    Result,
    SourceCopy,
    SourceStatus,
    Suggestion,
    SuggestionOrigin,
    own_sources,
    url_depth,
)
from side.retrieval.pool import bm25_max, order_by
from side.text import split_sentences
from side.verify.cascade import note_instructions
from side.verify.judge import SIDE
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.severity import missing_and_severity
from side.verify.verifier import Query, Shortlist, Verdict, Verifier

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
    from side.verify.cascade import Cascade
    from side.verify.lead import LeadVerdict

log = logging.getLogger(__name__)

#: A candidate must beat the current source by this much support to flag it on its own.
BETTER_MARGIN = 0.15
#: Candidates from the corpus scored per claim.
DEFAULT_CANDIDATES = 3
#: Other sources of the same article verified per weak claim (the most relevant by BM25).
DEFAULT_OWN_SOURCES = 3

#: One check's citations being scored: its Results, each claim's corpus hits, its own sources.
_Group = tuple[list[Result], list[list], dict[str, OwnSource]]


class Pipeline:
    """Runs the decision flow; holds the loaded verifier and (optional) evidence index."""

    def __init__(self, verifier: Verifier, retriever: Retriever | None = None, load_source: SourceLoader | None = None,
                 candidates: int = DEFAULT_CANDIDATES, flag_threshold: float | None = None,
                 own_sources: int = DEFAULT_OWN_SOURCES, cascade: Cascade | None = None) -> None:
        self.verifier = verifier
        #: The LLM judge's tier (:mod:`side.verify.cascade`); None: Side decides every verdict. Its
        #: judge's quotes are scored by this verifier (no second model is loaded).
        self.cascade = cascade
        if cascade is not None:
            cascade.use_verifier(verifier)
        self.retriever = retriever
        self.load_source = load_source or make_source_loader(retriever)
        self.candidates = candidates
        #: The article's other sources verified per weak claim (0: none).
        self.own_sources = own_sources
        self.flag_threshold = verifier.flag_threshold if flag_threshold is None else flag_threshold
        cuts = verifier.levels
        #: Score to level; an explicit ``flag_threshold`` moves the supported cut (and the ones under it).
        #: The verifier decides every level with these cuts (and names the unsupported words then).
        #: The sure flag cut moves down with it (never above the supported cut).
        self.levels = cuts if flag_threshold is None else LevelThresholds(
            flag_threshold, min(cuts.not_supported, flag_threshold), min(cuts.report, flag_threshold),
            min(float(cuts.flag), flag_threshold))  # type: ignore[arg-type]
        if cascade is not None:  # the judge's "uncertain" band is exactly Side's unsure band
            cascade.use_levels(self.levels)

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
        other: :meth:`prepare` (no model) and :meth:`score` (the models).
        """
        return self.score(claims, self.prepare(claims, on_read), progress)

    def prepare(self, claims: list[Claim], on_read: ReadSink | None = None) -> PreparedCheck:
        """The part of :meth:`verify_claims` that needs no model (see :class:`side.prepared.Preparer`)."""
        from side.prepared import Preparer

        shortlist = getattr(self.verifier, "shortlist", Preparer.shortlist)
        neighbours = getattr(self.verifier, "shortlist_neighbours", Preparer.neighbours)
        return Preparer(self.load_source, shortlist, neighbours).prepare(claims, on_read)

    def score(self, claims: list[Claim], prepared: PreparedCheck,
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

    def score_many(self, checks: list[tuple[list[Claim], PreparedCheck]]) -> list[list[Result]]:
        """:meth:`score` for several checks at once: every claim of every check goes through
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
        for results, _, _ in groups:
            for result in results:
                note_instructions(result)  # a page written to steer an LLM says so on its Result
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
        # Sure or unsure: a level the judge decided is sure (it was asked because Side was not); Side's
        # own needs-review level is sure below the sure flag cut and its guess from there up.
        flag = float(self.levels.flag)  # type: ignore[arg-type]
        if result.level.needs_review:
            result.missing, result.severity = missing_and_severity(  # the verdict is final: after the judge
                result.verdict.unsupported, result.claim.text, result.claim.living_person)
            if result.decided_by != SIDE:  # the judge's level; a talk page reports Side's own only
                result.flagged = True
                result.reasons.append(f"{result.level.text} ({result.decided_by})")
            elif self.levels.unsure(result.level, current):
                result.unsure = True
                result.reasons.append(f"{result.level_text}: support {current:.2f}, between the flag cut "
                                      f"{flag:.2f} and the supported cut {self.levels.supported:.2f}")
            else:
                result.flagged = True
                result.reasons.append(f"{result.level.text}: support {current:.2f} below {flag:.2f}")
                result.reportable = self.levels.reportable(result.level, current)
        if better and better[0][1].score >= current + BETTER_MARGIN:
            # a corpus page that clearly outscores the citation flags a sure one (supported too); an
            # unsure Result only names it: unsure is never flagged
            result.flagged = result.flagged or not result.unsure
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
