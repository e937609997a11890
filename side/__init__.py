"""Side: citation verification for Wikipedia.

Find citations that probably do not support their claim, and suggest a better source
(after Petroni et al. 2022). The library is importable with no server running; the bot,
workers and web service depend on it, never the other way round.

The package is laid out along the data's way (docs/architecture.md): edit -> citation
(:mod:`side.extract`) -> source (:mod:`side.sources`) -> evidence and verdict (:mod:`side.verify`,
with :mod:`side.retrieval` for the evidence corpus) -> result (:mod:`side.pipeline`). Training
and evaluation (:mod:`side.training`, :mod:`side.evaluation`) and the command line
(:mod:`side.cli`) sit beside it. Names below are re-exported lazily, so ``import side`` loads
no model library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports
from side.config import Config, load_config
from side.errors import SideError

if TYPE_CHECKING:
    from side.extract.claims import Citation, Claim
    from side.extract.wikitext import extract_claims
    from side.pipeline import ArticleResults, Pipeline, Result, Suggestion
    from side.retrieval.corpus import Corpus, Document, Passage
    from side.retrieval.retriever import Retriever
    from side.sources.fetch import Source, fetch_source
    from side.verify.verifier import Evidence, Query, Verdict, Verifier

__all__ = [
    "ArticleResults", "Citation", "Claim", "Config", "Corpus", "Document", "Evidence", "Passage", "Pipeline",
    "Query", "Result", "Retriever", "SideError", "Source", "Suggestion", "Verdict", "Verifier",
    "extract_claims", "fetch_source", "load_config",
]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(__name__, {
    "Citation": "side.extract.claims", "Claim": "side.extract.claims",
    "extract_claims": "side.extract.wikitext",
    "Source": "side.sources.fetch", "fetch_source": "side.sources.fetch",
    "Corpus": "side.retrieval.corpus", "Document": "side.retrieval.corpus", "Passage": "side.retrieval.corpus",
    "Retriever": "side.retrieval.retriever",
    "Evidence": "side.verify.verifier", "Query": "side.verify.verifier", "Verdict": "side.verify.verifier",
    "Verifier": "side.verify.verifier",
    "ArticleResults": "side.pipeline", "Pipeline": "side.pipeline", "Result": "side.pipeline",
    "Suggestion": "side.pipeline",
})
