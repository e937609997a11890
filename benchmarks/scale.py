"""Cost of retrieval against corpus size: 10k, 100k and 1M passages of real text (a script, not a test).

What it builds. A pool of distinct real passages from the shared data (WiCE cited pages, SciFact
abstracts, Citation-Integrity abstracts, saved web pages, then the evidence/premise texts of the
FEVER-family and other pairs under train/), passaged as Side passages them (100 words, stride 50),
de-duplicated by text. The data holds fewer distinct passages than 1M, and a 2-core CPU embeds
only some tens of passages a second, so ``--unique`` of them are embedded once (with the shipped
MiniLM encoder, cached under var/bench/scale/) and every larger corpus REPEATS them with distinct
ids. A repeat keeps its text (BM25 sees exact copies) and gets its original's vector plus a tiny
fixed random perturbation (Gaussian, sigma ``--jitter`` per dimension, renormalised: cosine about
0.995 to the original), so that no two vectors are equal: recall@10 against flat is then exact-id
recall with no ties to break arbitrarily, and HNSW is not fed thousands of identical points.

What it measures, per corpus size (printed as one table, the cost curve):
- embedded backend (bm25s + faiss): BM25 build; for each faiss index (flat, and the approximate
  ones of ``--kinds``: HNSW, IVF-PQ ...) build time, index bytes, process RSS growth, query p50/p95
  (dense alone and hybrid BM25 + dense with Side's fusion, through ``Retriever.retrieve_passages``;
  query vectors pre-computed, and hybrid also with query encoding included), recall@10 against
  flat (dense top-10, and hybrid top-10 against hybrid-with-flat);
- Milvus backend on a milvus-lite server (127.0.0.1): insert+index time, hybrid p50/p95 and RSS of
  the server, up to ``--milvus-max`` passages (beyond it, the measured reason is printed);
- ingestion: documents/s and passages/s through the real path (service.ingest.Ingestor spools and
  queues on Redis, workers.ingest.run_ingest indexes), against 10x English Wikipedia's rate of
  newly cited sources.

Queries are real claims (WiCE dev + SciFact dev), embedded with the shipped encoder. The CPU is
shared; timings are under that load (the load average is printed). Run with ``nice``:

    nice -n 10 .venv/bin/python benchmarks/scale.py                      # 10k, 100k, 1M
    nice -n 10 .venv/bin/python benchmarks/scale.py --sizes 10000 --kinds hnsw --no-milvus
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from side.config import load_config
from side.data import load_scifact_claims, read_jsonl
from side.retrieval.corpus import (
    Corpus,
    Document,
    Passage,
    documents_from_scifact,
    documents_from_web_html,
    documents_from_wice,
    passages_of,
)
from side.retrieval.dense import DenseIndex, embed_cached
from side.retrieval.retriever import Retriever
from side.retrieval.sparse import SparseIndex, make_stemmer, quiet_bm25s

log = logging.getLogger("benchmarks.scale")

#: English Wikipedia's citations, as extracted by the Wikipedia Citations pipeline (Kokash et al.,
#: "Wikipedia Citations: Reproducible Citation Extraction from Multilingual Wikipedia",
#: arXiv:2406.19291): 40.6M in February 2023, 44.7M in February 2024.
ENWIKI_CITATIONS = (40.6e6, 44.7e6)
#: Net new citations per second (one year apart); every one is at most one new source.
ENWIKI_NEW_CITATIONS_PER_S = (ENWIKI_CITATIONS[1] - ENWIKI_CITATIONS[0]) / (365 * 86400)
#: Targets of the scale plan (docs/scale.md).
TARGET_P95_MS, TARGET_RECALL, TARGET_MILVUS_RATIO, TARGET_INGEST_X = 50.0, 0.95, 2.0, 10.0
#: Depth of one query's passage list (as the Checker asks for better sources: top 10 documents).
K = 10
#: Where pairs datasets keep their evidence text, in the order they are read.
_PAIR_FIELDS = ("premise", "passage")


# ---------------------------------------------------------------- corpus and vectors

def _pair_documents(train: Path) -> Iterator[Document]:
    """The evidence side of every pairs file under train/ (premises, passages), each a document."""
    for path in sorted(train.rglob("*.pairs.jsonl")):
        for record in read_jsonl(path):
            text = next((str(record[f]) for f in _PAIR_FIELDS if record.get(f)), "")
            if text.strip():
                yield Document(f"{path.stem}:{record.get('id', '')}", f"{path.parent.name}:{path.stem}", "", text)


def real_documents(data: Path) -> Iterator[tuple[str, Document]]:
    """(source name, document) of every real text the shared data holds, best-formed first."""
    sources = [
        ("wice", lambda: documents_from_wice(data / "wice" / "claim_dev.jsonl")),
        ("scifact", lambda: documents_from_scifact(data / "scifact" / "corpus.jsonl")),
        ("citation_integrity", lambda: documents_from_scifact(data / "citation_integrity" / "corpus.jsonl")),
        ("web_html", lambda: documents_from_web_html(data / "fixtures" / "web_html")),
        ("train pairs", lambda: _pair_documents(data / "train")),
    ]
    for name, documents in sources:
        try:
            for document in documents():
                yield name, document
        except (OSError, ValueError) as exc:
            log.warning("%s skipped: %s", name, exc)


def unique_passages(data: Path, limit: int) -> tuple[list[Passage], dict[str, int]]:
    """Up to ``limit`` passages of distinct text, and how many each source gave."""
    seen: set[str] = set()
    pool: list[Passage] = []
    counts: dict[str, int] = {}
    with tqdm(total=limit, desc="real passages", unit="p") as bar:
        for name, document in real_documents(data):
            for passage in passages_of(document):
                if passage.content_hash in seen or len(passage.text.split()) < 5:
                    continue
                seen.add(passage.content_hash)
                pool.append(Passage(len(pool), passage.doc_id, passage.url, passage.title, passage.text,
                                    passage.sentence_start, passage.sentence_end))
                counts[name] = counts.get(name, 0) + 1
                bar.update()
                if len(pool) >= limit:
                    return pool, counts
    return pool, counts


def scaled_corpus(pool: list[Passage], n: int) -> Corpus:
    """``n`` passages: the pool, then repeats of it with distinct ids (copy c of doc d is ``d#c``)."""
    passages = []
    for i in range(n):
        copy, base = divmod(i, len(pool))
        p = pool[base]
        doc_id = p.doc_id if copy == 0 else f"{p.doc_id}#{copy}"
        passages.append(Passage(i, doc_id, p.url, p.title, p.text, p.sentence_start, p.sentence_end))
    return Corpus(tempfile.gettempdir(), [], passages, {})


def scaled_vectors(pool_vectors: np.ndarray, n: int, jitter: float) -> np.ndarray:
    """``n`` unit vectors: the pool's, then each repeat its original's plus fixed Gaussian noise."""
    u, dim = pool_vectors.shape
    out = np.empty((n, dim), np.float32)
    for start in range(0, n, u):
        end = min(n, start + u)
        block = pool_vectors[: end - start]
        copy = start // u
        if copy:
            rng = np.random.default_rng(copy)
            block = block + rng.normal(0.0, jitter, block.shape).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:end] = block
    return out


