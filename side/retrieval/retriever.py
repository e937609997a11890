"""The retrieval engine: BM25 and dense passage indexes, fused, grouped into documents.

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
already seen) and ``index.json`` (settings and the corpus fingerprint it was built from).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from side.errors import IndexNotFoundError, InputError
from side.retrieval.corpus import Corpus, Passage

log = logging.getLogger(__name__)

#: bm25s sets its own logger to DEBUG on import, which floods the CLI with one line per index
#: built; it is brought back to the levels of its parent loggers.
_BM25S_LOGGER = "bm25s"


def quiet_bm25s():
    """Import bm25s and undo the DEBUG level it sets on its own logger at import time."""
    import bm25s

    logging.getLogger(_BM25S_LOGGER).setLevel(logging.NOTSET)
    return bm25s

INDEX_FORMAT = 1
INDEX_FILE = "index.json"
SPARSE_DIR = "sparse"
DENSE_FILE = "dense.faiss"
EMBEDDINGS_FILE = "embeddings.npy"
EMBEDDING_KEYS_FILE = "embeddings.json"

#: Reciprocal-rank fusion constant (Cormack et al. 2009).
RRF_K = 60
MODES = ("sparse", "dense", "hybrid")
FUSIONS = ("union", "rrf")
FAISS_KINDS = ("flat", "ivf", "hnsw")


# --------------------------------------------------------------------------------------------
# Stemming: PyStemmer's Snowball when installed, else a light plural stripper built in.


def light_stem(word: str) -> str:
    """Harman's S-stemmer: plural endings only, so it never merges unrelated words."""
    if len(word) > 4 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _light_stem_words(words: list[str]) -> list[str]:
    return [light_stem(w) for w in words]


def make_stemmer(name: str = "auto") -> tuple[str, Any]:
    """(resolved name, stemmer for bm25s): ``auto`` picks ``snowball`` if PyStemmer is installed."""
    if name in ("auto", "snowball"):
        try:
            import Stemmer
        except ImportError:
            if name == "snowball":
                raise InputError("this index was stemmed with PyStemmer, which is not installed") from None
            return "light", _light_stem_words
        return "snowball", Stemmer.Stemmer("english")
    if name == "light":
        return "light", _light_stem_words
    if name == "none":
        return "none", None
    raise InputError(f"unknown stemmer {name!r} (auto, snowball, light, none)")


# --------------------------------------------------------------------------------------------
# Sparse index


