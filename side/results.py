"""The records of Side's decision flow: a citation's Result, its source's status and copy, the
Suggestions of a better source. The pipeline (:mod:`side.pipeline`) fills them; readers
(:mod:`side.prepared`), the store, the API and the reports read them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from side.extract.claims import Citation, Claim
from side.extract.refnames import can_name, propose_ref_name, ref_tag, reuse_tag
from side.verify.judge import SIDE, JudgeRequest, JudgeVerdict
from side.verify.levels import VerdictLevel
from side.verify.severity import MissingKind, Severity
from side.verify.verifier import Evidence, Shortlist, Verdict

if TYPE_CHECKING:
    from side.sources.fetch import Source

__all__ = [
    "REUSE_MESSAGE", "unsure_text", "url_depth", "SourceStatus", "SourceCopy", "SuggestionOrigin",
    "Suggestion", "OwnSource", "own_sources", "Result", "ReadSource", "ArticleResults",
]



#: What a suggestion to reuse one of the article's own sources tells the editor.
REUSE_MESSAGE = "this article already cites a source that supports this"


def unsure_text(level: VerdictLevel) -> str:
    """A level worded as Side's guess: "probably partially supported; Side is unsure"."""
    return f"probably {level.text}; Side is unsure"


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
    #: Likely fails review: the level needs review and Side is sure of it (its support score is
    #: below the sure flag cut, ``LevelThresholds.flag``, or the LLM judge decided the level), or a
    #: corpus page clearly outscores a sure citation (``side.pipeline``). Never when :attr:`unsure`.
    flagged: bool = False
    #: Side's level needs review (partially / not supported, not cannot check) but its support
    #: score is at or above the sure flag cut: the level is Side's guess ("probably partially
    #: supported; Side is unsure"), never flagged, never reported, ranked after the flags
    #: (:mod:`side.ranking`). A level the judge decided is never unsure: it was asked because
    #: Side was, and its verdict is taken as sure.
    unsure: bool = False
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
    #: Instruction-like phrases the cited source holds ("ignore previous instructions", "answer
    #: supported"...: :data:`side.verify.judge.INSTRUCTION_PATTERNS`), a sign of a page written to
    #: steer an LLM judge; noted for the reader, never obeyed, no change to the verdict.
    source_instructions: list[str] = field(default_factory=list)
    #: For a partially or not supported verdict: what kind of words its source does not back and
    #: how much that matters (:mod:`side.verify.severity`); None otherwise.
    missing: MissingKind | None = None
    severity: Severity | None = None

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
    def level_text(self) -> str:
        """The level in words as shown, worded as Side's guess when it is unsure
        ("probably partially supported; Side is unsure")."""
        return unsure_text(self.level) if self.unsure else self.level.text

    @property
    def failure_score(self) -> float | None:
        """The failure score that leaves Side (:func:`side.ranking.failure_score`): the band of the
        level shown (sure not supported, sure partially, unsure, supported), then Side's own
        failure likelihood inside it; None when not scored."""
        from side.ranking import result_failure_score

        return result_failure_score(self)

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
            "rank": self.rank, "flagged": self.flagged, "unsure": self.unsure, "reportable": self.reportable,
            "reasons": self.reasons,
            "level_text": self.level_text,
            "failure_likelihood": self.failure_likelihood, "failure_score": self.failure_score,
            "suggestions": [s.to_dict() for s in self.suggestions],
            "source_copy": self.source_copy, "source_url": self.source_url, "source_fallback": self.source_fallback,
            "decided_by": self.decided_by, "judge": self.judge.to_dict() if self.judge else None,
            "judge_note": self.judge_note, "judge_pending": self.judge_pending,
            "source_instructions": list(self.source_instructions),
            "missing": self.missing, "severity": self.severity,
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
            flagged=bool(data.get("flagged")), unsure=bool(data.get("unsure")),
            reportable=bool(data.get("reportable")),
            reasons=[str(r) for r in data.get("reasons", [])],
            suggestions=[Suggestion.from_dict(s) for s in data.get("suggestions", [])],
            source_copy=SourceCopy(data["source_copy"]) if data.get("source_copy") else None,
            source_url=str(data.get("source_url") or ""), source_fallback=str(data.get("source_fallback") or ""),
            decided_by=str(data.get("decided_by") or SIDE),
            judge=JudgeVerdict.from_dict(data["judge"]) if data.get("judge") else None,
            judge_note=str(data.get("judge_note") or ""),
            source_instructions=[str(p) for p in data.get("source_instructions") or []],
            missing=MissingKind(data["missing"]) if data.get("missing") in MissingKind._value2member_map_ else None,
            severity=Severity(data["severity"]) if data.get("severity") in Severity._value2member_map_ else None,
        )


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


@dataclass
class ArticleResults:
    title: str
    results: list[Result]
    seconds: float = 0.0
    #: The sources fetched and readable in this check (what joins the evidence corpus).
    sources: list[ReadSource] = field(default_factory=list, repr=False)

    def ordered(self) -> list[Result]:
        """Queue order (:func:`side.ranking.ranked`): sure not supported, sure partially supported,
        unsure, supported, each by Side's failure likelihood; unscored citations last."""
        from side.ranking import ranked

        return ranked(self.results)

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
                "unsure": sum(c.unsure for c in self.results),
                "levels": {level.value: n for level, n in self.level_counts().items()},
                "results": [c.to_dict() for c in self.ordered()]}