# ---------------------------------------------------------------- measuring

def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of a process now (from /proc), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def timed_rows(retriever: Retriever, claims: list[str], dense: np.ndarray | list[str],
               mode: str) -> tuple[list[list[int]], list[float]]:
    """Each claim's top-K passage ids and its latency in ms, one query at a time (as the Checker asks)."""
    ids, ms = [], []
    for i, claim in enumerate(claims):
        query = dense[i:i + 1] if isinstance(dense, np.ndarray) else [dense[i]]
        start = time.perf_counter()
        hits = retriever.retrieve_passages([claim], query, k=K, mode=mode)[0]
        ms.append((time.perf_counter() - start) * 1000)
        ids.append([h.passage.passage_id for h in hits])
    return ids, ms


def recall(found: list[list[int]], truth: list[list[int]], unique: int = 0) -> float:
    """Mean share of the reference top-K that the approximate top-K also holds. With ``unique``,
    passages count by their text (id modulo ``unique``: a repeat is its original), as a multiset:
    a copy of the same text is the same evidence, and among near-identical copies which ones
    come first is decided by the perturbation's noise, not by the index."""
    def key(ids: list[int]) -> Counter[int]:
        return Counter(i % unique if unique else i for i in ids)

    shares = [sum((key(f) & key(t)).values()) / len(t) for f, t in zip(found, truth, strict=True) if t]
    return float(np.mean(shares)) if shares else float("nan")


