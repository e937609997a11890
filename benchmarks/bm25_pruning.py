"""What pruning BM25's posting lists (retrieval.bm25_max_postings) costs and changes at one corpus size
(a script, not a test): the measurement that chose the default.

On the corpus of benchmarks/scale.py (``--unique`` distinct real passages repeated with distinct ids
to ``--size``), for each M of ``--max-postings``: BM25-only p50/p95 per query (top 100, one query at
a time), and hybrid recall@10 (union fusion, exact flat dense) against whole-list bm25s + flat, by id
and by text (scale.recall). Two more rows: whole lists through bm25s (the reference's cost) and whole
lists through the pruned query path with nothing cut (``nothing cut``), which separates what the cut
changes from tie order among exact copies (bm25s breaks ties its own way, the pruned path by id).

Claims: SciFact train (``--claims train``, the default: the choice of M is made on them) or the dev
claims benchmarks/scale.py reports with (``--claims dev``). Run with ``nice``:

    nice -n 10 .venv/bin/python benchmarks/bm25_pruning.py --size 1000000 --max-postings 10000 30000 100000 300000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import pool_tokens, recall, repeated_sparse, scaled_vectors, unique_passages  # noqa: E402

from side.config import load_config  # noqa: E402
from side.data import load_scifact_claims  # noqa: E402
from side.retrieval.dense import DenseIndex, embed_cached  # noqa: E402
from side.retrieval.encoder import shared_encoder  # noqa: E402
from side.retrieval.fusion import fuse  # noqa: E402
from side.retrieval.sparse import SparseIndex, prune_postings  # noqa: E402

K, DEPTH = 10, 100


def claims_of(data: Path, which: str, n: int) -> list[str]:
    if which == "train":
        claims = [c.claim for c in load_scifact_claims(data / "scifact" / "claims_train.jsonl")]
    else:
        claims = [json.loads(line)["claim"] for line in (data / "wice" / "claim_dev.jsonl").open()]
        claims += [c.claim for c in load_scifact_claims(data / "scifact" / "claims_dev.jsonl")]
    return claims[:: max(1, len(claims) // n)][:n]


def measure(sparse: SparseIndex, claims: list[str], dense_rows: list) -> tuple[list[list[int]], list[float]]:
    """Each claim's hybrid top-K passage ids, and its BM25 time in ms."""
    top, ms = [], []
    for claim, (dense_ids, dense_scores) in zip(claims, dense_rows, strict=True):
        start = time.perf_counter()
        ids, scores = sparse.retrieve([claim], DEPTH)
        ms.append((time.perf_counter() - start) * 1000)
        top.append([p for p, *_ in fuse((ids[0], scores[0]), (dense_ids[0], dense_scores[0]), "union")[:K]])
    return top, ms


def main() -> None:
    config = load_config()
    parser = argparse.ArgumentParser(description="BM25 posting-list pruning: cost and hybrid recall@10 per M.")
    parser.add_argument("--data", type=Path, default=Path(config.data_dir))
    parser.add_argument("--size", type=int, default=1_000_000, help="corpus size in passages (default 1000000)")
    parser.add_argument("--unique", type=int, default=3_000, help="distinct real passages (as benchmarks/scale.py)")
    parser.add_argument("--max-postings", type=int, nargs="+", default=[10_000, 30_000, 100_000, 300_000])
    parser.add_argument("--claims", choices=("train", "dev"), default="train")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(1)
    load0 = os.getloadavg()[0]
    pool, _ = unique_passages(args.data, args.unique)
    claims = claims_of(args.data, args.claims, args.queries)
    start = time.perf_counter()
    sparse = repeated_sparse(pool_tokens(pool), args.size)
    print(f"BM25 over {args.size:,} passages ({len(pool):,} distinct) built in {time.perf_counter() - start:.0f} s; "
          f"{len(claims)} {args.claims} claims", flush=True)
    vectors = embed_cached([p.content_hash for p in pool], [p.index_text for p in pool],
                           Path(config.var_dir) / "bench" / "scale", progress=False)
    dense = DenseIndex.build(scaled_vectors(vectors, args.size, 0.005), "flat")
    claim_vectors = shared_encoder().encode(claims)
    dense_rows = [dense.retrieve(claim_vectors[i:i + 1], DEPTH) for i in range(len(claims))]
    truth, ms = measure(sparse, claims, dense_rows)
    whole_path = sparse.with_max_postings(args.size)
    whole_path.pruned = prune_postings(sparse.bm25.scores, args.size)  # nothing cut, the pruned query path
    total = len(sparse.bm25.scores["data"])
    rows = [("whole lists, bm25s", sparse, total), ("whole lists, pruned path (nothing cut)", whole_path, total)]
    for m in args.max_postings:
        pruned = sparse.with_max_postings(m)
        rows.append((f"bm25_max_postings={m}", pruned, len(pruned.pruned.data) if pruned.pruned is not None else total))
    print(f"{'BM25':<40} {'postings kept':>14} {'p50 ms':>7} {'p95 ms':>7} {'R@10 id':>8} {'R@10 text':>9}")
    for name, index, kept in rows:
        top, ms = measure(index, claims, dense_rows) if index is not sparse else (truth, ms)
        print(f"{name:<40} {kept:>14,} {np.percentile(ms, 50):>7.1f} {np.percentile(ms, 95):>7.1f} "
              f"{recall(top, truth):>8.3f} {recall(top, truth, len(pool)):>9.3f}", flush=True)
    print(f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end; {os.cpu_count()} cores, shared; "
          "R@10: hybrid (union, flat dense) top 10 against whole-list bm25s + flat")


if __name__ == "__main__":
    main()
