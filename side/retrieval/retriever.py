"""The retrieval engine: BM25 and dense passage indexes, fused, grouped into documents.

The parts live beside this module: :mod:`side.retrieval.sparse` (BM25),
:mod:`side.retrieval.dense` (faiss), :mod:`side.retrieval.fusion` (merging and grouping); the
:class:`Retriever` here queries them together and :func:`build_index` builds them.

Side retrieves with a sparse index (BM25, queried with the sentence before the citation plus
the article title) and a dense one (queried with ``title [SEP] section [SEP] context [CIT]``)
and merges their top-k lists, so the two query strings are separate arguments everywhere.

Fusion. ``rrf`` is reciprocal-rank fusion (Cormack et al. 2009, k=60). ``union`` keeps the
union of both top-k lists as Side does; the merged set needs an order, and it is ordered by
the sum of each list's min-max normalised score (CombSUM; a passage missing from a list gets
0 for it). Normalised scores keep the score gaps that ranks throw away. Measured with
``side eval retrieval`` (dev splits, MiniLM, 2-core CPU): union beat RRF on SciFact R@3 / nDCG@10
(0.879 / 0.862 vs 0.866 / 0.832; R@10 0.953 vs 0.954), on WiCE page recovery P@1 (0.969 vs
0.937) and on evidence-sentence R@5 (0.615 vs 0.589), so ``union`` is the default.

An index directory holds the corpus (see :mod:`side.retrieval.corpus`), ``sparse/`` (bm25s's own
``.npy`` + JSON files), ``dense.faiss``, ``embeddings.npy`` (one row per passage) with
``embeddings.json`` (each row's passage content hash, so rebuilding never re-embeds a passage
already seen) and ``index.json`` (settings, the corpus fingerprint it was built from and the
encoder that embedded it: loading it with another encoder is refused).

Backends. That is the ``embedded`` backend. The ``milvus`` one (:mod:`side.retrieval.milvus`)
keeps the same corpus and embedding cache in the directory but indexes and searches the
passages in a Milvus collection; :mod:`side.retrieval.backends` chooses by ``retrieval.backend``,
and both give a :class:`Retriever`, so the pipeline, ``side search`` and the evaluation do not
care which. This module never imports a backend.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from side.data import read_json_object
from side.errors import IndexNotFoundError, InputError
from side.retrieval.corpus import Corpus, Passage
from side.retrieval.dense import DenseIndex, check_encoder, embed_passages, name_of
from side.retrieval.encoder import DEFAULT_ENCODER
from side.retrieval.fusion import FUSIONS, DocumentHit, Hit, Ranked, fuse, group_by_document, single
from side.retrieval.sparse import SparseIndex

__all__ = [
    "DENSE_FILE", "INDEX_FILE", "INDEX_FORMAT", "MODES", "SPARSE_DIR", "Retriever", "build_index", "corpus_ref",
    "read_index_meta",
]

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
INDEX_FILE = "index.json"
SPARSE_DIR = "sparse"
DENSE_FILE = "dense.faiss"
MODES = ("sparse", "dense", "hybrid")

class Retriever:
    """Sparse, dense or hybrid passage retrieval over one corpus, results grouped by document."""

    def __init__(self, corpus: Corpus, sparse: SparseIndex, dense: DenseIndex, k_sparse: int = 100,
                 k_dense: int = 100, fusion: str = "union") -> None:
        if fusion not in FUSIONS:
            raise InputError(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
        self.corpus = corpus
        self.sparse = sparse
        self.dense = dense
        self.k_sparse = k_sparse
        self.k_dense = k_dense
        self.fusion = fusion

    @classmethod
    def load(cls, index_dir: str | Path, encoder: Any = None, *, encoder_model: str | None = None,
             bm25_max_postings: int = 0, **settings: Any) -> Retriever:
        """The retriever saved by :func:`build_index`; IndexNotFoundError when there is none, and
        ConfigError when ``encoder`` or the configured ``encoder_model`` is not the one that built it.
        ``bm25_max_postings`` (``retrieval.bm25_max_postings``) prunes BM25's lists as it loads them
        (side.retrieval.sparse); the stored index is whole, so it needs no rebuild."""
        index_dir = Path(index_dir)
        meta = read_index_meta(index_dir)
        built_by = str(meta.get("encoder", DEFAULT_ENCODER))
        check_encoder(built_by, index_dir, encoder, encoder_model)
        corpus = Corpus.load(index_dir / meta.get("corpus_dir", "."))
        sparse = SparseIndex.load(index_dir / SPARSE_DIR, bm25_max_postings)
        dense = DenseIndex.load(index_dir / DENSE_FILE, meta.get("faiss", "flat"), encoder, built_by)
        return cls(corpus, sparse, dense, **settings)

    def share_encoder(self, encoder: Any) -> None:
        """Embed queries with ``encoder`` (the verifier's): one bi-encoder, in one number format.
        ConfigError when it is not the encoder that built the index."""
        check_encoder(self.dense.built_by, "this retriever", encoder)
        self.dense.encoder = encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Dense query vectors, to embed a batch once and search it several ways."""
        return self.dense.embed(texts)

    def passages_for(self, doc_id: str) -> list[Passage]:
        return self.corpus.passages_for(doc_id)

    def _ranked(self, sparse_queries: Sequence[str], dense_queries: Sequence[str] | np.ndarray,
                depth: int, mode: str, fusion: str) -> list[Ranked]:
        if mode not in MODES:
            raise InputError(f"unknown retrieval mode {mode!r} ({', '.join(MODES)})")
        n = len(sparse_queries)
        if mode == "sparse":
            s = self.sparse.retrieve(sparse_queries, max(self.k_sparse, depth))
            return [single(s[0][i], s[1][i], dense=False) for i in range(n)]
        if mode == "dense":
            d = self.dense.retrieve(dense_queries, max(self.k_dense, depth))
            return [single(d[0][i], d[1][i], dense=True) for i in range(n)]
        s = self.sparse.retrieve(sparse_queries, max(self.k_sparse, depth))
        d = self.dense.retrieve(dense_queries, max(self.k_dense, depth))
        return [fuse((s[0][i], s[1][i]), (d[0][i], d[1][i]), fusion) for i in range(n)]

    def retrieve_passages(self, sparse_queries: Sequence[str],
                          dense_queries: Sequence[str] | np.ndarray | None = None, k: int = 100,
                          mode: str = "hybrid", fusion: str | None = None) -> list[list[Hit]]:
        """Top passages of each query (a batch: dense queries are embedded together)."""
        dense_queries = sparse_queries if dense_queries is None else dense_queries
        if len(dense_queries) != len(sparse_queries):
            raise InputError("sparse and dense query lists differ in length")
        ranked = self._ranked(sparse_queries, dense_queries, k, mode, fusion or self.fusion)
        passages = self.corpus.passages
        return [[Hit(passages[p], s, sr, dr) for p, s, sr, dr in row[:k]] for row in ranked]

    def search_batch(self, sparse_queries: Sequence[str],
                     dense_queries: Sequence[str] | np.ndarray | None = None, k: int = 10,
                     mode: str = "hybrid", fusion: str | None = None) -> list[list[DocumentHit]]:
        """Top ``k`` documents of each query; passages are fetched deep enough to fill ``k``."""
        depth = max(self.k_sparse, self.k_dense, 3 * k)
        rows = self.retrieve_passages(sparse_queries, dense_queries, depth, mode, fusion)
        return [group_by_document(hits, k) for hits in rows]

    def search(self, sparse_query: str, dense_query: str | None = None, k: int = 10,
               mode: str = "hybrid", fusion: str | None = None) -> list[DocumentHit]:
        """Top ``k`` documents for one claim (Side's two queries; the dense one defaults to the sparse)."""
        return self.search_batch([sparse_query], [dense_query or sparse_query], k, mode, fusion)[0]


def read_index_meta(index_dir: str | Path) -> dict[str, Any]:
    path = Path(index_dir) / INDEX_FILE
    if not path.is_file():
        raise IndexNotFoundError(f"no index in {index_dir} (run `side index build`)")
    meta = read_json_object(path, "the index's")
    if not isinstance(meta.get("corpus_dir", "."), str):
        raise InputError(f"the index's {path} names no corpus folder (corpus_dir)")
    return meta


def _is_current(directory: Path, corpus: Corpus, faiss_index: str, stemmer: str, encoder: str) -> bool:
    try:
        meta = read_index_meta(directory)
    except IndexNotFoundError:
        return False
    return (meta.get("format") == INDEX_FORMAT and meta.get("fingerprint") == corpus.fingerprint
            and meta.get("encoder", DEFAULT_ENCODER) == encoder
            and meta.get("faiss") == faiss_index and meta.get("stemmer_requested") == stemmer
            and (directory / DENSE_FILE).is_file() and (directory / SPARSE_DIR / "sparse.json").is_file())


def corpus_ref(corpus: Corpus, directory: Path) -> str:
    """Where an index's meta file finds its corpus: relative to the index directory when inside it."""
    try:
        return str(corpus.directory.resolve().relative_to(directory.resolve())) or "."
    except ValueError:
        return str(corpus.directory.resolve())


def build_index(corpus: Corpus, directory: str | Path, encoder: Any = None, faiss_index: str = "flat",
                stemmer: str = "auto", progress: bool = True) -> Retriever:
    """Sparse and dense indexes of ``corpus`` in ``directory``, embedded by ``encoder`` (None: the
    default one) and recorded as its; no work if they are current (same corpus, settings and encoder)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if _is_current(directory, corpus, faiss_index, stemmer, name_of(encoder)):
        log.info("index in %s is up to date", directory)
        return Retriever.load(directory, encoder)
    texts = [p.index_text for p in corpus.passages]
    sparse = SparseIndex.build(texts, stemmer, progress)
    sparse.save(directory / SPARSE_DIR)
    vectors = embed_passages(corpus.passages, directory, encoder, progress)
    dense = DenseIndex.build(vectors, faiss_index, encoder)
    dense.save(directory / DENSE_FILE)
    meta = {"format": INDEX_FORMAT, "corpus_dir": corpus_ref(corpus, directory),
            "fingerprint": corpus.fingerprint, "faiss": faiss_index, "stemmer_requested": stemmer,
            "stemmer": sparse.stemmer_name, "n_documents": len(corpus), "n_passages": len(texts),
            "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0, "encoder": name_of(encoder)}
    (directory / INDEX_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return Retriever(corpus, sparse, dense)
