"""The Milvus backend of retrieval: the passages in one Milvus collection, searched there.

Same interface as the embedded index (:class:`MilvusRetriever` is a
:class:`~side.retrieval.retriever.Retriever`), different engine:

- BM25 runs in Milvus: the ``terms`` VARCHAR field has an analyzer and a ``BM25`` function
  turns it into the ``sparse`` SPARSE_FLOAT_VECTOR field (index SPARSE_INVERTED_INDEX, metric
  BM25, k1 = 1.5 and b = 0.75 as bm25s). ``terms`` holds the passage already analysed by Side
  (lowercased, English stopwords out, stemmed: :func:`side.retrieval.sparse.analysed_texts`),
  queries are analysed the same way, and Milvus's analyzer only splits at spaces. Why not
  Milvus's own English analyzer: milvus-lite's analyzer knows the ``standard`` tokenizer and
  stop words but silently ignores the ``stemmer`` filter, so the same collection would match
  "cats" to "cat" on a Milvus server and not on milvus-lite. Analysing in Side gives both the
  same words, and the same words as the embedded index.
- Dense search runs in Milvus on the ``dense`` FLOAT_VECTOR field, inner product on unit
  vectors (cosine), index HNSW (default), IVF_PQ or FLAT (``retrieval.milvus_index``).
  milvus-lite 3.2 has no IVF_PQ (it accepts the index and then fails to load the collection),
  so building one there is refused with a one-line error; it needs a Milvus server.
- Hybrid search with ``rrf`` is one ``hybrid_search`` call merged by Milvus's
  ``RRFRanker(60)``, the same fusion as the embedded one (its hits carry no per-list ranks:
  Milvus does not return them). Side's default, ``union`` (CombSUM of min-max normalised
  scores), has no Milvus ranker: ``WeightedRanker(1, 1)`` normalises each score by arctan
  instead (BM25: 2·atan(s)/π, inner product: 0.5 + atan(s)/π), which flattens BM25's score
  gaps and measured R@3 0.882 / R@10 0.945 / nDCG@10 0.838 on SciFact dev against the embedded
  0.879 / 0.953 / 0.862. So for ``union`` Side asks Milvus for the two lists (a BM25 search and a
  dense search, one request each) and merges them with the embedded backend's own
  :func:`~side.retrieval.fusion.fuse`: the same ranking from either backend, per-list ranks
  included, for one more round trip (SciFact dev, 2026-11-24: 0.874 / 0.953 / 0.861 from both
  backends).

One code path serves milvus-lite and a Milvus server; the URI chooses: a path ending in ``.db``
is a milvus-lite data directory served inside this process by pymilvus, ``http://host:port``
is milvus-lite's gRPC server (``milvus-lite server``), Milvus Standalone or Distributed.

The corpus (documents and passages) stays in the index directory as for the embedded backend:
the pipeline reads whole documents from it, and the embedding cache there is shared, so
building both backends embeds each passage once. ``milvus.json`` beside it records the URI,
collection and the corpus fingerprint the collection was built from. pymilvus is imported
only when this backend is used.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from side.data import read_json_object
from side.errors import ConfigError, IndexNotFoundError, IndexServerError, InputError
from side.retrieval.corpus import Corpus, Passage
from side.retrieval.dense import FAISS_PARAMS, check_encoder, embed_passages, name_of
from side.retrieval.encoder import DEFAULT_ENCODER
from side.retrieval.fusion import FUSIONS, RRF_K, Ranked, fuse, single
from side.retrieval.retriever import MODES, Retriever, corpus_ref
from side.retrieval.sparse import analysed_texts

__all__ = [
    "MILVUS_FILE", "MILVUS_FORMAT", "MILVUS_INDEXES", "MilvusSettings", "MilvusRetriever", "build_milvus_index",
    "check_server", "collection_name", "connect", "read_milvus_meta",
]

log = logging.getLogger(__name__)

MILVUS_FILE = "milvus.json"
MILVUS_FORMAT = 1
MILVUS_INDEXES = ("hnsw", "ivf_pq", "flat")

#: Milvus's limit on a VARCHAR field, in bytes.
_VARCHAR_MAX = 65_535
#: Rows per insert and queries per search request: well under Milvus's message and nq limits.
_BATCH = 256
#: BM25 parameters of bm25s (the embedded index), so both backends score alike.
_BM25_PARAMS = {"bm25_k1": 1.5, "bm25_b": 0.75}
#: Analyzer of the ``terms`` field: the text is analysed already, only split it into words.
_ANALYZER = {"tokenizer": "standard", "filter": ["lowercase"]}


@dataclass(frozen=True)
class MilvusSettings:
    """Where the collection is and how its dense field is indexed."""

    uri: str
    collection: str = "side_passages"
    index: str = "hnsw"
    token: str = ""
    timeout_s: float = 60.0

    @classmethod
    def from_config(cls, config: Any) -> MilvusSettings:
        """From a :class:`side.config.Config` (``retrieval.milvus_*``)."""
        r = config.retrieval
        return cls(config.milvus_uri, r.milvus_collection, r.milvus_index, r.milvus_token)

    def with_collection(self, name: str) -> MilvusSettings:
        return MilvusSettings(self.uri, name, self.index, self.token, self.timeout_s)


def collection_name(text: str, prefix: str = "side_") -> str:
    """A valid Milvus collection name made from ``text`` (letters, digits and underscores)."""
    return (prefix + re.sub(r"[^0-9A-Za-z_]", "_", text))[:255]


def _pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError:
        raise ConfigError("the milvus backend needs pymilvus: pip install 'side-citations[milvus]'") from None
    return pymilvus


def _message(exc: Exception) -> str:
    return str(getattr(exc, "message", "") or exc).splitlines()[0] if str(exc) else type(exc).__name__


def connect(settings: MilvusSettings) -> Any:
    """A MilvusClient for ``settings.uri``; IndexServerError (one line) when it cannot be reached."""
    pymilvus = _pymilvus()
    uri = settings.uri
    if uri.endswith(".db"):  # milvus-lite: a data directory, created with its parent
        Path(uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
    try:
        return pymilvus.MilvusClient(uri=uri, token=settings.token, timeout=settings.timeout_s)
    except Exception as exc:  # noqa: BLE001 - pymilvus raises MilvusException and plain errors alike
        raise IndexServerError(f"cannot connect to Milvus at {uri}: {_message(exc)}") from exc


def _call(what: str, settings: MilvusSettings, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a Milvus failure turned into one IndexServerError line."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - as in connect()
        pymilvus = _pymilvus()
        if isinstance(exc, pymilvus.exceptions.MilvusException):
            raise IndexServerError(f"Milvus at {settings.uri}: {what} failed: {_message(exc)}") from exc
        raise


def read_milvus_meta(index_dir: str | Path) -> dict[str, Any]:
    path = Path(index_dir) / MILVUS_FILE
    if not path.is_file():
        raise IndexNotFoundError(f"no Milvus index in {index_dir} (run `side index build --backend milvus`)")
    return read_json_object(path, "the Milvus index's")


def _dense_index(kind: str, n: int, dim: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(index type, build params, search params) of the dense field; HNSW's as the embedded
    faiss defaults (``side.retrieval.dense``: M 32, efConstruction 80, ef 512)."""
    if kind == "hnsw":
        hnsw = FAISS_PARAMS["hnsw"]
        return "HNSW", {"M": hnsw["m"], "efConstruction": hnsw["ef_construction"]}, {"ef": hnsw["ef_search"]}
    if kind == "ivf_pq":
        nlist = max(1, min(int(4 * math.sqrt(max(n, 1))), n // 39 or 1))
        m = max(d for d in range(1, dim // 8 + 1) if dim % d == 0)  # 8 dimensions per sub-quantizer
        return "IVF_PQ", {"nlist": nlist, "m": m, "nbits": 8}, {"nprobe": max(1, nlist // 8)}
    if kind == "flat":
        return "FLAT", {}, {}
    raise InputError(f"unknown Milvus index {kind!r} ({', '.join(MILVUS_INDEXES)})")


def check_server(settings: MilvusSettings, client: Any = None) -> Any:
    """A client for ``settings`` whose server can build its index, else a one-line error."""
    client = client or connect(settings)
    _check_index_supported(client, settings)
    return client


def _check_index_supported(client: Any, settings: MilvusSettings) -> None:
    """milvus-lite 3.2 accepts an IVF_PQ index but cannot load it: refuse before building."""
    if settings.index != "ivf_pq":
        return
    version = str(_call("get_server_version", settings, client.get_server_version))
    if version.startswith("milvus_lite"):
        raise ConfigError(f"{version} has no IVF_PQ index: set retrieval.milvus_index to hnsw or flat, "
                          f"or milvus_uri to a Milvus server")


def _clip(text: str, limit: int = _VARCHAR_MAX) -> str:
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


def _create_collection(client: Any, settings: MilvusSettings, n: int, dim: int) -> None:
    pymilvus = _pymilvus()
    data_type = pymilvus.DataType
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", data_type.INT64, is_primary=True)
    schema.add_field("doc_id", data_type.VARCHAR, max_length=_VARCHAR_MAX)
    schema.add_field("url", data_type.VARCHAR, max_length=_VARCHAR_MAX)
    schema.add_field("title", data_type.VARCHAR, max_length=_VARCHAR_MAX)
    schema.add_field("text", data_type.VARCHAR, max_length=_VARCHAR_MAX)
    schema.add_field("terms", data_type.VARCHAR, max_length=_VARCHAR_MAX, enable_analyzer=True,
                     analyzer_params=_ANALYZER)
    schema.add_field("sparse", data_type.SPARSE_FLOAT_VECTOR)
    schema.add_field("dense", data_type.FLOAT_VECTOR, dim=dim)
    schema.add_function(pymilvus.Function(name="bm25", function_type=pymilvus.FunctionType.BM25,
                                          input_field_names=["terms"], output_field_names=["sparse"]))
    index_type, params, _ = _dense_index(settings.index, n, dim)
    indexes = client.prepare_index_params()
    indexes.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                      params=dict(_BM25_PARAMS))
    indexes.add_index(field_name="dense", index_type=index_type, metric_type="IP", params=params)
    if _call("has_collection", settings, client.has_collection, settings.collection):
        _call("drop_collection", settings, client.drop_collection, settings.collection)
    _call("create_collection", settings, client.create_collection, settings.collection, schema=schema)
    # Indexed while empty, so there is nothing to wait for; not waiting also spares milvus-lite
    # the AllocTimestamp call it does not implement. Rows inserted later are indexed by Milvus.
    _call("create_index", settings, client.create_index, settings.collection, indexes, sync=False)


def _rows(passages: Sequence[Passage], terms: Sequence[str], vectors: np.ndarray) -> list[dict[str, Any]]:
    return [{"id": p.passage_id, "doc_id": _clip(p.doc_id), "url": _clip(p.url), "title": _clip(p.title),
             "text": _clip(p.text), "terms": _clip(t), "dense": v.tolist()}
            for p, t, v in zip(passages, terms, vectors, strict=True)]


def _row_count(client: Any, settings: MilvusSettings) -> int | None:
    """Rows in the collection, or None when there is no such collection."""
    if not _call("has_collection", settings, client.has_collection, settings.collection):
        return None
    stats = _call("get_collection_stats", settings, client.get_collection_stats, settings.collection)
    return int(stats.get("row_count", 0))


def _is_current(directory: Path, corpus: Corpus, settings: MilvusSettings, stemmer: str, client: Any,
                encoder: str) -> bool:
    try:
        meta = read_milvus_meta(directory)
    except IndexNotFoundError:
        return False
    same = (meta.get("format") == MILVUS_FORMAT and meta.get("fingerprint") == corpus.fingerprint
            and meta.get("uri") == settings.uri and meta.get("collection") == settings.collection
            and meta.get("index") == settings.index and meta.get("stemmer_requested") == stemmer
            and meta.get("encoder", DEFAULT_ENCODER) == encoder)
    return same and _row_count(client, settings) == len(corpus.passages)


def build_milvus_index(corpus: Corpus, directory: str | Path, settings: MilvusSettings, encoder: Any = None,
                       stemmer: str = "auto", progress: bool = True) -> MilvusRetriever:
    """Write ``corpus``'s passages into ``settings.collection``; no work if it is current.

    The collection is built anew each time the corpus changes (embeddings come from the cache
    in ``directory``, so only new passages are embedded).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _dense_index(settings.index, 1, 8)  # an unknown index type fails before any work
    client = check_server(settings)
    if _is_current(directory, corpus, settings, stemmer, client, name_of(encoder)):
        log.info("Milvus collection %s at %s is up to date", settings.collection, settings.uri)
        return MilvusRetriever.load(directory, encoder, milvus=settings, client=client)
    passages = corpus.passages
    vectors = embed_passages(passages, directory, encoder, progress)
    stemmer_name, terms = analysed_texts([p.index_text for p in passages], stemmer)
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    _create_collection(client, settings, len(passages), dim)
    for start in range(0, len(passages), _BATCH):
        end = start + _BATCH
        _call("insert", settings, client.insert, settings.collection,
              _rows(passages[start:end], terms[start:end], vectors[start:end]))
    _call("flush", settings, client.flush, settings.collection)
    _call("load_collection", settings, client.load_collection, settings.collection)
    meta = {"format": MILVUS_FORMAT, "backend": "milvus", "corpus_dir": corpus_ref(corpus, directory),
            "fingerprint": corpus.fingerprint, "uri": settings.uri, "collection": settings.collection,
            "index": settings.index, "stemmer_requested": stemmer, "stemmer": stemmer_name,
            "n_documents": len(corpus), "n_passages": len(passages), "dim": dim, "encoder": name_of(encoder)}
    (directory / MILVUS_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    log.info("Milvus collection %s at %s: %d passages", settings.collection, settings.uri, len(passages))
    return MilvusRetriever(corpus, client, settings, stemmer_name, dim, encoder, built_by=name_of(encoder))


class MilvusRetriever(Retriever):
    """A :class:`Retriever` whose sparse, dense and hybrid searches run in a Milvus collection."""

    def __init__(self, corpus: Corpus, client: Any, settings: MilvusSettings, stemmer: str, dim: int,
                 encoder: Any = None, k_sparse: int = 100, k_dense: int = 100, fusion: str = "union",
                 built_by: str = DEFAULT_ENCODER) -> None:
        if fusion not in FUSIONS:
            raise InputError(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
        #: The encoder whose vectors the collection holds (queries must use it too).
        self.built_by = built_by
        self.corpus = corpus
        self.client = client
        self.settings = settings
        self.stemmer = stemmer
        self.encoder = encoder
        self.k_sparse = k_sparse
        self.k_dense = k_dense
        self.fusion = fusion
        self._search_params = _dense_index(settings.index, len(corpus.passages), max(dim, 8))[2]

    @classmethod
    def load(cls, index_dir: str | Path, encoder: Any = None, *, milvus: MilvusSettings | None = None,
             client: Any = None, encoder_model: str | None = None, **options: Any) -> MilvusRetriever:
        """The collection built by :func:`build_milvus_index` for ``index_dir``'s corpus.

        ``milvus`` None: the URI and collection recorded at build time. ConfigError when ``encoder``
        or the configured ``encoder_model`` is not the encoder that built it.
        """
        settings = milvus
        index_dir = Path(index_dir)
        meta = read_milvus_meta(index_dir)
        built_by = str(meta.get("encoder", DEFAULT_ENCODER))
        check_encoder(built_by, index_dir, encoder, encoder_model)
        if settings is None:
            settings = MilvusSettings(meta["uri"], meta["collection"], meta.get("index", "hnsw"))
        corpus = Corpus.load(index_dir / meta.get("corpus_dir", "."))
        client = client or connect(settings)
        rows = _row_count(client, settings)
        if rows is None:
            raise IndexNotFoundError(f"no Milvus collection {settings.collection!r} at {settings.uri} "
                                     f"(run `side index build --backend milvus`)")
        if rows != len(corpus.passages) or meta.get("fingerprint") != corpus.fingerprint:
            raise IndexNotFoundError(f"Milvus collection {settings.collection!r} at {settings.uri} does not hold "
                                     f"the corpus in {index_dir} (run `side index build --backend milvus`)")
        _call("load_collection", settings, client.load_collection, settings.collection)
        return cls(corpus, client, settings, meta.get("stemmer", "auto"), int(meta.get("dim", 0)), encoder,
                   built_by=built_by, **options)

    def share_encoder(self, encoder: Any) -> None:
        check_encoder(self.built_by, f"Milvus collection {self.settings.collection!r}", encoder)
        self.encoder = encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.encoder is None:
            from side.retrieval.encoder import shared_encoder

            self.encoder = shared_encoder(model=self.built_by)
        return self.encoder.encode(list(texts))

    # ------------------------------------------------------------------ searching

    def _terms(self, queries: Sequence[str]) -> list[str]:
        return analysed_texts(queries, self.stemmer)[1]

    def _dense_request(self) -> dict[str, Any]:
        return {"metric_type": "IP", "params": dict(self._search_params)}

    def _search(self, field: str, data: list[Any], limit: int) -> list[list[tuple[int, float]]]:
        """(passage id, score) rows of a single-field search, batched; BM25 scores positive."""
        params: dict[str, Any] = {"metric_type": "BM25"} if field == "sparse" else self._dense_request()
        if field == "dense" and "ef" in params["params"]:
            params["params"]["ef"] = max(params["params"]["ef"], limit)
        out: list[list[tuple[int, float]]] = []
        for start in range(0, len(data), _BATCH):
            result = _call("search", self.settings, self.client.search, self.settings.collection,
                           data=data[start:start + _BATCH], anns_field=field, limit=limit,
                           search_params=params, output_fields=["doc_id"])
            # milvus-lite returns BM25 scores negated (its internal distance); a server, positive.
            out += [[(int(h["id"]), abs(float(h["distance"])) if field == "sparse" else float(h["distance"]))
                     for h in row] for row in result]
        return out

    def _rrf(self, terms: list[str], vectors: list[list[float]], limit: int) -> list[Ranked]:
        """One ``hybrid_search`` per batch, merged by Milvus's RRF ranker (the embedded RRF's k)."""
        pymilvus = _pymilvus()
        ranker = pymilvus.RRFRanker(RRF_K)
        dense = self._dense_request()
        if "ef" in dense["params"]:
            dense["params"]["ef"] = max(dense["params"]["ef"], self.k_dense, limit)
        out: list[Ranked] = []
        for start in range(0, len(terms), _BATCH):
            end = start + _BATCH
            requests = [
                pymilvus.AnnSearchRequest(data=terms[start:end], anns_field="sparse",
                                          param={"metric_type": "BM25"}, limit=max(self.k_sparse, limit)),
                pymilvus.AnnSearchRequest(data=vectors[start:end], anns_field="dense", param=dense,
                                          limit=max(self.k_dense, limit)),
            ]
            result = _call("hybrid_search", self.settings, self.client.hybrid_search, self.settings.collection,
                           requests, ranker, limit=limit, output_fields=["doc_id"])
            out += [[(int(h["id"]), float(h["distance"]), None, None) for h in row] for row in result]
        return out

    def _ranked(self, sparse_queries: Sequence[str], dense_queries: Sequence[str] | np.ndarray,
                depth: int, mode: str, fusion: str) -> list[Ranked]:
        if mode not in MODES:
            raise InputError(f"unknown retrieval mode {mode!r} ({', '.join(MODES)})")
        if fusion not in FUSIONS:
            raise InputError(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
        n = len(sparse_queries)
        rows: list[Ranked] = [[] for _ in range(n)]
        if n == 0 or not self.corpus.passages:
            return rows
        terms = self._terms(sparse_queries) if mode != "dense" else [""] * n
        worded = [i for i in range(n) if terms[i].strip()]  # BM25 on no word matches nothing: not asked
        if mode == "sparse":
            found = self._search("sparse", [terms[i] for i in worded], max(self.k_sparse, depth))
            for i, row in zip(worded, found, strict=True):
                rows[i] = _single(row, dense=False)
            return rows
        vectors = dense_queries if isinstance(dense_queries, np.ndarray) else self.embed(dense_queries)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        wordless = list(range(n)) if mode == "dense" else [i for i in range(n) if not terms[i].strip()]
        if wordless:
            limit = max(self.k_dense, depth) if mode == "dense" else depth
            found = self._search("dense", [vectors[i].tolist() for i in wordless], limit)
            for i, row in zip(wordless, found, strict=True):
                rows[i] = _single(row, dense=True)
        if mode == "hybrid" and worded:
            if fusion == "union":
                merged = self._union([terms[i] for i in worded], [vectors[i].tolist() for i in worded], depth)
            else:
                merged = self._rrf([terms[i] for i in worded], [vectors[i].tolist() for i in worded], depth)
            for i, ranked in zip(worded, merged, strict=True):
                rows[i] = ranked
        return rows

    def _union(self, terms: list[str], vectors: list[list[float]], depth: int) -> list[Ranked]:
        """Side's union fusion over Milvus's BM25 and dense lists, merged here (see the module's note)."""
        sparse = self._search("sparse", terms, max(self.k_sparse, depth))
        dense = self._search("dense", vectors, max(self.k_dense, depth))
        return [fuse(_arrays(s), _arrays(d), "union") for s, d in zip(sparse, dense, strict=True)]


def _arrays(row: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """A search's (id, score) row as the (ids, scores) arrays the embedded indexes return."""
    return np.array([p for p, _ in row], dtype=np.int64), np.array([s for _, s in row], dtype=np.float32)


def _single(row: list[tuple[int, float]], dense: bool) -> Ranked:
    return single(*_arrays(row), dense)
