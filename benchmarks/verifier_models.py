"""Verifier models side by side, in one run: the cross-encoder alone, the whole verifier, and the cost.

For each ``--model`` directory (default: the shipped model), on the same inputs and the same
machine:

* **cross-encoder alone on WiCE dev**, AUROC of its best P(SUPPORTS) for "not fully supported"
  (partially or not supported) and "not supported":
  - *oracle chunks*: each claim against the rows of ``wice/oracle_chunks_claim_dev.jsonl`` (its
    gold sentences with neighbours; a claim's score is its best chunk's, as WiCE's authors score);
    figures on this file are "oracle retrieval", not WiCE;
  - *whole pages*: the best of the verifier's judged rows (single candidates and windows or
    chunks) on the whole cited page, what production reads;
* **the whole verifier**: WiCE dev AUROC(ns) / AUROC(nf) / levels macro-F1
  (``side eval verify wice``), SciFact dev and Citation-Integrity dev with oracle abstracts
  (Label-Only and Label+Rationale F1; levels macro-F1 for Citation-Integrity);
* **cost**: milliseconds per citation with the source's sentences in hand and an empty embedding
  cache (p50 / p95), the models run interleaved claim by claim so load from other work hits both.

The quality figures are deterministic (no timing, no sampling), so they may be measured for one
model at a time; the latency figures need the models in one run (``--no-quality``).

    .venv/bin/python benchmarks/verifier_models.py --model side/models/verifier --model DIR [--limit N] [--latency 40]
    .venv/bin/python benchmarks/verifier_models.py --model side/models/verifier --model DIR --no-quality
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_wice, read_jsonl
from side.evaluation.verify import (
    citation_integrity_level,
    evaluate_scifact,
    failure_metrics,
    level_metrics,
    wice_query,
    wice_sentences,
)
from side.retrieval.encoder import EmbeddingCache
from side.verify.crossencoder import DEFAULT_MODEL_DIR, SUPPORTS
from side.verify.verifier import Query, Verifier

ORACLE_FILE = "wice/oracle_chunks_claim_dev.jsonl"
WICE_DEV = "wice/claim_dev.jsonl"


def oracle_alone(verifier: Verifier, data: Path, limit: int | None) -> dict[str, float]:
    """The cross-encoder's best P(SUPPORTS) over each claim's oracle chunks."""
    rows = list(read_jsonl(data / ORACLE_FILE))
    ids = list(dict.fromkeys(r["meta"]["id"] for r in rows))[:limit]
    keep = set(ids)
    rows = [r for r in rows if r["meta"]["id"] in keep]
    pairs = []
    for r in rows:
        meta = r["meta"]
        query = Query(r["claim"], meta.get("claim_title", ""), (meta.get("claim_section") or "").rstrip("."),
                      meta.get("claim_context", "") or "")
        evidence = r["evidence"]
        pairs.append(query.pair(" ".join(evidence) if isinstance(evidence, list) else str(evidence)))
    probs = verifier.cross_encoder.predict(pairs, batch_size=verifier.batch_size)
    best: dict[str, float] = {}
    label: dict[str, str] = {}
    for r, p in zip(rows, probs[:, SUPPORTS], strict=True):
        key = r["meta"]["id"]
        best[key] = max(best.get(key, 0.0), float(p))
        label[key] = r["label"]
    return _aurocs(failure_metrics([label[i] for i in ids], np.array([best[i] for i in ids])))


def _aurocs(metrics: dict[str, float]) -> dict[str, float]:
    """The two AUROCs of :func:`failure_metrics` (a low score meaning a failure)."""
    return {k: v for k, v in metrics.items() if k.startswith("auroc_")}


def wice_figures(verifier: Verifier, data: Path, limit: int | None) -> dict[str, float]:
    """Cross-encoder alone on whole pages and the whole verifier, from one pass over WiCE dev
    (the verifier's figures as ``side eval verify wice`` computes them)."""
    claims = load_wice(data / WICE_DEV)[:limit]
    items = []
    for start in range(0, len(claims), 16):
        items += verifier.run([(wice_query(c), wice_sentences(c)) for c in claims[start : start + 16]])
    labels = [c.label for c in claims]
    alone = np.array([float(p.probabilities[:, SUPPORTS].max()) if p.probabilities is not None else 0.0
                      for p in items])
    whole = failure_metrics(labels, alone)
    full = failure_metrics(labels, np.array([p.decided.score for p in items]))
    return {
        "alone_whole_pages_auroc_nf": whole["auroc_not_fully_supported"],
        "alone_whole_pages_auroc_ns": whole["auroc_not_supported"],
        "verifier_auroc_ns": full["auroc_not_supported"],
        "verifier_auroc_nf": full["auroc_not_fully_supported"],
        "verifier_levels_macro_f1": level_metrics(labels, [p.decided.level.value for p in items])["macro_f1"],
    }


def abstract_figures(verifier: Verifier, data: Path, task: str, limit: int | None) -> dict[str, float]:
    folder = "scifact" if task == "scifact" else "citation_integrity"
    result = evaluate_scifact(verifier, data / folder / "claims_dev.jsonl", data / folder / "corpus.jsonl", None,
                              limit, gold_level=citation_integrity_level if task != "scifact" else None)
    out = {"label_only_f1": result["abstract_label_only"]["f1"],
           "label_rationale_f1": result["abstract_label_rationale"]["f1"]}
    if "levels" in result:
        out["levels_macro_f1"] = result["levels"]["verifier"]["macro_f1"]
    return out


def latency(verifiers: list[Verifier], data: Path, n: int) -> list[dict[str, float]]:
    """p50 / p95 ms per citation, cold embedding cache, models interleaved claim by claim."""
    claims = load_wice(data / WICE_DEV)[: n + 3]
    times: list[list[float]] = [[] for _ in verifiers]
    for number, claim in enumerate(claims):
        order = list(range(len(verifiers)))
        if number % 2:
            order.reverse()
        for k in order:
            verifier = verifiers[k]
            verifier.embeddings = EmbeddingCache(verifier.encoder)
            started = time.perf_counter()
            verifier.verify(wice_query(claim), wice_sentences(claim))
            if number >= 3:  # the first three warm the code paths
                times[k].append((time.perf_counter() - started) * 1000)
    return [{"p50_ms": float(np.percentile(t, 50)), "p95_ms": float(np.percentile(t, 95))} for t in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append", default=[],
                        help="a verifier model directory (repeatable; default: the shipped one)")
    parser.add_argument("--limit", type=int, help="only the first N claims of each dev set (a quick look)")
    parser.add_argument("--latency", type=int, default=40, help="WiCE dev citations timed per model (0: none)")
    parser.add_argument("--skip-abstracts", action="store_true", help="leave out SciFact and Citation-Integrity")
    parser.add_argument("--no-quality", action="store_true", help="latency only")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    data = Path(config.data_dir)
    for name in (ORACLE_FILE, WICE_DEV):
        if not (data / name).is_file():
            print(f"error: {data / name} is missing (set SIDE_DATA_DIR)", file=sys.stderr)
            return 2
    dirs = args.model or [DEFAULT_MODEL_DIR]
    for d in dirs:
        if not d.is_dir():
            print(f"error: {d} is not a model directory", file=sys.stderr)
            return 2
    verifiers = [Verifier.from_config(config, d) for d in dirs]
    figures: dict[str, dict[str, float]] = {str(d): {} for d in dirs}
    for d, verifier in zip(dirs, verifiers, strict=True):
        if args.no_quality:
            break
        name = str(d)
        row = {f"alone_oracle_chunks_{k}": v for k, v in oracle_alone(verifier, data, args.limit).items()}
        row.update(wice_figures(verifier, data, args.limit))
        if not args.skip_abstracts:
            for task in ("scifact", "citation-integrity"):
                row.update({f"{task}_{k}": v for k, v in abstract_figures(verifier, data, task, args.limit).items()})
        figures[name] = row
        logging.warning("%s: %s", name, json.dumps(row))
    if args.latency:
        for d, cost in zip(dirs, latency(verifiers, data, args.latency), strict=True):
            figures[str(d)].update(cost)
    keys = list(next(iter(figures.values())))
    names = [Path(n).name if Path(n).resolve() != DEFAULT_MODEL_DIR else "shipped" for n in figures]
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{figures[n].get(key, float('nan')):.3f}" for n in figures) + " |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