class SparseIndex:
    """BM25 (bm25s, Lucene variant) over texts; ids are positions in the list it was built from."""

    def __init__(self, bm25: Any, stemmer: str, size: int) -> None:
        self.bm25 = bm25
        self.stemmer_name, self._stemmer = make_stemmer(stemmer)
        self.size = size

    @classmethod
    def build(cls, texts: Sequence[str], stemmer: str = "auto", progress: bool = False) -> SparseIndex:
        bm25s = quiet_bm25s()
        name, stem = make_stemmer(stemmer)
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, show_progress=progress)
        if not tokens.vocab:  # nothing but stopwords: bm25s cannot index it, nothing can match
            return cls(None, name, len(texts))
        bm25 = bm25s.BM25()
        bm25.index(tokens, show_progress=progress)
        return cls(bm25, name, len(texts))

    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(list(queries), stopwords="en", stemmer=self._stemmer,
                              return_ids=False, show_progress=False)

    def retrieve(self, queries: Sequence[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores), each shaped (n_queries, min(k, size)); ids -1 where nothing matched."""
        k = min(k, self.size)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        vocab = self.bm25.vocab_dict if self.bm25 is not None else {}
        tokens = [[t for t in q if t in vocab] for q in self.tokenize(queries)]
        rows = [i for i, t in enumerate(tokens) if t]
        if rows and k > 0:
            found, values = self.bm25.retrieve([tokens[i] for i in rows], k=k, show_progress=False,
                                               n_threads=1)
            ids[rows], scores[rows] = found, values
        ids[scores <= 0] = -1
        return ids, scores

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.bm25 is not None:
            self.bm25.save(str(directory), show_progress=False)
        meta = {"stemmer": self.stemmer_name, "stopwords": "en", "size": self.size,
                "empty": self.bm25 is None}
        (directory / "sparse.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> SparseIndex:
        directory = Path(directory)
        if not (directory / "sparse.json").is_file():
            raise IndexNotFoundError(f"no sparse index in {directory}")
        meta = json.loads((directory / "sparse.json").read_text(encoding="utf-8"))
        bm25s = quiet_bm25s()
        bm25 = None if meta.get("empty") else bm25s.BM25.load(str(directory), show_progress=False)
        return cls(bm25, meta["stemmer"], int(meta["size"]))


# --------------------------------------------------------------------------------------------
# Dense index


def _faiss_index(vectors: np.ndarray, kind: str) -> Any:
    """A faiss inner-product index of ``kind``: exact, or approximate for corpora too big for it."""
    import faiss

    n, dim = vectors.shape
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction, hnsw.hnsw.efSearch = 80, 128
        return hnsw
    if kind == "ivf":
        nlist = max(1, min(int(4 * math.sqrt(max(n, 1))), n // 39 or 1))
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.train(vectors)
        ivf.nprobe = max(1, nlist // 8)
        return ivf
    raise InputError(f"unknown faiss index {kind!r} ({', '.join(FAISS_KINDS)})")


class DenseIndex:
    """Unit-length embeddings in a faiss index; inner product is cosine similarity."""

    def __init__(self, index: Any, kind: str = "flat", encoder: Any = None) -> None:
        self.index = index
        self.kind = kind
        self.encoder = encoder

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "flat", encoder: Any = None) -> DenseIndex:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        index = _faiss_index(vectors, kind)
        if len(vectors):
            index.add(vectors)
        return cls(index, kind, encoder)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.encoder is None:
            from side.retrieval.encoder import shared_encoder

            self.encoder = shared_encoder()
        return self.encoder.encode(list(texts))

    def retrieve(self, queries: Sequence[str] | np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) shaped (n_queries, min(k, size)); ``queries`` are texts or vectors."""
        vectors = queries if isinstance(queries, np.ndarray) else self.embed(queries)
        k = min(k, self.size)
        if k == 0 or len(vectors) == 0:
            return np.zeros((len(vectors), 0), np.int64), np.zeros((len(vectors), 0), np.float32)
        scores, ids = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return ids.astype(np.int64), scores

    def save(self, path: str | Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: str | Path, kind: str = "flat", encoder: Any = None) -> DenseIndex:
        import faiss

        if not Path(path).is_file():
            raise IndexNotFoundError(f"no dense index at {path}")
        return cls(faiss.read_index(str(path)), kind, encoder)


# --------------------------------------------------------------------------------------------
# Results and fusion


@dataclass(frozen=True)
class Hit:
    """One retrieved passage; ranks are 1-based positions in each list (None: not in it)."""

    passage: Passage
    score: float
    sparse_rank: int | None = None
    dense_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"passage": self.passage.to_dict(), "score": self.score,
                "sparse_rank": self.sparse_rank, "dense_rank": self.dense_rank}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hit:
        return cls(Passage.from_dict(data["passage"]), float(data["score"]),
                   data.get("sparse_rank"), data.get("dense_rank"))


