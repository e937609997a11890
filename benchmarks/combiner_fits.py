"""What the combiner can make of a verifier's signals: each signal alone, and combiners fitted on
train data in several ways, all scored on WiCE dev.

``side train verifier`` fits one logistic combiner on WiCE train and SciFact train signals
pooled (:func:`side.training.calibration.fit_combiner`). A cross-encoder that is strong on bare
scientific claims and weak on Wikipedia claims against whole web pages gets, from the pooled fit,
the weight it earns on SciFact, and Wikipedia claims pay for it. This script shows that for one
model directory, on the same signals the training command computes (cached under ``--cache``):

* each signal's AUROC on WiCE dev, for "not supported" and "not fully supported" (a low value
  meaning failure; below 0.5, the signal runs the other way);
* combiners fitted on train data only, then scored on WiCE dev: the pooled fit as shipped, WiCE
  train alone, each without the cross-encoder's signals, and without the "another claim's page"
  negatives. Nothing here is fitted on dev.

With a model trained with ``--combiner-holdout``, the train signals are those of its held-out
claims, as ``side train verifier --combiner-only`` reads them.

    .venv/bin/python benchmarks/combiner_fits.py [--model DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_wice
from side.evaluation.verify import auroc, wice_query, wice_sentences
from side.training.calibration import _scifact_items, _wice_items, level_signals
from side.verify.verifier import FEATURES, Verifier

WICE_DEV = "wice/claim_dev.jsonl"


def fit_and_score(x: np.ndarray, y: np.ndarray, dev: np.ndarray, columns: list[int], seed: int) -> np.ndarray:
    """A combiner as ``fit_combiner`` fits it, on ``columns`` of the train rows; its dev scores."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x[:, columns].mean(0), x[:, columns].std(0) + 1e-6
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000, random_state=seed)
    model.fit((x[:, columns] - mean) / scale, y)
    return model.decision_function((dev[:, columns] - mean) / scale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a verifier model directory (default: the shipped one)")
    parser.add_argument("--cache", type=Path, help="signal cache (default: VAR_DIR/calibration, as training)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    data = Path(config.data_dir)
    verifier = Verifier.from_config(config, args.model)
    verifier.combiner = None
    holdout = float(verifier.cross_encoder.meta.get("combiner_holdout", 0.0))
    cache = args.cache or Path(config.var_dir) / "calibration"

    wice_items, wice_labels, wice_kinds = _wice_items(data, random.Random(args.seed), holdout)
    sci_items, sci_labels = _scifact_items(data, holdout)
    kinds = np.array(wice_kinds + ["scifact"] * len(sci_items))
    x = level_signals(verifier, wice_items + sci_items, cache).features
    y = np.array(wice_labels + sci_labels)
    claims = load_wice(data / WICE_DEV)
    dev = level_signals(verifier, [(wice_query(c), wice_sentences(c)) for c in claims], cache).features
    ns = np.array([c.label == "not_supported" for c in claims])
    nf = np.array([c.label != "supported" for c in claims])

    every = list(range(len(FEATURES)))
    no_ce = [i for i, f in enumerate(FEATURES) if not f.startswith("ce_")]
    wice = kinds != "scifact"
    fits = {
        "pooled (as shipped)": (np.ones(len(y), bool), every),
        "pooled, no cross-encoder signals": (np.ones(len(y), bool), no_ce),
        "pooled, no other-page negatives": (kinds != "other_page", every),
        "WiCE train only": (wice, every),
        "WiCE train only, no cross-encoder signals": (wice, no_ce),
    }
    figures: dict = {"model": str(args.model or "shipped"), "holdout": holdout,
                     "train_rows": dict(Counter(kinds.tolist())),
                     "signals": {}, "fits": {}}
    print(f"WiCE dev, {len(claims)} claims; train rows {figures['train_rows']}")
    print("| signal alone | AUROC(ns) | AUROC(nf) |\n|---|---|---|")
    for i, name in enumerate(FEATURES):
        pair = (round(auroc(ns, -dev[:, i]), 3), round(auroc(nf, -dev[:, i]), 3))
        figures["signals"][name] = pair
        print(f"| {name} | {pair[0]:.3f} | {pair[1]:.3f} |")
    print("| combiner fitted on train | AUROC(ns) | AUROC(nf) |\n|---|---|---|")
    for name, (rows, columns) in fits.items():
        score = fit_and_score(x[rows], y[rows], dev, columns, args.seed)
        pair = (round(auroc(ns, -score), 3), round(auroc(nf, -score), 3))
        figures["fits"][name] = pair
        print(f"| {name} | {pair[0]:.3f} | {pair[1]:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
