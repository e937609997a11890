"""The retrieval engine: the evidence corpus and its hybrid (BM25 + dense) index.

A :class:`Corpus` of :class:`Document` objects split into :class:`Passage` objects; a
:class:`Retriever` finds the passages nearest a claim, for evidence and for better sources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports

if TYPE_CHECKING:
    from side.retrieval.corpus import Corpus, Document, Passage, build_corpus
    from side.retrieval.encoder import Encoder, shared_encoder
    from side.retrieval.fusion import DocumentHit, Hit
    from side.retrieval.retriever import Retriever, build_index

__all__ = [
    "Corpus", "Document", "DocumentHit", "Encoder", "Hit", "Passage", "Retriever", "build_corpus",
    "build_index", "shared_encoder",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "Corpus": "side.retrieval.corpus",
    "Document": "side.retrieval.corpus",
    "Passage": "side.retrieval.corpus",
    "build_corpus": "side.retrieval.corpus",
    "DocumentHit": "side.retrieval.fusion",
    "Hit": "side.retrieval.fusion",
    "Retriever": "side.retrieval.retriever",
    "build_index": "side.retrieval.retriever",
    "Encoder": "side.retrieval.encoder",
    "shared_encoder": "side.retrieval.encoder",
})