@dataclass(frozen=True)
class DocumentHit:
    """A retrieved document, scored by its best passage."""

    doc_id: str
    url: str
    title: str
    score: float
    best_passage: Passage
    passages: tuple[Hit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "url": self.url, "title": self.title, "score": self.score,
                "best_passage": self.best_passage.to_dict(), "passages": [h.to_dict() for h in self.passages]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentHit:
        return cls(data["doc_id"], data.get("url", ""), data.get("title", ""), float(data["score"]),
                   Passage.from_dict(data["best_passage"]),
                   tuple(Hit.from_dict(h) for h in data.get("passages", [])))


#: One ranked list: (passage id, score, sparse rank, dense rank).
Ranked = list[tuple[int, float, int | None, int | None]]


def _ranks(ids: np.ndarray) -> dict[int, int]:
    return {int(p): r for r, p in enumerate(ids, 1) if p >= 0}


def _minmax(ids: np.ndarray, scores: np.ndarray) -> dict[int, float]:
    valid = [(int(p), float(s)) for p, s in zip(ids, scores, strict=False) if p >= 0]
    if not valid:
        return {}
    low, high = min(s for _, s in valid), max(s for _, s in valid)
    span = high - low
    return {p: (s - low) / span if span > 0 else 1.0 for p, s in valid}


def fuse(sparse: tuple[np.ndarray, np.ndarray], dense: tuple[np.ndarray, np.ndarray],
         fusion: str = "union") -> Ranked:
    """Merge one query's sparse and dense (ids, scores) rows into one list, best first."""
    sparse_ranks, dense_ranks = _ranks(sparse[0]), _ranks(dense[0])
    if fusion == "rrf":
        score = {p: 1.0 / (RRF_K + r) for p, r in sparse_ranks.items()}
        for p, r in dense_ranks.items():
            score[p] = score.get(p, 0.0) + 1.0 / (RRF_K + r)
    elif fusion == "union":
        score = _minmax(*sparse)
        for p, s in _minmax(*dense).items():
            score[p] = score.get(p, 0.0) + s
    else:
        raise InputError(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
    order = sorted(score, key=lambda p: (-score[p], p))
    return [(p, score[p], sparse_ranks.get(p), dense_ranks.get(p)) for p in order]


def single(ids: np.ndarray, scores: np.ndarray, dense: bool) -> Ranked:
    return [(int(p), float(s), None if dense else r, r if dense else None)
            for r, (p, s) in enumerate(zip(ids, scores, strict=False), 1) if p >= 0]


def group_by_document(hits: Sequence[Hit], k: int | None = None) -> list[DocumentHit]:
    """Documents in order of their best passage (document score = best passage score)."""
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(hit.passage.doc_id, []).append(hit)
    docs = []
    for doc_id, members in groups.items():
        members.sort(key=lambda h: -h.score)
        best = members[0].passage
        docs.append(DocumentHit(doc_id, best.url, best.title, members[0].score, best, tuple(members)))
    docs.sort(key=lambda d: -d.score)
    return docs[:k] if k is not None else docs


# --------------------------------------------------------------------------------------------
# Retriever


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
    def load(cls, index_dir: str | Path, encoder: Any = None, **settings: Any) -> Retriever:
        """The retriever saved by :func:`build_index`; IndexNotFoundError when there is none."""
        index_dir = Path(index_dir)
        meta = read_index_meta(index_dir)
        corpus = Corpus.load(index_dir / meta.get("corpus_dir", "."))
        sparse = SparseIndex.load(index_dir / SPARSE_DIR)
        dense = DenseIndex.load(index_dir / DENSE_FILE, meta.get("faiss", "flat"), encoder)
        return cls(corpus, sparse, dense, **settings)

    def share_encoder(self, encoder: Any) -> None:
        """Embed queries with ``encoder`` (the verifier's): one bi-encoder, in one number format."""
        self.dense.encoder = encoder

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


# --------------------------------------------------------------------------------------------
# Building


def read_index_meta(index_dir: str | Path) -> dict[str, Any]:
    path = Path(index_dir) / INDEX_FILE
    if not path.is_file():
        raise IndexNotFoundError(f"no index in {index_dir} (run `side index build`)")
    return json.loads(path.read_text(encoding="utf-8"))


def _cached_embeddings(directory: Path) -> dict[str, np.ndarray]:
    """Embeddings already computed in ``directory``, by passage content hash."""
    keys_path, rows_path = directory / EMBEDDING_KEYS_FILE, directory / EMBEDDINGS_FILE
    if not (keys_path.is_file() and rows_path.is_file()):
        return {}
    keys = json.loads(keys_path.read_text(encoding="utf-8"))["keys"]
    rows = np.load(rows_path, allow_pickle=False)
    return dict(zip(keys, rows, strict=False)) if len(keys) == len(rows) else {}


def embed_cached(keys: Sequence[str], texts: Sequence[str], directory: Path, encoder: Any = None,
                 progress: bool = True) -> np.ndarray:
    """One row per text, embedding only those whose key is not cached in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    cache = _cached_embeddings(directory)
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=False):
        if key not in cache:
            todo.setdefault(key, text)
    log.info("embedding %d of %d texts (%d cached)", len(todo), len(keys), len(keys) - len(todo))
    if todo:
        if encoder is None:
            from side.retrieval.encoder import shared_encoder

            encoder = shared_encoder()
        vectors = encoder.encode(list(todo.values()), batch_size=32, progress=progress)
        cache.update(zip(todo, vectors, strict=False))
    dim = next(iter(cache.values())).shape[0] if cache else 384
    matrix = np.stack([cache[k] for k in keys]) if len(keys) else np.zeros((0, dim), np.float32)
    np.save(directory / EMBEDDINGS_FILE, matrix.astype(np.float32), allow_pickle=False)
    (directory / EMBEDDING_KEYS_FILE).write_text(json.dumps({"keys": list(keys)}), encoding="utf-8")
    return matrix


def embed_passages(passages: Sequence[Passage], directory: Path, encoder: Any = None,
                   progress: bool = True) -> np.ndarray:
    """Passage embeddings keyed by content hash: rebuilding never re-embeds a passage."""
    return embed_cached([p.content_hash for p in passages], [p.index_text for p in passages],
                        directory, encoder, progress)


def _is_current(directory: Path, corpus: Corpus, faiss_index: str, stemmer: str) -> bool:
    try:
        meta = read_index_meta(directory)
    except IndexNotFoundError:
        return False
    return (meta.get("format") == INDEX_FORMAT and meta.get("fingerprint") == corpus.fingerprint
            and meta.get("faiss") == faiss_index and meta.get("stemmer_requested") == stemmer
            and (directory / DENSE_FILE).is_file() and (directory / SPARSE_DIR / "sparse.json").is_file())


def _corpus_ref(corpus: Corpus, directory: Path) -> str:
    try:
        return str(corpus.directory.resolve().relative_to(directory.resolve())) or "."
    except ValueError:
        return str(corpus.directory.resolve())


def build_index(corpus: Corpus, directory: str | Path, encoder: Any = None, faiss_index: str = "flat",
                stemmer: str = "auto", progress: bool = True) -> Retriever:
    """Sparse and dense indexes of ``corpus`` in ``directory``; no work if they are current."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if _is_current(directory, corpus, faiss_index, stemmer):
        log.info("index in %s is up to date", directory)
        return Retriever.load(directory, encoder)
    texts = [p.index_text for p in corpus.passages]
    sparse = SparseIndex.build(texts, stemmer, progress)
    sparse.save(directory / SPARSE_DIR)
    vectors = embed_passages(corpus.passages, directory, encoder, progress)
    dense = DenseIndex.build(vectors, faiss_index, encoder)
    dense.save(directory / DENSE_FILE)
    meta = {"format": INDEX_FORMAT, "corpus_dir": _corpus_ref(corpus, directory),
            "fingerprint": corpus.fingerprint, "faiss": faiss_index, "stemmer_requested": stemmer,
            "stemmer": sparse.stemmer_name, "n_documents": len(corpus), "n_passages": len(texts),
            "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0}
    (directory / INDEX_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return Retriever(corpus, sparse, dense)
