"""Where a retrieval index lives, chosen by ``retrieval.backend``: the registry of backends.

``embedded`` keeps the index in files beside the corpus (bm25s + faiss, :mod:`side.retrieval.retriever`);
``milvus`` keeps it in a Milvus collection (:mod:`side.retrieval.milvus`). Both give a
:class:`~side.retrieval.retriever.Retriever`. The backends never import this module, so the
dependencies run one way: this registry -> each backend -> the retriever they share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from side.errors import ConfigError
from side.retrieval.corpus import Corpus
from side.retrieval.retriever import Retriever, build_index

__all__ = ["BACKENDS", "load_retriever", "build_retriever"]

#: Where an index lives: files beside the corpus (bm25s + faiss), or a Milvus collection.
BACKENDS = ("embedded", "milvus")


def _check_backend(backend: str, milvus: Any) -> None:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown retrieval backend {backend!r} ({', '.join(BACKENDS)})")
    if backend == "milvus" and milvus is None:
        raise ConfigError("the milvus backend needs Milvus settings (a URI and a collection)")


def load_retriever(index_dir: str | Path, backend: str = "embedded", milvus: Any = None, encoder: Any = None,
                   encoder_model: str | None = None, bm25_max_postings: int = 0, **settings: Any) -> Retriever:
    """The index of ``index_dir`` in ``backend``; ``milvus`` is a MilvusSettings for that backend.
    ``encoder_model`` (``encoder.model``) must name the encoder that built it (ConfigError otherwise).
    ``bm25_max_postings`` prunes the embedded backend's BM25 lists (Milvus runs its own BM25).

    Only the milvus backend imports pymilvus, so the embedded one works without it installed.
    """
    _check_backend(backend, milvus)
    if backend == "embedded":
        return Retriever.load(index_dir, encoder, encoder_model=encoder_model,
                              bm25_max_postings=bm25_max_postings, **settings)
    from side.retrieval.milvus import MilvusRetriever

    return MilvusRetriever.load(index_dir, encoder, milvus=milvus, encoder_model=encoder_model, **settings)


def build_retriever(corpus: Corpus, directory: str | Path, backend: str = "embedded", milvus: Any = None,
                    encoder: Any = None, faiss_index: str = "flat", stemmer: str = "auto",
                    progress: bool = True) -> Retriever:
    """Index ``corpus`` in ``backend`` (see :func:`~side.retrieval.retriever.build_index` and
    :mod:`side.retrieval.milvus`)."""
    _check_backend(backend, milvus)
    if backend == "embedded":
        return build_index(corpus, directory, encoder, faiss_index, stemmer, progress)
    from side.retrieval.milvus import build_milvus_index

    return build_milvus_index(corpus, directory, milvus, encoder, stemmer, progress)

