"""Re-choose the flag and report cuts from reviewed results (``side calibrate --from FILE``).

The shipped cuts were chosen on a construction from WiCE train; patrollers' decisions are
labels from the task itself. Each decision says whether the cited source supports its claim
(:func:`side.training.feedback.citation_supported`); a citation is *flagged* when its support
score is below the flag cut (the supported cut) and *reported* on talk pages when it is below the
report cut. From the labelled reviews:

* flag precision: of the flagged, the share whose source did not support the claim; flag
  recall: of those not supported, the share flagged (both over the reviewed citations only);
* the new flag cut maximises F0.5 of "not supported" over the reviews (:data:`FLAG_BETA`: precision
  weighs more than recall, since a false flag costs a patroller's time and their trust in the
  queue, while a missed one leaves the article as it was), among the current cut and the
  midpoints between reviewed scores; ties keep the cut nearest the current one. Reviews
  come mostly from citations that were flagged, so the cut is moved up only as far as reviewed
  unflagged citations justify;
* the new report cut is the highest one under which "not supported" is still
  :data:`~side.training.calibration.REPORT_PRECISION` precise over the reviews (0.0, no
  report, if none is), and never above the not-supported cut, which itself never exceeds the
  flag cut.

Below ``min_reviews`` labelled reviews nothing changes: a handful of decisions would move the
cuts by noise. Scores are the ones stored with each result, so the outcome depends on the export
file alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from side.config import VerifierConfig
from side.training.feedback import FeedbackRecord, citation_supported
from side.verify.levels import LevelThresholds

__all__ = ["FLAG_BETA", "MIN_REVIEWS", "Rates", "Recalibration", "labelled", "rates", "choose_flag_cut",
           "choose_report_cut", "recalibrate"]

log = logging.getLogger(__name__)

#: Default of ``verifier.min_reviews``: fewer labelled reviews than this change nothing.
MIN_REVIEWS = VerifierConfig.min_reviews
#: The flag cut maximises F-beta of "not supported" with this beta (below 1: precision first).
FLAG_BETA = 0.5


@dataclass(frozen=True)
class Rates:
    """Precision and recall of "score below the cut means not supported" over labelled reviews."""

    cut: float
    precision: float | None
    recall: float | None
    #: How many reviews fall below the cut (flagged or reported).
    below: int


@dataclass(frozen=True)
class Recalibration:
    """What ``side calibrate`` decided, with the figures before and after."""

    reviews: int
    #: Reviews whose decision says whether the source supports the claim, and that have a score.
    labelled: int
    not_supported: int
    min_reviews: int
    changed: bool
    before: LevelThresholds
    after: LevelThresholds
    flag_before: Rates
    flag_after: Rates
    report_before: Rates
    report_after: Rates
    #: Reviews left out, by why: "no label" (not-relevant / other), "no score" (cannot check).
    left_out: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("before", "after"):
            data[key] = {"flag_threshold": data[key]["supported"], "not_supported_threshold":
                         data[key]["not_supported"], "report_threshold": data[key]["report"]}
        return data


def labelled(records: Sequence[FeedbackRecord]) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Scores and "not supported" labels of the reviews that carry both, and counts of those left out."""
    scores, negative = [], []
    left_out = {"no label": 0, "no score": 0}
    for record in records:
        supported = citation_supported(record)
        if supported is None:
            left_out["no label"] += 1
        elif record.score is None:
            left_out["no score"] += 1
        else:
            scores.append(record.score)
            negative.append(not supported)
    return np.array(scores, dtype=np.float64), np.array(negative, dtype=bool), left_out


def rates(score: np.ndarray, negative: np.ndarray, cut: float) -> Rates:
    below = score < cut
    hits = int((below & negative).sum())
    precision = hits / int(below.sum()) if below.any() else None
    recall = hits / int(negative.sum()) if negative.any() else None
    return Rates(round(cut, 4), precision, recall, int(below.sum()))


def _f_beta(score: np.ndarray, negative: np.ndarray, cut: float, beta: float) -> float:
    r = rates(score, negative, cut)
    if not r.precision or not r.recall:
        return 0.0
    return (1 + beta**2) * r.precision * r.recall / (beta**2 * r.precision + r.recall)


def choose_flag_cut(score: np.ndarray, negative: np.ndarray, current: float, beta: float = FLAG_BETA) -> float:
    """The cut with the best F-beta of "not supported"; ties keep the one nearest ``current``."""
    values = np.unique(score)
    candidates = [current, *((values[1:] + values[:-1]) / 2), values[0] - 1e-4, values[-1] + 1e-4] if len(values) \
        else [current]
    return float(max(candidates, key=lambda cut: (round(_f_beta(score, negative, cut, beta), 12), -abs(cut - current))))


def choose_report_cut(score: np.ndarray, negative: np.ndarray, precision: float) -> float:
    """The highest cut under which "not supported" keeps ``precision`` (0.0 if none does)."""
    order = np.argsort(score, kind="stable")
    ranked, hits = score[order], np.cumsum(negative[order])
    running = hits / np.arange(1, len(order) + 1)
    distinct = np.r_[ranked[1:] != ranked[:-1], True]  # a cut can only fall between scores
    ok = np.flatnonzero((running >= precision) & distinct)
    if not len(ok):
        return 0.0
    last = int(ok[-1])
    above = ranked[last + 1] if last + 1 < len(ranked) else ranked[last] + 1e-4
    return float((ranked[last] + above) / 2)


def recalibrate(records: Sequence[FeedbackRecord], current: LevelThresholds,
                min_reviews: int = MIN_REVIEWS) -> Recalibration:
    """New flag / not-supported / report cuts from reviewed results (unchanged below ``min_reviews``)."""
    from side.training.calibration import REPORT_PRECISION

    score, negative, left_out = labelled(records)
    after = current
    if len(score) >= min_reviews:
        flag = round(choose_flag_cut(score, negative, current.supported), 4)
        not_supported = min(current.not_supported, flag)
        report = min(round(choose_report_cut(score, negative, REPORT_PRECISION), 4), not_supported)
        after = LevelThresholds(flag, not_supported, report)
    else:
        log.warning("%d labelled reviews, fewer than the minimum %d: thresholds unchanged", len(score), min_reviews)
    return Recalibration(
        reviews=len(records), labelled=len(score), not_supported=int(negative.sum()), min_reviews=min_reviews,
        changed=after != current, before=current, after=after,
        flag_before=rates(score, negative, current.supported), flag_after=rates(score, negative, after.supported),
        report_before=rates(score, negative, current.report), report_after=rates(score, negative, after.report),
        left_out=left_out)
