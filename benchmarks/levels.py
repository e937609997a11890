"""Verdict levels: which way of turning the verifier's signals into three levels, chosen on train.

Every lever is scored by macro-F1 over supported / partially supported / not supported on the
three-level train construction (``side.training.calibration.level_items``), with 5-fold
cross-validation grouped by WiCE claim (sub-claims of one claim share a page). WiCE claim dev is
printed beside it, each lever refitted on the whole construction, for information: it must not
decide anything. Signals are cached under ``var/calibration``, so a second run takes seconds.

Levers:
- ``score + cuts``: the shipped binary combiner's support score, two cuts chosen on the folds.
- ``refit binary + cuts``: a logistic regression of "not supported" vs the rest on the
  construction's folds, two cuts.
- ``3-class argmax``: multinomial logistic regression over the signals (balanced classes).
- ``3-class E[level] + cuts``: the same model's P(supported) + P(partially)/2, two cuts.
- ``+ scifact``: the lever with SciFact train pairs (supported / not supported) added to the fit.

    .venv/bin/python benchmarks/levels.py [--model DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_wice
from side.evaluation.verify import LEVELS, level_metrics, majority_levels, wice_query, wice_sentences
from side.training.calibration import (
    Signals,
    choose_cuts,
    choose_report_threshold,
    level_items,
    level_signals,
)
from side.verify.verifier import FEATURES, Combiner, Verifier

Fit = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], list[str]]]


def _standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x.mean(0), x.std(0) + 1e-6


def _cuts_on(score_fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, y: np.ndarray):
    high, low, _ = choose_cuts(score_fn(x), [LEVELS[i] for i in y])
    return lambda z: [LEVELS[0] if s >= high else LEVELS[1] if s >= low else LEVELS[2] for s in score_fn(z)]


def shipped_score(combiner: Combiner) -> Fit:
    def score(x: np.ndarray) -> np.ndarray:
        return np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in x])

    return lambda x, y: _cuts_on(score, x, y)


def refit_binary(x: np.ndarray, y: np.ndarray):
    from sklearn.linear_model import LogisticRegression

    mean, scale = _standardize(x)
    model = LogisticRegression(class_weight="balanced", max_iter=2000).fit((x - mean) / scale, (y != 2).astype(int))
    return _cuts_on(lambda z: model.predict_proba((z - mean) / scale)[:, 1], x, y)


def _multinomial(x: np.ndarray, y: np.ndarray, c: float = 1.0):
    from sklearn.linear_model import LogisticRegression

    mean, scale = _standardize(x)
    model = LogisticRegression(class_weight="balanced", max_iter=2000, C=c).fit((x - mean) / scale, y)
    return lambda z: model.predict_proba((z - mean) / scale)


def three_class(x: np.ndarray, y: np.ndarray):
    proba = _multinomial(x, y)
    return lambda z: [LEVELS[i] for i in proba(z).argmax(1)]


def three_class_expected(x: np.ndarray, y: np.ndarray):
    proba = _multinomial(x, y)
    return _cuts_on(lambda z: proba(z) @ np.array([1.0, 0.5, 0.0]), x, y)


def cross_validate(fit: Fit, x: np.ndarray, y: np.ndarray, groups: np.ndarray, extra: tuple | None,
                   folds: int = 5) -> float:
    """Mean held-out macro-F1 over WiCE folds; ``extra`` (x, y) is added to every training fold."""
    from sklearn.model_selection import GroupKFold

    scores = []
    for train, test in GroupKFold(folds).split(x, y, groups):
        xt, yt = x[train], y[train]
        if extra is not None:
            xt, yt = np.vstack([xt, extra[0]]), np.concatenate([yt, extra[1]])
        predict = fit(xt, yt)
        scores.append(level_metrics([LEVELS[i] for i in y[test]], predict(x[test]))["macro_f1"])
    return float(np.mean(scores))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    args = parser.parse_args(argv)
    config = load_config()
    data = Path(config.data_dir)
    cache = Path(config.var_dir) / "calibration"
    verifier = Verifier.from_config(config, args.model)
    combiner = verifier.combiner
    assert combiner is not None, "the model has no combiner.json"

    wice_items = level_items(data)  # the items `side train verifier` reads, so the cache is shared
    claims = load_wice(data / "wice" / "claim_dev.jsonl")
    dev_signals = level_signals(verifier, [(wice_query(c), wice_sentences(c)) for c in claims], cache)
    sci_items = [i for i in level_items(data, scifact=True) if i.kind == "scifact"]
    items = wice_items + sci_items
    parts = [level_signals(verifier, wice_items, cache), level_signals(verifier, sci_items, cache)]
    signals = Signals(np.vstack([p.features for p in parts]), np.concatenate([p.bm25_max for p in parts]),
                      np.concatenate([p.cosine_max for p in parts]), parts[0].reasons + parts[1].reasons)
    y_all = np.array([LEVELS.index(i.level.value) for i in items])
    is_wice = np.array([i.kind != "scifact" for i in items]) & np.array([not r for r in signals.reasons])
    is_sci = np.array([i.kind == "scifact" for i in items]) & np.array([not r for r in signals.reasons])
    x, y = signals.features[is_wice], y_all[is_wice]
    groups = np.array([i.group for i in items])[is_wice]
    sci = (signals.features[is_sci], y_all[is_sci])

    dev_gold = [c.label for c in claims]
    print(f"train construction: {dict(zip(LEVELS, np.bincount(y, minlength=3).tolist(), strict=True))} "
          f"(+ SciFact {dict(zip(LEVELS, np.bincount(sci[1], minlength=3).tolist(), strict=True))}); "
          f"WiCE dev {len(claims)}")
    print(f"majority on WiCE dev: {level_metrics(dev_gold, majority_levels(dev_gold))['macro_f1']:.3f}")

    levers: list[tuple[str, Fit]] = [
        ("score + cuts", shipped_score(combiner)),
        ("refit binary + cuts", refit_binary),
        ("3-class argmax", three_class),
        ("3-class E[level] + cuts", three_class_expected),
    ]
    print(f"{'lever':34} {'train CV macro-F1':>18} {'WiCE dev macro-F1':>18}")
    for name, fit in levers:
        for with_sci in (False, True):
            cv = cross_validate(fit, x, y, groups, sci if with_sci else None)
            xt = np.vstack([x, sci[0]]) if with_sci else x
            yt = np.concatenate([y, sci[1]]) if with_sci else y
            dev = level_metrics(dev_gold, fit(xt, yt)(dev_signals.features))["macro_f1"]
            print(f"{name + (' + scifact' if with_sci else ''):34} {cv:18.3f} {dev:18.3f}")
    for name, values, dev_values in (("BM25-max", signals.bm25_max, dev_signals.bm25_max),
                                     ("MiniLM max-cosine", signals.cosine_max, dev_signals.cosine_max)):
        high, low, f1 = choose_cuts(values[is_wice], [LEVELS[i] for i in y])
        predicted = [LEVELS[0] if s >= high else LEVELS[1] if s >= low else LEVELS[2] for s in dev_values]
        print(f"{name + ' + cuts (train fit)':34} {f1:18.3f} {level_metrics(dev_gold, predicted)['macro_f1']:18.3f}")
    score = np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in x])
    report = choose_report_threshold(score, [LEVELS[i] for i in y])
    dev_score = np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in dev_signals.features])
    below = dev_score < report["report_threshold"]
    ns = np.array([g == LEVELS[2] for g in dev_gold])
    print(f"report cut {report['report_threshold']:.4f}: train P {report['precision']:.3f} R {report['recall']:.3f}; "
          f"WiCE dev P {ns[below].mean() if below.any() else float('nan'):.3f} R {(ns & below).sum() / ns.sum():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
