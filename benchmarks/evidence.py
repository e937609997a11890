"""Evidence-sentence order: the shipped order against alternatives, on the same verifier run.

The shipped order (``side.verify.verifier.evidence_order``: the judged candidates in retrieval
order for a claim read with its article, the cross-encoder's rank fused with the retrieval rank
for a bare claim) is the peer; every alternative reorders the same page's sentences, so the figures differ only by
the order. Choose on the two train sets (WiCE non_supported_tokens train sub-claims, SciFact
train rationales); WiCE claim dev is printed for information and must not decide anything.

Alternatives:
- ``judged by retrieval``: the judged candidates in their retrieval order, the cross-encoder
  not consulted (what the verifier does for a claim read with its article).
- ``fusion``: the cross-encoder's rank fused with the retrieval rank over the judged candidates
  (what the verifier does for a bare claim, and did for every claim before 2026-11-28).
- ``retrieval``: the sum of page-standardized BM25 and cosine scores alone (no cross-encoder).
- ``neighbours a``: that score plus ``a`` times the better of the two adjacent sentences'
  scores, because WiCE gold sentences often come in runs.
- ``clauses b``: that score plus ``b`` times the best score against a clause of the claim
  (split at commas, semicolons, brackets and conjunctions), because a long Wikipedia sentence
  makes several sub-claims, each with its own evidence.
- ``cross-encoder``: P(SUPPORTS) alone over the judged candidates.
- ``fusion 0.5``: the shipped fusion with the cross-encoder at half weight.

    .venv/bin/python benchmarks/evidence.py [--sets wice-train scifact-train wice-dev] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_scifact_claims, load_scifact_corpus, load_wice
from side.evaluation.verify import ndcg, verifier_order, wice_query, wice_sentences
from side.verify.evidence import content_tokens, relevance, rrf
from side.verify.verifier import SUPPORTS, Prepared, Query, Verifier

Item = tuple[Query, list[str], set[int]]
CLAUSE = re.compile(r",|;|\(|\)| and | but | while | which | who | where | whereas | as well as ")


def wice_items(path) -> list[Item]:
    return [(wice_query(c), wice_sentences(c), c.gold_sentences) for c in load_wice(path) if c.gold_sentences]


def scifact_items(claims_path, corpus_path) -> list[Item]:
    corpus = load_scifact_corpus(corpus_path)
    return [
        (Query(claim.claim), list(corpus[doc_id].sentences), {i for s in sets for i in s["sentences"]})
        for claim in load_scifact_claims(claims_path)
        for doc_id, sets in claim.evidence.items()
        if doc_id in corpus
    ]


def clauses(claim: str) -> list[str]:
    return [p.strip() for p in CLAUSE.split(claim) if len(content_tokens(p)) >= 2]


def with_neighbours(scores: np.ndarray, weight: float) -> np.ndarray:
    padded = np.r_[scores.min(), scores, scores.min()]
    return scores + weight * np.maximum(padded[:-2], padded[2:])


def orders(verifier: Verifier, item: Prepared) -> dict[str, list[int]]:
    """Every order of one page's sentences, best first."""
    def query_scores(text: str) -> np.ndarray:
        return relevance(text, item.sentences, vectors, verifier.embeddings.encode([text])[0])[2]

    def ranked(scores: np.ndarray) -> list[int]:
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    def candidates_by(scores: np.ndarray) -> list[int]:
        shortlist = [item.candidates[i].index for i in np.argsort(-scores, kind="stable")]
        judged = set(shortlist)
        return shortlist + [i for i in item.selection.order if i not in judged]

    vectors = verifier.embeddings.encode(item.sentences, batch_size=64)
    full = query_scores(item.query.claim)
    parts = clauses(item.query.claim)
    best_clause = np.max([query_scores(p) for p in parts], axis=0) if len(parts) > 1 else full
    support = item.probabilities[: len(item.candidates), SUPPORTS]
    retrieval_rank = -np.arange(len(item.candidates), dtype=np.float64)
    return {
        "shipped (peer)": verifier_order(item),
        "judged by retrieval": candidates_by(retrieval_rank),
        "fusion": candidates_by(rrf(support) + rrf(retrieval_rank)),
        "retrieval": ranked(full),
        "neighbours 0.25": ranked(with_neighbours(full, 0.25)),
        "neighbours 0.5": ranked(with_neighbours(full, 0.5)),
        "clauses 0.5": ranked(full + 0.5 * best_clause),
        "cross-encoder": candidates_by(support),
        "fusion 0.5": candidates_by(0.5 * rrf(support) + rrf(retrieval_rank)),
    }


def measure(verifier: Verifier, name: str, items: list[Item]) -> None:
    started = time.perf_counter()
    found: dict[str, list[tuple[float, float]]] = {}
    for start in range(0, len(items), 16):
        batch = items[start : start + 16]
        for (_, _, gold), item in zip(batch, verifier.run([(q, s) for q, s, _ in batch]), strict=False):
            if item.selection is None:
                continue
            for label, order in orders(verifier, item).items():
                found.setdefault(label, []).append((len(gold & set(order[:5])) / len(gold), ndcg(order, gold, 5)))
    print(f"\n{name}: {len(items)} claim/page pairs with gold ({time.perf_counter() - started:.0f} s)")
    print(f"{'order':18s} {'R@5':>6s} {'NDCG@5':>7s} {'R@5 vs peer':>12s}")
    peer = np.mean([r for r, _ in found["shipped (peer)"]])
    for label, rows in found.items():
        recall, gain = np.mean(rows, axis=0)
        print(f"{label:18s} {recall:6.3f} {gain:7.3f} {recall - peer:+12.3f}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["wice-train", "scifact-train", "wice-dev"],
                        choices=["wice-train", "scifact-train", "wice-dev"])
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs of each set")
    args = parser.parse_args(argv)
    data = load_config().data_dir
    sets: dict[str, Callable[[], list[Item]]] = {
        "wice-train": lambda: wice_items(data / "wice" / "non_supported_tokens_train.jsonl"),
        "scifact-train": lambda: scifact_items(data / "scifact" / "claims_train.jsonl",
                                               data / "scifact" / "corpus.jsonl"),
        "wice-dev": lambda: wice_items(data / "wice" / "claim_dev.jsonl"),
    }
    verifier = Verifier.load()
    for name in args.sets:
        measure(verifier, name + (" (information only: do not choose on it)" if name == "wice-dev" else ""),
                sets[name]()[: args.limit])


if __name__ == "__main__":
    main()
