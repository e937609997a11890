"""How far the verdict rule alone can lift the levels' macro-F1 on WiCE dev, with today's verifier.

The verdict levels' target (macro-F1 >= 0.65 on WiCE claim dev) is missed at 0.53. Before a
better rule is sought, this asks what the best rule over the verifier's signals could give at
all, by cheating on purpose: every figure but the first is **fitted on WiCE dev itself**, so it is
an upper bound for a rule chosen on train data, never a figure to report as quality.

- ``shipped cuts``: the shipped support score and its two cuts (chosen on train): the reported figure.
- ``best two cuts on dev``: the two cuts on the same score that maximise dev macro-F1 (in-sample).
- ``3-class, 5-fold CV on dev``: multinomial logistic regression over the combiner's signals,
  trained on four fifths of dev and scored on the fifth (stratified), with and without class
  balancing; then the same with the unsupported-word tagger's claim-level summary added (mean,
  maximum and share of the claim's words it marks unsupported, and the second highest
  probability).

If even the dev-fitted rules stay well below the target, the missing part is in the signals (the
cross-encoder and what it reads), not in the rule that turns them into levels.

    .venv/bin/python benchmarks/level_ceiling.py [--model DIR] [--limit N]

Signals are computed once per model and cached under ``var/calibration`` (about 6 minutes for
the 349 dev claims on an idle 2-core CPU).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_wice
from side.evaluation.verify import LEVELS, level_metrics, wice_query, wice_sentences
from side.training.calibration import _cache_key, choose_cuts, level_signals
from side.verify.unsupported import tokenize_claim
from side.verify.verifier import FEATURES, Verifier


def tagger_summary(verifier: Verifier, pairs: list, cache: Path) -> np.ndarray:
    """Per claim: mean, max, share >= threshold and second-highest P(unsupported) over its words."""
    path = cache / f"tagger-summary-{_cache_key(verifier, pairs)}.npy"
    if path.is_file():
        return np.load(path)
    rows = []
    for start in range(0, len(pairs), 16):
        for item in verifier.run(pairs[start : start + 16]):
            tokens = tokenize_claim(item.query.claim)
            words = np.array([any(ch.isalnum() for ch in t.text) for t in tokens], dtype=bool)
            if verifier.tagger is None or not words.any():
                rows.append([0.0, 0.0, 0.0, 0.0])
                continue
            evidence = [e.text for e in item.decided.evidence]
            p = verifier.tagger.probabilities(tokens, evidence, item.sentences)[words]
            second = float(np.sort(p)[-2]) if len(p) > 1 else float(p.max())
            rows.append([float(p.mean()), float(p.max()), float((p >= verifier.tagger.threshold).mean()), second])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, np.array(rows))
    return np.array(rows)


def cv_three_class(x: np.ndarray, gold: list[str], balanced: bool, folds: int = 5) -> float:
    """Dev macro-F1 of a multinomial logistic regression scored on held-out folds of dev itself."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    y = np.array(gold)
    predicted = np.empty(len(y), dtype=object)
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=13).split(x, y):
        scaler = StandardScaler().fit(x[train])
        model = LogisticRegression(max_iter=3000, class_weight="balanced" if balanced else None)
        model.fit(scaler.transform(x[train]), y[train])
        predicted[test] = model.predict(scaler.transform(x[test]))
    return level_metrics(gold, [str(p) for p in predicted])["macro_f1"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    parser.add_argument("--limit", type=int, help="only the first N dev claims (a quick look)")
    args = parser.parse_args(argv)
    config = load_config()
    cache = Path(config.var_dir) / "calibration"
    verifier = Verifier.from_config(config, args.model)
    if verifier.combiner is None:
        parser.error("the model has no combiner.json")
    claims = load_wice(Path(config.data_dir) / "wice" / "claim_dev.jsonl")[: args.limit]
    pairs = [(wice_query(c), wice_sentences(c)) for c in claims]
    signals = level_signals(verifier, pairs, cache)
    keep = np.array([not r for r in signals.reasons])
    gold = [c.label for c, k in zip(claims, keep, strict=True) if k]
    x = signals.features[keep]
    score = np.array([verifier.combiner.score(dict(zip(FEATURES, row, strict=True))) for row in x])
    cuts = verifier.levels
    shipped = [LEVELS[0] if s >= cuts.supported else LEVELS[1] if s >= cuts.not_supported else LEVELS[2]
               for s in score]
    high, low, best = choose_cuts(score, gold)
    tagger = tagger_summary(verifier, pairs, cache)[keep]
    print(f"WiCE dev: {len(gold)} claims scored ({int((~keep).sum())} cannot check left out); "
          f"target macro-F1 0.65")
    print(f"{'rule':66} {'macro-F1':>8}")
    print(f"{'shipped cuts (train)':66} {level_metrics(gold, shipped)['macro_f1']:8.3f}")
    print(f"{f'best two cuts on dev ({high:.3f} / {low:.3f}), in-sample':66} {best:8.3f}")
    for name, features in (("signals", x), ("signals + tagger summary", np.hstack([x, tagger]))):
        for balanced in (False, True):
            label = f"3-class on {name}, 5-fold CV on dev{', balanced' if balanced else ''}"
            print(f"{label:66} {cv_three_class(features, gold, balanced):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
