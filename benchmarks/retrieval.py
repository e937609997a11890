"""Speed of the retrieval engine on SciFact's 5,183 abstracts (a script, not a test).

- bm25s (what Side uses) against rank_bm25's BM25Okapi (the usual peer): index build time and
  the time to answer 300 claims, both measured in this run on this machine;
- faiss flat inner-product search: per-query latency p50/p95 for single queries.

The dense part reuses the abstract embeddings cached by ``side eval retrieval scifact`` when
they exist (embedding 5,183 abstracts takes minutes on a CPU) and embeds them otherwise.

    .venv/bin/python benchmarks/retrieval.py [--data DIR] [--queries 300]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np

from side.config import load_config
from side.data import load_scifact_claims
from side.evaluation.retrieval import SCIFACT_PASSAGE_WORDS, _cache_name
from side.retrieval.corpus import build_corpus, documents_from_scifact
from side.retrieval.dense import DenseIndex, embed_passages
from side.retrieval.sparse import SparseIndex

log = logging.getLogger("benchmarks.retrieval")


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def bench_bm25s(texts: list[str], queries: list[str], k: int) -> tuple[float, float]:
    index, build_s = timed(SparseIndex.build, texts)
    _, query_s = timed(index.retrieve, queries, k)
    return build_s, query_s


def bench_rank_bm25(texts: list[str], queries: list[str], k: int) -> tuple[float, float]:
    from rank_bm25 import BM25Okapi

    # The same tokens as bm25s sees (lower-cased, stopwords removed, stemmed), so only the
    # engines differ.
    sparse = SparseIndex.build(texts[:1])
    index, build_s = timed(lambda: BM25Okapi(sparse.tokenize(texts)))

    def answer() -> None:
        for tokens in sparse.tokenize(queries):
            scores = index.get_scores(tokens)
            np.argpartition(-scores, k)[:k]

    _, query_s = timed(answer)
    return build_s, query_s


def bench_faiss(vectors: np.ndarray, query_vectors: np.ndarray, k: int) -> tuple[float, float]:
    index = DenseIndex.build(vectors, "flat")
    latencies = []
    for vector in query_vectors:
        _, seconds = timed(index.retrieve, vector[None, :], k)
        latencies.append(seconds * 1000)
    return float(np.percentile(latencies, 50)), float(np.percentile(latencies, 95))


def corpus_vectors(data: Path, cache: Path) -> tuple[list[str], np.ndarray]:
    corpus_path = data / "scifact" / "corpus.jsonl"
    words = SCIFACT_PASSAGE_WORDS
    directory = cache / _cache_name(corpus_path, words, words // 2)
    corpus = build_corpus(documents_from_scifact(corpus_path), directory, words, words // 2)
    return [p.index_text for p in corpus.passages], embed_passages(corpus.passages, directory)


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=config.data_dir)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()

    texts, vectors = corpus_vectors(args.data, Path(config.var_dir) / "eval")
    claims = [c.claim for c in load_scifact_claims(args.data / "scifact" / "claims_dev.jsonl")][: args.queries]
    rows = [("bm25s", *bench_bm25s(texts, claims, args.k)), ("rank_bm25", *bench_rank_bm25(texts, claims, args.k))]
    from side.retrieval.encoder import shared_encoder

    p50, p95 = bench_faiss(vectors, shared_encoder().encode(claims), args.k)

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"SciFact: {len(texts)} passages, {len(claims)} queries, k={args.k}")
    for name in ("engine", "build s", f"{len(claims)} queries s", "queries/s"):
        table.add_column(name, justify="right")
    for name, build_s, query_s in rows:
        table.add_row(name, f"{build_s:.2f}", f"{query_s:.2f}", f"{len(claims) / query_s:.0f}")
    console = Console()
    console.print(table)
    speedup = rows[1][2] / rows[0][2]
    console.print(f"bm25s answers {speedup:.1f}x faster than rank_bm25 "
                  f"(build {rows[1][1] / rows[0][1]:.1f}x), same tokens, same run")
    console.print(f"faiss flat ({vectors.shape[0]} x {vectors.shape[1]}), single query: "
                  f"p50 {p50:.3f} ms, p95 {p95:.3f} ms")


if __name__ == "__main__":
    main()
