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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from side.errors import ConfigError, IndexNotFoundError, InputError
from side.retrieval.corpus import Passage
from side.retrieval.encoder import DEFAULT_ENCODER, encoder_name

__all__ = [
    "EMBEDDINGS_FILE", "EMBEDDING_KEYS_FILE", "FAISS_KINDS", "FAISS_PARAMS", "DenseIndex", "FaissSpec", "name_of",
    "check_encoder", "embed_cached", "embed_passages",
]

log = logging.getLogger(__name__)

EMBEDDINGS_FILE = "embeddings.npy"
EMBEDDING_KEYS_FILE = "embeddings.json"
FAISS_KINDS = ("flat", "ivf", "hnsw", "ivfpq")

#: Each kind's parameters and their defaults (``0``: chosen from the corpus size). HNSW: links
#: per vector, build beam, search beam. IVF: lists, lists probed per query. IVF-PQ adds the
#: product quantizer (``m`` one-byte codes per vector; must divide the dimension) and a second
#: pass that re-scores ``k_factor`` x k candidates with finer codes: ``sq8`` (1 byte per dimension,
#: a quarter of flat's memory), ``flat`` (full vectors) or ``none`` (PQ scores only).
FAISS_PARAMS: dict[str, dict[str, int | str]] = {
    "flat": {},
    # ef_search 512, not 128: the Retriever asks for 100 dense passages, and benchmarks/scale.py
    # measured dense recall@10 against flat of 0.919 -> 0.994 (10k passages) and 0.72 -> 0.84 (100k)
    # for 128 -> 512, with dense p50 still under 1 ms.
    "hnsw": {"m": 32, "ef_construction": 80, "ef_search": 512},
    "ivf": {"nlist": 0, "nprobe": 0},
    "ivfpq": {"nlist": 0, "nprobe": 0, "m": 48, "refine": "sq8", "k_factor": 4},
}
_REFINES = {"sq8": "SQ8", "flat": "Flat", "none": ""}
#: Vectors a coarse quantizer is trained on, per list (faiss warns below 39).
_TRAIN_PER_LIST = 50
#: Fewer vectors than this cannot train the kind (a PQ code book has 256 centroids per byte).
_MIN_TRAIN = {"ivf": 1, "ivfpq": 1_000}


@dataclass(frozen=True)
class FaissSpec:
    """A dense index kind and its parameters, written ``kind`` or ``kind:key=value,...``
    (``hnsw:ef_search=64``) in ``retrieval.faiss_index`` and in an index's ``index.json``."""

    kind: str
    params: dict[str, int | str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> FaissSpec:
        """The spec of ``spec``; InputError naming what is wrong."""
        kind, _, rest = spec.strip().partition(":")
        if kind not in FAISS_KINDS:
            raise InputError(f"unknown faiss index {kind!r} ({', '.join(FAISS_KINDS)})")
        params = dict(FAISS_PARAMS[kind])
        for item in filter(None, (part.strip() for part in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or key not in params:
                known = ", ".join(FAISS_PARAMS[kind]) or "none"
                raise InputError(f"faiss index {kind!r}: bad parameter {item!r} (known: {known})")
            params[key] = value if isinstance(params[key], str) else _count(kind, key, value)
        if kind == "ivfpq" and params["refine"] not in _REFINES:
            raise InputError(f"faiss index ivfpq: refine must be one of {', '.join(_REFINES)}")
        return cls(kind, params)


def _count(kind: str, key: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise InputError(f"faiss index {kind!r}: {key} must be a whole number >= 0, not {value!r}")
    return number


def _lists(n: int, nlist: int | str) -> int:
    """IVF lists: as given, else 4 x sqrt(n), never so many that a list trains on < 39 vectors."""
    return int(nlist) or max(1, min(int(4 * math.sqrt(max(n, 1))), n // 39 or 1))


def _training_sample(vectors: np.ndarray, nlist: int) -> np.ndarray:
    """A fixed random sample big enough to train ``nlist`` lists (k-means cost grows with it)."""
    limit = max(nlist * _TRAIN_PER_LIST, 10_000)
    if len(vectors) <= limit:
        return vectors
    rows = np.sort(np.random.default_rng(0).choice(len(vectors), limit, replace=False))
    return np.ascontiguousarray(vectors[rows])


def _faiss_index(vectors: np.ndarray, spec: FaissSpec) -> Any:
    """A faiss inner-product index: exact, or approximate for corpora too big for it."""
    import faiss

    n, dim = vectors.shape
    p = spec.params
    if spec.kind == "flat":
        return faiss.IndexFlatIP(dim)
    if spec.kind == "hnsw":
        hnsw = faiss.IndexHNSWFlat(dim, int(p["m"]), faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction, hnsw.hnsw.efSearch = int(p["ef_construction"]), int(p["ef_search"])
        return hnsw
    if n < _MIN_TRAIN[spec.kind]:
        log.info("%d vectors are too few to train a %s index; searching them exactly", n, spec.kind)
        return faiss.IndexFlatIP(dim)
    nlist = _lists(n, p["nlist"])
    index: Any
    if spec.kind == "ivf":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    else:
        if dim % int(p["m"]):
            raise InputError(f"faiss index ivfpq: m={p['m']} must divide the dimension {dim}")
        refine = _REFINES[str(p["refine"])]
        factory = f"IVF{nlist},PQ{p['m']}x8" + (f",Refine({refine})" if refine else "")
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        # The factory turns on polysemous training (annealing the code order for Hamming
        # filtering, which this index never uses): minutes of CPU for nothing.
        ivfpq: Any = faiss.downcast_index(faiss.extract_index_ivf(index))
        ivfpq.do_polysemous_training = False
        if refine:
            index.k_factor = float(p["k_factor"] or 1)
    index.train(_training_sample(vectors, nlist))
    faiss.extract_index_ivf(index).nprobe = int(p["nprobe"]) or max(1, nlist // 8)
    return index


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
        #: The spec it was built with (``kind`` or ``kind:key=value,...``, see :class:`FaissSpec`).
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
        index = _faiss_index(vectors, FaissSpec.parse(kind))
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
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:  # FAISS's own reader: a truncated or foreign file
            raise InputError(f"{path} is not a readable FAISS index; build the index again") from exc
        return cls(index, kind, encoder, built_by)


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
