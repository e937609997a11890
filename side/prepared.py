"""A check's citations read and prepared for the models: the half of the decision flow that
needs no model.

:meth:`side.pipeline.Pipeline.verify_claims` runs in two halves. :class:`Preparer` does the
first, on CPUs only: it loads each cited source (corpus, disk cache or fetch, archived copies
included, see :class:`side.pipeline.CheckSources`), which extracts its text and splits it into
sentences, and makes each claim's :class:`~side.verify.verifier.Shortlist` of its source (why it
cannot be checked, or the page's BM25 for the claim and the sentences worth embedding). The
outcome is a :class:`PreparedCheck`, a typed record that travels as plain JSON
(:meth:`PreparedCheck.to_dict`). :meth:`side.pipeline.Pipeline.score` does the second half
with the models. One process can run both (``side verify``, ``side-worker``); a split
deployment runs readers that prepare and a worker that scores the prepared checks of many
readers together (``side-worker --role reader|scorer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from side.config import VerifierConfig
from side.extract.claims import Claim
from side.reading import Readable, ReadSink, SourceLoader, checkable, loader_from_config, source_results
from side.results import Result, SourceCopy, SourceStatus, url_depth
from side.verify.verifier import Shortlist, bounded_sentences, shortlist_source

__all__ = ["PreparedCitation", "PreparedCheck", "PreparedCheckError", "Preparer"]


class PreparedCheckError(ValueError):
    """A prepared check that does not match the claims it is scored for."""


@dataclass(frozen=True)
class PreparedCitation:
    """One claim's cited source as read: where its text came from (or why there is none), and
    the claim's shortlist of its sentences."""

    status: SourceStatus
    error: str = ""
    copy: SourceCopy | None = None
    #: The URL actually read ("" when nothing was read).
    url: str = ""
    fallback: str = ""
    #: Index of the source's sentences in :attr:`PreparedCheck.sources` (-1: none).
    source: int = -1
    shortlist: Shortlist | None = None
    #: Index in :attr:`PreparedCheck.sources` of a readable source in a language Side does not
    #: read (-1: none), kept for the LLM judge (see :func:`side.verify.cascade.wants_judge`) ...
    foreign: int = -1
    #: ... and its language code.
    language: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {"status": self.status.value, "error": self.error, "copy": self.copy.value if self.copy else None,
                "url": self.url, "fallback": self.fallback, "source": self.source,
                "shortlist": self.shortlist.to_dict() if self.shortlist else None}
        if self.foreign >= 0:
            data.update(foreign=self.foreign, language=self.language)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreparedCitation:
        """The inverse of :meth:`to_dict`; a record written before ``foreign`` existed loads without one."""
        shortlist = data.get("shortlist")
        return cls(SourceStatus(data["status"]), str(data.get("error") or ""),
                   SourceCopy(data["copy"]) if data.get("copy") else None, str(data.get("url") or ""),
                   str(data.get("fallback") or ""), int(data.get("source", -1)),
                   Shortlist.from_dict(shortlist) if shortlist else None, int(data.get("foreign", -1)),
                   str(data.get("language") or ""))


@dataclass(frozen=True)
class PreparedCheck:
    """A check's citations, in the order of its claims, ready for the models.

    A source cited by several claims is kept once in :attr:`sources`.
    """

    citations: tuple[PreparedCitation, ...]
    #: The sentences of each distinct source read (a foreign source's too, for the judge).
    sources: tuple[tuple[str, ...], ...] = ()

    def results(self, claims: list[Claim]) -> list[Result]:
        """One undecided Result per claim, with its source's sentences and shortlist (or, for a
        source in another language, its sentences and language for the judge)."""
        if len(claims) != len(self.citations):
            raise PreparedCheckError(f"{len(self.citations)} prepared citations for {len(claims)} claims")
        results = []
        for claim, cited in zip(claims, self.citations, strict=True):
            sentences = list(self.sources[cited.source]) if cited.source >= 0 else []
            foreign = list(self.sources[cited.foreign]) if cited.foreign >= 0 else []
            results.append(Result(claim, cited.status, source_error=cited.error,
                                  url_depth=url_depth(claim.citation.url), source_copy=cited.copy,
                                  source_url=cited.url, source_fallback=cited.fallback,
                                  source_sentences=sentences, source_shortlist=cited.shortlist,
                                  foreign_sentences=foreign, source_language=cited.language))
        return results

    def to_dict(self) -> dict[str, Any]:
        return {"citations": [c.to_dict() for c in self.citations], "sources": [list(s) for s in self.sources]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreparedCheck:
        """The inverse of :meth:`to_dict`; a malformed record is a :class:`PreparedCheckError`."""
        try:
            sources = tuple(tuple(str(s) for s in source) for source in data.get("sources", ()))
            citations = tuple(PreparedCitation.from_dict(c) for c in data["citations"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PreparedCheckError(f"malformed prepared check: {type(exc).__name__}: {exc}") from exc
        if any(max(c.source, c.foreign) >= len(sources) for c in citations):
            raise PreparedCheckError("a prepared citation names a source the check does not hold")
        return cls(citations, sources)


class Preparer:
    """Reads a check's cited sources and shortlists each claim's source; loads no model."""

    #: Sentences of one source embedded at most (as :attr:`side.verify.verifier.Verifier.shortlist`).
    shortlist: int = VerifierConfig.shortlist
    neighbours: int = VerifierConfig.shortlist_neighbours

    def __init__(self, load_source: SourceLoader, shortlist: int = VerifierConfig.shortlist,
                 neighbours: int = VerifierConfig.shortlist_neighbours) -> None:
        self.load_source = load_source
        self.shortlist = shortlist
        self.neighbours = neighbours

    @classmethod
    def from_config(cls, config: Any, fetch: Any = None, offline: bool = False,
                    readable: Readable = checkable) -> Preparer:
        """The preparer of ``config``: its fetch settings and the verifier's shortlist settings.

        It reads no evidence index: a cited URL that is a corpus document is fetched (or read
        from the disk cache) rather than taken from the corpus.
        """
        return cls(loader_from_config(config, None, fetch, offline, readable), config.verifier.shortlist,
                   config.verifier.shortlist_neighbours)

    def prepare(self, claims: list[Claim], on_read: ReadSink | None = None) -> PreparedCheck:
        """The :class:`PreparedCheck` of ``claims``; ``on_read`` is told of each source read."""
        results = source_results(self.load_source, claims, on_read)
        by_url: dict[tuple[bool, str], int] = {}
        sources: list[tuple[str, ...]] = []

        def kept(sentences: list[str], foreign: bool, url: str) -> int:
            if (foreign, url) not in by_url:
                by_url[foreign, url] = len(sources)
                sources.append(tuple(sentences))
            return by_url[foreign, url]

        citations = []
        for result in results:
            index, shortlist, foreign = -1, None, -1
            url = result.claim.citation.url or ""
            if result.source_sentences:
                index = kept(result.source_sentences, False, url)
                shortlist = shortlist_source(result.claim.text, bounded_sentences(result.source_sentences),
                                             self.shortlist, self.neighbours)
            if result.foreign_sentences:
                foreign = kept(result.foreign_sentences, True, url)
            citations.append(PreparedCitation(result.source_status, result.source_error, result.source_copy,
                                              result.source_url, result.source_fallback, index, shortlist,
                                              foreign, result.source_language))
        return PreparedCheck(tuple(citations), tuple(sources))

