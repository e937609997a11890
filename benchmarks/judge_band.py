"""Choose the LLM judge's band on Side's support score, on WiCE train only.

The cascade (``[judge] mode = "uncertain"``) lets Side decide where its own level is precise and
sends the rest to the LLM. On the three-level construction from WiCE train that the level cuts
were chosen on (:func:`side.training.calibration.level_items`: partially supported sub-claims,
their supported parts, and their pages stripped of the evidence), this prints:

* ``band_low``: the highest score under which "not supported" is at least ``--precision``
  (0.8) precise (Side's own not-supported verdicts below it stand);
* ``band_high``: the lowest score at or above which "supported" is at least ``--precision``
  precise;
* the share of train items inside ``[band_low, band_high)`` (what the judge would be sent) and
  Side's level accuracy inside and outside it.

No dev or test data is read. Signals are cached under ``var/calibration`` like ``side calibrate``'s::

    python benchmarks/judge_band.py [--precision 0.8] [--items N]
"""

from __future__ import annotations

import argparse
import json
import logging

import numpy as np

from side.config import load_config
from side.training.calibration import choose_report_threshold, level_items, level_signals
from side.verify.levels import VerdictLevel
from side.verify.verifier import FEATURES, Verifier


def supported_floor(score: np.ndarray, levels: list[str], precision: float) -> float:
    """The lowest cut at or above which "supported" keeps ``precision`` (the mirror of the report cut)."""
    mirrored = ["not_supported" if lv == VerdictLevel.SUPPORTED else "other" for lv in levels]
    cut = choose_report_threshold(-score, mirrored, precision)["report_threshold"]
    return float(-cut) if cut else float(score.max() + 1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", type=float, default=0.8)
    parser.add_argument("--items", type=int, default=0,
                        help="the first N items of the construction only (0: all; a quicker, rougher choice)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    verifier = Verifier.from_config(config)
    items = level_items(config.data_dir)
    if args.items:
        items = items[: args.items]
    signals = level_signals(verifier, items, config.var_dir / "calibration")
    keep = np.array([not r for r in signals.reasons])
    levels = [i.level.value for i, k in zip(items, keep, strict=True) if k]
    combiner = verifier.combiner
    assert combiner is not None, "the shipped verifier has a combiner"
    score = np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in signals.features[keep]])
    low = choose_report_threshold(score, levels, args.precision)["report_threshold"]
    high = max(low, supported_floor(score, levels, args.precision))
    inside = (score >= low) & (score < high)
    side_levels = np.array([verifier.levels.level(float(s)).value for s in score])
    right = side_levels == np.array(levels)
    print(json.dumps({
        "train_items": len(levels), "precision": args.precision,
        "band_low": round(float(low), 4), "band_high": round(float(high), 4),
        "share_sent": round(float(inside.mean()), 4),
        "side_level_accuracy_inside": round(float(right[inside].mean()), 4) if inside.any() else None,
        "side_level_accuracy_outside": round(float(right[~inside].mean()), 4) if (~inside).any() else None,
    }, indent=2))


if __name__ == "__main__":
    main()