def index_bytes(dense: DenseIndex, scratch: Path) -> int:
    """Bytes of the faiss index as written to disk (what it holds in memory, within a few %)."""
    path = scratch / "dense.faiss"
    dense.save(path)
    size = path.stat().st_size
    path.unlink()
    return size


def sparse_bytes(sparse: SparseIndex) -> int:
    """Bytes of bm25s's score matrix (data, indices, indptr) and vocabulary."""
    if sparse.bm25 is None:
        return 0
    scores = sparse.bm25.scores
    arrays = sum(v.nbytes for v in scores.values() if isinstance(v, np.ndarray))
    return arrays + sum(len(w) + 8 for w in sparse.bm25.vocab_dict)


@dataclass
class Row:
    """One line of the cost table."""

    size: int
    backend: str
    index: str
    build_s: float
    bytes: int
    rss_growth: int
    dense_p50: float = float("nan")
    dense_p95: float = float("nan")
    hybrid_p50: float = float("nan")
    hybrid_p95: float = float("nan")
    hybrid_enc_p95: float = float("nan")
    recall_dense: float = float("nan")
    recall_hybrid: float = float("nan")
    #: The same, counting a repeat as its original text (see :func:`recall`).
    recall_dense_text: float = float("nan")
    recall_hybrid_text: float = float("nan")
    note: str = ""


@dataclass
class Run:
    rows: list[Row] = field(default_factory=list)
    #: Flat (exact) dense top-K of each query, per corpus size: the reference for recall.
    flat_dense: dict[int, list[list[int]]] = field(default_factory=dict)
    flat_hybrid: dict[int, list[list[int]]] = field(default_factory=dict)
    #: Distinct real passages; passage i has the text of passage i % unique.
    unique: int = 0


def repeated_sparse(pool_tokens: tuple[str, Any], n: int) -> SparseIndex:
    """BM25 over ``n`` passages that repeat the pool's texts, each text analysed once: passage i
    gets the word ids of pool text i % len(pool), the same index as analysing all ``n`` texts
    (bm25s numbers words by first appearance, and every word first appears in the pool)."""
    bm25s = quiet_bm25s()
    stemmer, tokens = pool_tokens
    ids = [tokens.ids[i % len(tokens.ids)] for i in range(n)]
    return SparseIndex.from_tokens(bm25s.tokenization.Tokenized(ids=ids, vocab=tokens.vocab), stemmer, progress=True)


def pool_tokens(pool: list[Passage]) -> tuple[str, Any]:
    """(resolved stemmer, the pool's texts analysed as SparseIndex.build does)."""
    bm25s = quiet_bm25s()
    name, stem = make_stemmer("auto")
    tokens = bm25s.tokenize([p.index_text for p in pool], stopwords="en", stemmer=stem, show_progress=False)
    return name, tokens


