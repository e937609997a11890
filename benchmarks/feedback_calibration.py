"""What ``side calibrate`` does to precision: a feedback export built from WiCE dev's gold labels.

No store has real reviews yet, so each WiCE dev claim stands in for a reviewed citation: the
shipped verifier scores it against its cited page, and its gold label becomes the decision a
patroller would take (the mapping of :mod:`side.training.feedback` read backwards):

* ``supported`` -> dismissed "the cited source is fine" (the flag would be wrong);
* ``partially_supported`` / ``not_supported`` -> accepted, every third one dismissed "the
  suggestion is wrong" instead (the flag is right either way);
* every tenth claim (n % 10 == 4, in both halves) -> dismissed "not relevant" (carries no label;
  ``side calibrate`` skips it).

The claims are split in two by position: ``side calibrate``'s choice is made on one half (the
export written to ``var/feedback-wice-dev-calibrate.jsonl``, so ``side calibrate --from`` it gives
the same cuts) and measured on the other, so the "after" figures are not the data the cuts were
chosen on. With ``--flagged-only`` only the claims the shipped cut flags are "reviewed", as in the
patrol queue. WiCE dev is evaluation data: nothing here is shipped. Signals are cached under
``var/calibration`` (the first run reads every page: about 3 minutes on 2 CPU cores).

    .venv/bin/python benchmarks/feedback_calibration.py [--model DIR] [--flagged-only]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import WiceClaim, load_wice
from side.evaluation.verify import wice_query, wice_sentences
from side.training.calibration import level_signals
from side.training.feedback import DismissReason, FeedbackAction, FeedbackRecord, write_feedback
from side.training.recalibrate import Rates, rates, recalibrate
from side.verify.levels import LevelThresholds
from side.verify.verifier import FEATURES, Verifier


def decision(n: int, label: str) -> tuple[FeedbackAction, str]:
    if n % 10 == 4:
        return FeedbackAction.DISMISS, DismissReason.NOT_RELEVANT
    if label == "supported":
        return FeedbackAction.DISMISS, DismissReason.SOURCE_IS_FINE
    if n % 3 == 2:
        return FeedbackAction.DISMISS, DismissReason.SUGGESTION_WRONG
    return FeedbackAction.ACCEPT, ""


def review(n: int, claim: WiceClaim, score: float | None, levels: LevelThresholds) -> FeedbackRecord:
    action, reason = decision(n, claim.label)
    query = wice_query(claim)
    return FeedbackRecord(claim=claim.claim, context=query.left_context, article_title=claim.title,
                          section=claim.section, cited_url="", score=score,
                          level=levels.level(score).value if score is not None else "cannot_check",
                          flagged=score is not None and score < levels.supported, evidence=(), action=action,
                          reason=reason, wiki="wice-dev", result_id=n)


def line(name: str, before: Rates, after: Rates) -> str:
    def fmt(value: float | None) -> str:
        return "  n/a" if value is None else f"{value:.3f}"

    return (f"{name:28} cut {before.cut:.4f} -> {after.cut:.4f}   P {fmt(before.precision)} -> {fmt(after.precision)}"
            f"   R {fmt(before.recall)} -> {fmt(after.recall)}   below {before.below} -> {after.below}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    parser.add_argument("--flagged-only", action="store_true", help="review only the claims the shipped cut flags")
    args = parser.parse_args(argv)
    config = load_config()
    verifier = Verifier.from_config(config, args.model)
    combiner = verifier.combiner
    assert combiner is not None, "the model has no combiner.json"
    claims = load_wice(Path(config.data_dir) / "wice" / "claim_dev.jsonl")
    signals = level_signals(verifier, [(wice_query(c), wice_sentences(c)) for c in claims],
                            Path(config.var_dir) / "calibration")
    scores = [None if reason else combiner.score(dict(zip(FEATURES, row, strict=True)))
              for row, reason in zip(signals.features, signals.reasons, strict=True)]
    current = combiner.levels
    records = [review(n, c, s, current) for n, (c, s) in enumerate(zip(claims, scores, strict=True))]
    if args.flagged_only:
        records = [r for r in records if r.flagged]
    fit, held_out = records[0::2], records[1::2]
    export = Path(config.var_dir) / "feedback-wice-dev-calibrate.jsonl"
    export.parent.mkdir(parents=True, exist_ok=True)
    write_feedback(fit, export)
    chosen = recalibrate(fit, current, config.verifier.min_reviews)
    print(f"WiCE dev: {len(claims)} claims, {len(records)} reviews ({'flagged only' if args.flagged_only else 'all'}); "
          f"calibrated on {chosen.labelled} labelled ({chosen.not_supported} flag-right), export {export}")
    print(line("flag, calibration half", chosen.flag_before, chosen.flag_after))
    print(line("report, calibration half", chosen.report_before, chosen.report_after))
    score = np.array([r.score for r in held_out if r.score is not None and r.reason != DismissReason.NOT_RELEVANT])
    negative = np.array([r.reason != DismissReason.SOURCE_IS_FINE for r in held_out
                         if r.score is not None and r.reason != DismissReason.NOT_RELEVANT])
    print(line("flag, held-out half", rates(score, negative, current.supported),
               rates(score, negative, chosen.after.supported)))
    print(line("report, held-out half", rates(score, negative, current.report),
               rates(score, negative, chosen.after.report)))
    print(f"thresholds {current} -> {chosen.after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
