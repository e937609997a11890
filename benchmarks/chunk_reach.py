"""How far a chunk model's own judgement reaches on a whole cited page: which chunks it is shown.

A model trained on chunks (``premise`` "chunk" in its verifier.json) judges, beside the
verifier's single candidates, up to :data:`side.verify.chunks.MAX_CHUNKS` chunks grown around
the best candidates. When retrieval misses the gold sentences, no judged chunk holds them and
the model cannot see the support however well it judges. This script scores, on WiCE dev, the
cross-encoder alone (its best P(SUPPORTS) over the rows it is shown, as
``benchmarks/verifier_models.py`` does for whole pages) for:

- ``around-K``: the K best candidates' chunks (K = 3 is what the verifier judges today);
- ``every``: the page cut into consecutive chunks of the model's length (MiniCheck's reading:
  the document's score is its best chunk's), no retrieval at all;
- ``around-3+every``: both;
- ``bm25-K``: the K chunks of ``every`` that BM25 ranks best for the claim (retrieval by chunk,
  not by sentence, at the cost of ``around-K``).

Each also says how many pairs the cross-encoder reads per claim (its cost grows with them) and
for how many claims with support some judged chunk holds a gold sentence (its reach).

    .venv/bin/python benchmarks/chunk_reach.py --model DIR [--limit N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import WiceClaim, load_wice
from side.evaluation.verify import failure_metrics, wice_query, wice_sentences
from side.verify.chunks import CHUNK_WORDS, Span, chunk_spans, chunk_text
from side.verify.crossencoder import SUPPORTS
from side.verify.evidence import bm25_scores
from side.verify.verifier import Prepared, Verifier

WICE_DEV = "wice/claim_dev.jsonl"
AROUND = (3, 5, 8)
BY_BM25 = (3, 5)
NAMES = [f"around-{k}" for k in AROUND] + ["every", "around-3+every"] + [f"bm25-{k}" for k in BY_BM25]


def every_chunk(sentences: list[str], words: int) -> list[Span]:
    """The page as consecutive chunks of at most ``words`` words (a longer sentence alone)."""
    spans, start = [], 0
    while start < len(sentences):
        end, used = start, 0
        while end < len(sentences) and (end == start or used + len(sentences[end].split()) <= words):
            used += len(sentences[end].split())
            end += 1
        spans.append((start, end))
        start = end
    return spans


def variants(item: Prepared, words: int) -> dict[str, list[Span]]:
    """The chunks each variant shows the model for one prepared claim."""
    centres = [c.index for c in item.candidates]
    shown = {f"around-{k}": chunk_spans(item.sentences, centres, words, k) for k in AROUND}
    shown["every"] = every_chunk(item.sentences, words)
    shown["around-3+every"] = list(dict.fromkeys(shown["around-3"] + shown["every"]))
    lexical = bm25_scores(item.query.claim, [chunk_text(item.sentences, s) for s in shown["every"]])
    ranked = [shown["every"][i] for i in np.argsort(-np.asarray(lexical), kind="stable")]
    for k in BY_BM25:
        shown[f"bm25-{k}"] = ranked[:k]
    return shown


def measure(verifier: Verifier, claims: list[WiceClaim]) -> dict[str, dict[str, float]]:
    """Per variant: AUROC(nf) / AUROC(ns) of the best row, pairs per claim, gold reach."""
    words = verifier.cross_encoder.chunk_words or CHUNK_WORDS
    best: dict[str, list[float]] = {}
    pairs: dict[str, list[int]] = {}
    reach: dict[str, list[bool]] = {}
    for claim in claims:
        item = verifier.run([(wice_query(claim), wice_sentences(claim))])[0]
        if not item.candidates or item.probabilities is None:
            for name in NAMES:
                best.setdefault(name, []).append(0.0)
                pairs.setdefault(name, []).append(0)
            continue
        judged = item.query if verifier.cross_encoder.query_context else replace(item.query, context="")
        singles = len(item.candidates)
        single_best = float(item.probabilities[:singles, SUPPORTS].max())  # rows: candidates, then windows
        # the chunks the verifier judged already have their rows; only the others are scored here
        score = dict(zip(verifier.windows(item.sentences, item.candidates),
                         item.probabilities[singles:, SUPPORTS].tolist(), strict=True))
        shown = variants(item, words)
        text = {span: chunk_text(item.sentences, span) for spans in shown.values() for span in spans}
        new = [t for t in dict.fromkeys(text.values()) if t not in score]
        probs = verifier.cross_encoder.predict([judged.pair(t) for t in new], batch_size=verifier.batch_size)
        score.update(zip(new, probs[:, SUPPORTS].tolist(), strict=True))
        gold = claim.gold_sentences
        for name, spans in shown.items():
            chunk_best = max((score[text[span]] for span in spans), default=0.0)
            best.setdefault(name, []).append(max(single_best, chunk_best))
            pairs.setdefault(name, []).append(singles + len(spans))
            if gold:
                reach.setdefault(name, []).append(any(a <= i < b for a, b in spans for i in gold))
    labels = [c.label for c in claims]
    out = {}
    for name, scores in best.items():
        metrics = failure_metrics(labels, np.array(scores))
        out[name] = {"auroc_nf": metrics["auroc_not_fully_supported"], "auroc_ns": metrics["auroc_not_supported"],
                     "pairs_mean": float(np.mean(pairs[name])), "pairs_p95": float(np.percentile(pairs[name], 95)),
                     "gold_reach": float(np.mean(reach.get(name, [False])))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="a chunk model directory (`side train verifier --chunks`)")
    parser.add_argument("--limit", type=int, help="only the first N WiCE dev claims (a quick look)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    path = Path(config.data_dir) / WICE_DEV
    if not path.is_file():
        print(f"error: {path} is missing (set SIDE_DATA_DIR)", file=sys.stderr)
        return 2
    if not (args.model / "verifier.json").is_file():
        print(f"error: {args.model} is not a model directory", file=sys.stderr)
        return 2
    verifier = Verifier.from_config(config, args.model)
    if verifier.cross_encoder.premise != "chunk":
        print(f"error: {args.model} was not trained on chunks (premise {verifier.cross_encoder.premise!r})",
              file=sys.stderr)
        return 2
    figures = measure(verifier, load_wice(path)[: args.limit])
    print("| chunks shown | AUROC(nf) | AUROC(ns) | pairs per claim, mean / p95 | gold reach |")
    print("|---|---|---|---|---|")
    for name, row in figures.items():
        print(f"| {name} | {row['auroc_nf']:.3f} | {row['auroc_ns']:.3f} | {row['pairs_mean']:.1f} / "
              f"{row['pairs_p95']:.0f} | {row['gold_reach']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