def bench_embedded(n: int, corpus: Corpus, vectors: np.ndarray, kinds: list[str], claims: list[str],
                   claim_vectors: np.ndarray, scratch: Path, run: Run, encode: bool, unique: int,
                   tokens: tuple[str, Any], max_postings: list[int]) -> None:
    """BM25 once, then each faiss kind on the same vectors; flat first as the reference. Each
    approximate kind is measured again with BM25 pruned to each of ``max_postings``; the
    reference stays whole BM25 + flat."""
    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    sparse = repeated_sparse(tokens, n)
    build_s = time.perf_counter() - start
    gc.collect()
    run.rows.append(Row(n, "embedded", "bm25s", build_s, sparse_bytes(sparse), rss_bytes() - before,
                        note="texts analysed once per distinct text"))
    print(f"measured: {run.rows[-1]}", flush=True)
    pruned = {}
    for m in max_postings:
        start = time.perf_counter()
        pruned[m] = sparse.with_max_postings(m)
        kept = len(pruned[m].pruned.data) if pruned[m].pruned is not None else len(sparse.bm25.scores["data"])
        print(f"bm25_max_postings={m}: pruned in {time.perf_counter() - start:.1f} s, "
              f"{kept:,} of {len(sparse.bm25.scores['data']):,} postings kept", flush=True)
    truth_dense: list[list[int]] = []
    truth_hybrid: list[list[int]] = []
    for kind in ["flat", *[k for k in kinds if k != "flat"]]:
        gc.collect()
        before = rss_bytes()
        start = time.perf_counter()
        dense = DenseIndex.build(vectors, kind)
        build_s = time.perf_counter() - start
        growth = rss_bytes() - before
        size = index_bytes(dense, scratch)
        # flat is the reference (whole BM25); each approximate kind with whole, then pruned BM25
        variants = [(sparse, "")] + ([] if kind == "flat" else
                                     [(pruned[m], f" +bm25_max_postings={m}") for m in max_postings])
        for sparse_index, label in variants:
            retriever = Retriever(corpus, sparse_index, dense)
            dense_ids, dense_ms = timed_rows(retriever, claims, claim_vectors, "dense")
            hybrid_ids, hybrid_ms = timed_rows(retriever, claims, claim_vectors, "hybrid")
            row = Row(n, "embedded", kind + label, build_s, size, growth, *percentiles(dense_ms),
                      *percentiles(hybrid_ms))
            if encode:
                row.hybrid_enc_p95 = percentiles(timed_rows(retriever, claims, claims, "hybrid")[1])[1]
            if kind == "flat":
                truth_dense, truth_hybrid = dense_ids, hybrid_ids
                run.flat_dense[n], run.flat_hybrid[n] = dense_ids, hybrid_ids
            row.recall_dense, row.recall_hybrid = recall(dense_ids, truth_dense), recall(hybrid_ids, truth_hybrid)
            row.recall_dense_text = recall(dense_ids, truth_dense, unique)
            row.recall_hybrid_text = recall(hybrid_ids, truth_hybrid, unique)
            run.rows.append(row)
            print(f"measured: {row}", flush=True)  # partial results survive a run stopped early
            del retriever
        del dense
    del sparse, pruned
    gc.collect()


# ---------------------------------------------------------------- Milvus

