"""The dense half of retrieval: passage embeddings in a faiss inner-product index.

Embeddings are unit length, so inner product is cosine similarity. ``embeddings.npy`` keeps one
row per passage with ``embeddings.json`` naming each row's passage content hash and the encoder
that embedded them, so rebuilding an index never re-embeds a passage already seen with the same
encoder. Vectors of two encoders are not comparable: an index answers queries only with the
encoder that built it (:func:`check_encoder`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from side.errors import ConfigError, IndexNotFoundError, InputError
from side.retrieval.corpus import Passage
from side.retrieval.encoder import DEFAULT_ENCODER, encoder_name

__all__ = ["EMBEDDINGS_FILE", "EMBEDDING_KEYS_FILE", "FAISS_KINDS", "DenseIndex", "name_of", "check_encoder",
           "embed_cached", "embed_passages"]

log = logging.getLogger(__name__)

EMBEDDINGS_FILE = "embeddings.npy"
EMBEDDING_KEYS_FILE = "embeddings.json"
FAISS_KINDS = ("flat", "ivf", "hnsw")

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


def name_of(encoder: Any) -> str:
    """The recorded name of ``encoder`` (an :class:`~side.retrieval.encoder.Encoder`, None for the
    default one, or a stand-in without a name, which is taken to be the default)."""
    return str(getattr(encoder, "name", None) or DEFAULT_ENCODER) if encoder is not None else DEFAULT_ENCODER


def check_encoder(built_by: str, where: str | Path, encoder: Any = None, model: str | None = None) -> None:
    """ConfigError unless ``encoder`` (an object) and ``model`` (a configured name) are the encoder that
    built the index in ``where``: another encoder's query vectors would silently retrieve noise."""
    wanted = [encoder_name(model)] if model else []
    if encoder is not None and getattr(encoder, "name", None):
        wanted.append(str(encoder.name))
    for name in wanted:
        if name != built_by:
            raise ConfigError(f"the index in {where} was built with encoder {built_by!r}, not {name!r}: rebuild it "
                              f"(`side index build`) or set encoder.model = {built_by!r}")


class DenseIndex:
    """Unit-length embeddings in a faiss index; inner product is cosine similarity."""

    def __init__(self, index: Any, kind: str = "flat", encoder: Any = None, built_by: str = DEFAULT_ENCODER) -> None:
        self.index = index
        self.kind = kind
        self.encoder = encoder
        #: The encoder whose vectors the index holds (``minilm``, ``mpnet`` or a directory).
        self.built_by = built_by

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "flat", encoder: Any = None) -> DenseIndex:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        index = _faiss_index(vectors, kind)
        if len(vectors):
            index.add(vectors)
        return cls(index, kind, encoder, name_of(encoder))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.encoder is None:
            from side.retrieval.encoder import shared_encoder

            self.encoder = shared_encoder(model=self.built_by)
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
    def load(cls, path: str | Path, kind: str = "flat", encoder: Any = None,
             built_by: str = DEFAULT_ENCODER) -> DenseIndex:
        import faiss

        if not Path(path).is_file():
            raise IndexNotFoundError(f"no dense index at {path}")
        check_encoder(built_by, Path(path).parent, encoder)
        return cls(faiss.read_index(str(path)), kind, encoder, built_by)


def _cached_embeddings(directory: Path, encoder: str) -> dict[str, np.ndarray]:
    """Embeddings ``encoder`` already computed in ``directory``, by passage content hash (files
    without an encoder name were written by the default one)."""
    keys_path, rows_path = directory / EMBEDDING_KEYS_FILE, directory / EMBEDDINGS_FILE
    if not (keys_path.is_file() and rows_path.is_file()):
        return {}
    saved = json.loads(keys_path.read_text(encoding="utf-8"))
    if saved.get("encoder", DEFAULT_ENCODER) != encoder:
        log.info("embeddings in %s are %s's, not %s's: embedding anew", directory, saved.get("encoder"), encoder)
        return {}
    keys = saved["keys"]
    rows = np.load(rows_path, allow_pickle=False)
    return dict(zip(keys, rows, strict=False)) if len(keys) == len(rows) else {}


def embed_cached(keys: Sequence[str], texts: Sequence[str], directory: Path, encoder: Any = None,
                 progress: bool = True) -> np.ndarray:
    """One row per text, embedding only those whose key is not cached in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    name = name_of(encoder)
    cache = _cached_embeddings(directory, name)
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=False):
        if key not in cache:
            todo.setdefault(key, text)
    log.info("embedding %d of %d texts (%d cached)", len(todo), len(keys), len(keys) - len(todo))
    if todo:
        if encoder is None:
            from side.retrieval.encoder import shared_encoder

            encoder = shared_encoder(model=name)
        vectors = encoder.encode(list(todo.values()), batch_size=32, progress=progress)
        cache.update(zip(todo, vectors, strict=False))
    dim = next(iter(cache.values())).shape[0] if cache else 384
    matrix = np.stack([cache[k] for k in keys]) if len(keys) else np.zeros((0, dim), np.float32)
    np.save(directory / EMBEDDINGS_FILE, matrix.astype(np.float32), allow_pickle=False)
    (directory / EMBEDDING_KEYS_FILE).write_text(json.dumps({"encoder": name, "keys": list(keys)}), encoding="utf-8")
    return matrix


def embed_passages(passages: Sequence[Passage], directory: Path, encoder: Any = None,
                   progress: bool = True) -> np.ndarray:
    """Passage embeddings keyed by content hash: rebuilding never re-embeds a passage."""
    return embed_cached([p.content_hash for p in passages], [p.index_text for p in passages],
                        directory, encoder, progress)