class MilvusLite:
    """A ``milvus-lite server`` subprocess on a free 127.0.0.1 port (its data in a temporary folder)."""

    def __init__(self, directory: Path) -> None:
        from pymilvus import MilvusClient

        with socket.socket() as probe:  # a free port on 127.0.0.1 for the server
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = (directory / "milvus.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(directory / "db"),
             "--host", "127.0.0.1", "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        self.uri = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                MilvusClient(uri=self.uri, timeout=2).list_collections()
                return
            except Exception:  # noqa: BLE001 - not up yet
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("milvus-lite server did not start") from None
                time.sleep(0.5)

    def rss(self) -> int:
        """RSS of the server and its children (milvus-lite runs its engine in a child process)."""
        pids = [str(self.process.pid)]
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        if children.is_file():
            pids += children.read_text().split()
        return sum(rss_bytes(p) for p in pids if Path(f"/proc/{p}").exists())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def bench_milvus(n: int, corpus: Corpus, vectors: np.ndarray, claims: list[str], claim_vectors: np.ndarray,
                 server: MilvusLite, run: Run, index: str, budget_s: float, max_rss_gb: float) -> None:
    """Insert the corpus into a collection on ``server`` and query it as the embedded rows were.

    The insert stops, with what it measured and an extrapolation in the row's note, when it
    takes more than ``budget_s`` or the server grows past ``max_rss_gb``: milvus-lite keeps the
    whole collection in memory, several times its raw size, and a machine running out of it
    would take down more than the benchmark.
    """
    from side.retrieval import milvus as mv
    from side.retrieval.sparse import analysed_texts

    settings = mv.MilvusSettings(server.uri, f"side_scale_{n}", index=index)
    client = mv.check_server(settings)
    before = server.rss()
    start = time.perf_counter()
    # Analysed once per distinct text, as for bm25s above: copies get the same terms either way.
    distinct = list(dict.fromkeys(p.index_text for p in corpus.passages))
    stemmer, analysed = analysed_texts(distinct)
    of_text = dict(zip(distinct, analysed, strict=True))
    terms = [of_text[p.index_text] for p in corpus.passages]
    del distinct, analysed, of_text
    mv._create_collection(client, settings, n, vectors.shape[1])
    for lo in tqdm(range(0, n, mv._BATCH), desc=f"milvus insert {n}", unit="batch"):
        hi = min(lo + mv._BATCH, n)
        client.insert(settings.collection, mv._rows(corpus.passages[lo:hi], terms[lo:hi], vectors[lo:hi]))
        spent, rss = time.perf_counter() - start, server.rss()
        grown = rss - before
        if spent > budget_s or rss > max_rss_gb * 2**30:
            why = (f"{spent:.0f} s > {budget_s:.0f} s (--milvus-budget)" if spent > budget_s else
                   f"server RSS {rss / 2**30:.1f} GB > {max_rss_gb:g} GB (--milvus-max-rss)")
            run.rows.append(Row(n, "milvus-lite", index, spent, 0, grown,
                                note=f"stopped: {why} at {hi:,} of {n:,} rows; all would take "
                                     f"~{spent * n / hi / 60:.0f} min and ~{grown * n / hi / 2**30:.0f} GB "
                                     f"more server RSS (linear)"))
            client.drop_collection(settings.collection)
            return
    client.flush(settings.collection)
    client.load_collection(settings.collection)
    build_s = time.perf_counter() - start
    retriever = mv.MilvusRetriever(corpus, client, settings, stemmer, vectors.shape[1])
    dense_ids, dense_ms = timed_rows(retriever, claims, claim_vectors, "dense")
    hybrid_ids, hybrid_ms = timed_rows(retriever, claims, claim_vectors, "hybrid")
    row = Row(n, "milvus-lite", index, build_s, 0, server.rss() - before, *percentiles(dense_ms),
              *percentiles(hybrid_ms),
              note="index MB: in the server's RSS; texts analysed once per distinct text")
    if n in run.flat_dense:  # against the embedded flat index; union is Side's fusion on both backends
        row.recall_dense = recall(dense_ids, run.flat_dense[n])
        row.recall_dense_text = recall(dense_ids, run.flat_dense[n], run.unique)
        row.recall_hybrid = recall(hybrid_ids, run.flat_hybrid[n])
        row.recall_hybrid_text = recall(hybrid_ids, run.flat_hybrid[n], run.unique)
    run.rows.append(row)
    client.drop_collection(settings.collection)


# ---------------------------------------------------------------- ingestion

def bench_ingest(data: Path, n_docs: int, scratch: Path, redis_url: str) -> tuple[float, float, int, int, float]:
    """(documents/s, passages/s, documents, passages, seconds) through the ingest queue's real path."""
    import redis
    from rq import SimpleWorker

    from service.ingest import Ingestor, get_ingest_queue
    from side.config import FetchConfig, ServiceConfig
    from side.pipeline import ReadSource
    from side.retrieval.ingest import IngestSpool, RobotsGate
    from workers.ingest import IngestContext, set_ingest_context

    class AllowAll(RobotsGate):
        """No robots.txt to read offline: the benchmark's example.org pages are all admitted."""

        def refusal(self, read: ReadSource) -> str:
            return ""

    documents = [d for name, d in real_documents(data) if name in ("wice", "web_html")][:n_docs]
    reads = [ReadSource(f"https://example.org/{d.doc_id}", f"https://example.org/{d.doc_id}", d.title, d.text,
                        d.sentences, "", "2026-01-01T00:00:00Z") for d in documents]
    config = ServiceConfig(redis_url=redis_url, ingest_queue=f"side-scale-bench-{os.getpid()}")
    connection = redis.Redis.from_url(redis_url)
    queue = get_ingest_queue(connection, config)
    spool = IngestSpool(scratch / "spool")
    index_dir = scratch / "ingest-index"
    set_ingest_context(IngestContext(index_dir, spool))
    try:
        start = time.perf_counter()
        Ingestor(spool, queue, config, AllowAll(FetchConfig()))(reads)
        SimpleWorker([queue], connection=connection, serializer=queue.serializer).work(burst=True)
        seconds = time.perf_counter() - start
    finally:
        set_ingest_context(None)
        queue.empty()
        queue.delete(delete_jobs=True)
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    docs, passages = int(manifest.get("n_documents", len(reads))), int(manifest.get("n_passages", 0))
    return docs / seconds, passages / seconds, docs, passages, seconds


# ---------------------------------------------------------------- output

def _ms(x: float) -> str:
    return "-" if x != x else f"{x:.1f}"


def _mb(x: int) -> str:
    return "-" if not x else f"{x / 2**20:,.0f}"


def _r(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


def print_table(run: Run, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for name in ("passages", "backend", "index", "build s", "index MB", "RSS +MB", "dense p50", "dense p95",
                 "hybrid p50", "hybrid p95", "hyb+enc p95", "R@10 dense id/text", "R@10 hybrid id/text", "note"):
        table.add_column(name, justify="right" if name not in ("backend", "index", "note") else "left")
    for r in run.rows:
        table.add_row(f"{r.size:,}", r.backend, r.index, f"{r.build_s:.1f}", _mb(r.bytes), _mb(r.rss_growth),
                      _ms(r.dense_p50), _ms(r.dense_p95), _ms(r.hybrid_p50), _ms(r.hybrid_p95),
                      _ms(r.hybrid_enc_p95), f"{_r(r.recall_dense)}/{_r(r.recall_dense_text)}",
                      f"{_r(r.recall_hybrid)}/{_r(r.recall_hybrid_text)}", r.note)
    Console(width=220).print(table)


def print_targets(run: Run, ingest: tuple[float, float, int, int, float] | None) -> None:
    """PASS/MISS of each target, from the largest corpus measured."""
    embedded = [r for r in run.rows if r.backend == "embedded" and r.index not in ("bm25s", "flat")]
    largest = max((r.size for r in embedded), default=0)
    if not largest:
        embedded = []
    good = [r for r in embedded if r.size == largest and r.recall_hybrid_text >= TARGET_RECALL]
    best = min(good, key=lambda r: r.hybrid_p95, default=None)
    if not embedded:
        pass
    elif best is None:
        print(f"MISS  embedded hybrid at {largest:,}: no approximate index reached recall@10 >= {TARGET_RECALL}")
    else:
        verdict = "PASS" if best.hybrid_p95 <= TARGET_P95_MS else "MISS"
        print(f"{verdict}  embedded hybrid at {largest:,} passages ({best.index}): p95 {best.hybrid_p95:.1f} ms "
              f"(target <= {TARGET_P95_MS:.0f}; with query encoding {_ms(best.hybrid_enc_p95)} ms), recall@10 "
              f"{best.recall_hybrid_text:.3f} of flat by text ({best.recall_hybrid:.3f} by id; target >= "
              f"{TARGET_RECALL}); the target is at 1,000,000 passages")
    for m in (r for r in run.rows if r.backend == "milvus-lite"):
        ref = [r for r in run.rows if r.backend == "embedded" and r.size == m.size and r.index == "hnsw"]
        if m.hybrid_p95 != m.hybrid_p95 or not ref:
            print(f"MISS  Milvus at {m.size:,}: not measured ({m.note})")
            continue
        ratio = m.hybrid_p95 / ref[0].hybrid_p95
        verdict = "PASS" if ratio <= TARGET_MILVUS_RATIO else "MISS"
        print(f"{verdict}  Milvus (milvus-lite, {m.index}) at {m.size:,}: hybrid p95 {m.hybrid_p95:.1f} ms = "
              f"{ratio:.1f}x embedded hnsw ({ref[0].hybrid_p95:.1f} ms); target <= {TARGET_MILVUS_RATIO:.0f}x")
    if ingest is not None:
        docs_s, passages_s, docs, passages, seconds = ingest
        need = TARGET_INGEST_X * ENWIKI_NEW_CITATIONS_PER_S
        verdict = "PASS" if docs_s >= need else "MISS"
        print(f"{verdict}  ingestion: {docs} documents ({passages} passages) in {seconds:.1f} s = {docs_s:.2f} "
              f"documents/s, {passages_s:.1f} passages/s; English Wikipedia adds ~{ENWIKI_NEW_CITATIONS_PER_S:.3f} "
              f"citations/s ({ENWIKI_CITATIONS[0] / 1e6:.1f}M -> {ENWIKI_CITATIONS[1] / 1e6:.1f}M citations, "
              f"Feb 2023 -> Feb 2024, arXiv:2406.19291); target >= {need:.2f} documents/s (10x)")


# ---------------------------------------------------------------- main

def parse_args(config) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Build corpora of 10k / 100k / 1M passages of real text and print what retrieval costs "
                    "at each size: build time, memory, query p50/p95 and recall@10 against exact (flat) search, "
                    "for the embedded backend (bm25s + faiss flat / HNSW / IVF-PQ) and Milvus (milvus-lite), "
                    "plus the ingestion rate. Past the distinct real passages, text repeats with distinct ids.",
        epilog="Example: nice -n 10 .venv/bin/python benchmarks/scale.py --sizes 10000 100000 --unique 20000")
    parser.add_argument("--data", type=Path, default=Path(config.data_dir), help="shared data (SIDE_DATA_DIR)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000],
                        help="corpus sizes in passages (default: 10000 100000 1000000; none: ingestion only)")
    parser.add_argument("--unique", type=int, default=3_000,
                        help="distinct real passages to embed (cached; default 3000, ~10 min on 2 busy cores); "
                             "larger corpora repeat them")
    parser.add_argument("--kinds", nargs="+", default=["hnsw", "ivfpq"],
                        help="approximate faiss indexes to compare with flat, as retrieval.faiss_index specs "
                             "(default: hnsw ivfpq; e.g. hnsw:ef_search=64 ivfpq:nprobe=32,refine=flat)")
    parser.add_argument("--bm25-max-postings", type=int, nargs="*", default=[],
                        help="also measure each approximate kind with BM25's lists pruned to these many postings "
                             "(retrieval.bm25_max_postings); the recall reference stays whole BM25 + flat")
    parser.add_argument("--queries", type=int, default=200, help="real claims to query with (default 200)")
    parser.add_argument("--jitter", type=float, default=0.005,
                        help="sigma of the per-dimension noise that sets repeated vectors apart (default 0.005)")
    parser.add_argument("--no-encode", action="store_true", help="skip the hybrid timing that includes query encoding")
    parser.add_argument("--no-milvus", action="store_true", help="skip the Milvus (milvus-lite) backend")
    parser.add_argument("--milvus-max", type=int, default=100_000,
                        help="largest corpus to put into milvus-lite (default 100000; larger: reason printed)")
    parser.add_argument("--milvus-index", default="hnsw", help="Milvus dense index (default hnsw)")
    parser.add_argument("--milvus-budget", type=float, default=900.0,
                        help="seconds one Milvus insert may take before it is stopped and extrapolated (default 900)")
    parser.add_argument("--milvus-max-rss", type=float, default=12.0,
                        help="GB of server RSS at which a Milvus insert is stopped and extrapolated (default 12)")
    parser.add_argument("--ingest-docs", type=int, default=64,
                        help="documents pushed through the ingest queue (0: skip; default 64)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14", help="Redis for the ingest queue")
    parser.add_argument("--threads", type=int, default=1,
                        help="faiss threads (default 1: one query per request, as a service runs them)")
    return parser.parse_args()


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = load_config()
    args = parse_args(config)
    import faiss

    faiss.omp_set_num_threads(args.threads)
    var = Path(config.var_dir) / "bench" / "scale"
    var.mkdir(parents=True, exist_ok=True)
    run = Run()

    pool, counts = unique_passages(args.data, args.unique)
    run.unique = len(pool)
    pool_vectors = embed_cached([p.content_hash for p in pool], [p.index_text for p in pool], var)
    from side.retrieval.encoder import shared_encoder

    claims = [json.loads(line)["claim"] for line in (args.data / "wice" / "claim_dev.jsonl").open()]
    claims += [c.claim for c in load_scifact_claims(args.data / "scifact" / "claims_dev.jsonl")]
    claims = claims[:: max(1, len(claims) // args.queries)][: args.queries]
    claim_vectors = shared_encoder().encode(claims)
    tokens = pool_tokens(pool)
    sources = ", ".join(f"{name} {n:,}" for name, n in counts.items())
    print(f"real distinct passages: {len(pool):,} ({sources}); queries: {len(claims)} real claims (WiCE + SciFact dev)")
    for n in args.sizes:
        if n > len(pool):
            print(f"  {n:,} passages: {len(pool):,} real ones, then repeated text with distinct ids "
                  f"({n / len(pool):.0f} copies each; repeated vectors perturbed, sigma {args.jitter})")
    load0 = os.getloadavg()

    server = None
    with tempfile.TemporaryDirectory(dir=var) as tmp:
        scratch = Path(tmp)
        try:
            for n in args.sizes:
                corpus = scaled_corpus(pool, n)
                vectors = scaled_vectors(pool_vectors, n, args.jitter)
                bench_embedded(n, corpus, vectors, args.kinds, claims, claim_vectors, scratch, run, not args.no_encode,
                               len(pool), tokens, args.bm25_max_postings)
                if not args.no_milvus:
                    if n > args.milvus_max:
                        run.rows.append(Row(n, "milvus-lite", args.milvus_index, float("nan"), 0, 0,
                                            note=f"not run: > --milvus-max {args.milvus_max:,} (see the largest "
                                                 f"run's insert time and RSS)"))
                    else:
                        try:
                            server = server or MilvusLite(scratch)
                            bench_milvus(n, corpus, vectors, claims, claim_vectors, server, run, args.milvus_index,
                                         args.milvus_budget, args.milvus_max_rss)
                        except Exception as exc:  # noqa: BLE001 - the measured reason is a result
                            run.rows.append(Row(n, "milvus-lite", args.milvus_index, float("nan"), 0, 0,
                                                note=f"failed: {type(exc).__name__}: {str(exc)[:150]}"))
                del corpus, vectors
                gc.collect()
                print_table(run, f"so far (up to {n:,} passages)")
        finally:
            if server is not None:
                server.stop()
        ingest = None
        if args.ingest_docs:
            try:
                ingest = bench_ingest(args.data, args.ingest_docs, scratch, args.redis_url)
            except Exception as exc:  # noqa: BLE001 - say why, keep the table
                print(f"ingestion not measured: {type(exc).__name__}: {exc}")

    load1 = os.getloadavg()
    print_table(run, f"Retrieval cost against corpus size ({len(claims)} real claims, one query at a time, "
                     f"top {K}; faiss threads {args.threads}; times in ms)")
    print(f"CPU: {os.cpu_count()} cores shared with other work; load average {load0[0]:.1f} at start, "
          f"{load1[0]:.1f} at end: timings are under that load. dense/hybrid p50/p95 use pre-computed query "
          f"vectors; 'hyb+enc' includes encoding the claim. R@10: share of flat's top 10 found (hybrid: "
          f"against hybrid with flat). RSS +MB: process growth while building (Milvus: the server's).")
    print_targets(run, ingest)


if __name__ == "__main__":
    main()
