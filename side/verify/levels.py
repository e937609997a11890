"""The four verdict levels Side speaks of, everywhere: CLI, JSON, API, store, dashboard, gadget, report.

The cross-encoder's classes (FEVER's SUPPORTS / REFUTES / NOT ENOUGH INFO, :class:`VerdictLabel`)
are the model's own vocabulary and stay inside the verifier. What an editor reads is a level:

* ``supported``: the source backs the whole claim;
* ``partially_supported``: it backs part of it (the words it does not back are named);
* ``not_supported``: it does not back the claim;
* ``cannot_check``: what was read is not the cited document (a paywall teaser, a wall, a soft
  404, an empty or foreign page...) or nothing could be read; always with its reason, never
  flagged, never reported on a talk page.

Levels come from the calibrated support score and two thresholds chosen on train data
(:class:`LevelThresholds`); a third, the sure flag cut, says where Side is sure of a level that
needs review (below it: flagged; from it to the supported cut: *unsure*, shown as Side's guess);
a fourth, stricter one is the talk-page report's operating point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["VerdictLevel", "LevelThresholds", "part_levels"]


class VerdictLevel(StrEnum):
    """What an editor is told about a citation. The value is the stored and JSON form."""

    SUPPORTED = "supported"
    PARTIALLY_SUPPORTED = "partially_supported"
    NOT_SUPPORTED = "not_supported"
    CANNOT_CHECK = "cannot_check"

    @property
    def text(self) -> str:
        """The words shown to people: "partially supported", "cannot check"."""
        return self.value.replace("_", " ")

    @property
    def needs_review(self) -> bool:
        """Partially or not supported: the citation is worth a patroller's look."""
        return self in (VerdictLevel.PARTIALLY_SUPPORTED, VerdictLevel.NOT_SUPPORTED)


@dataclass(frozen=True)
class LevelThresholds:
    """Cuts on the support score (higher = better supported), each chosen on train data.

    ``score >= supported`` is supported; ``not_supported <= score < supported`` is partially
    supported; below ``not_supported`` is not supported. ``report`` (at most ``not_supported``)
    is the talk-page report's operating point: a not-supported verdict below it is precise
    enough to post.

    ``flag`` (``report <= flag <= supported``; None: the supported cut, every needs-review level
    sure) is the sure flag cut: a partially or not supported score below it is *flagged* (likely
    fails review; chosen so that at most 10% of supported train citations fall below it), one at
    or above it is *unsure* (:meth:`unsure`): its level is Side's guess, never flagged or reported,
    and exactly what the LLM judge reads in ``mode = uncertain``.
    """

    supported: float = 0.5
    not_supported: float = 0.5
    report: float = 0.0
    flag: float | None = None

    def __post_init__(self) -> None:
        if self.flag is None:
            object.__setattr__(self, "flag", self.supported)
        if not self.report <= self.not_supported <= self.supported:
            raise ValueError(f"thresholds must satisfy report <= not_supported <= supported, got {self}")
        if not self.report <= float(self.flag) <= self.supported:  # type: ignore[arg-type]
            raise ValueError(f"thresholds must satisfy report <= flag <= supported, got {self}")

    @property
    def band(self) -> tuple[float, float]:
        """[flag, supported): the scores at which Side is unsure of a level that needs review."""
        return float(self.flag), self.supported  # type: ignore[arg-type]

    def unsure(self, level: VerdictLevel, score: float) -> bool:
        """A level that needs review at a score at or above the sure flag cut: Side's guess."""
        return level.needs_review and score >= self.flag  # type: ignore[operator]

    def sure_flag(self, level: VerdictLevel, score: float) -> bool:
        """A level that needs review below the sure flag cut: likely fails review."""
        return level.needs_review and score < self.flag  # type: ignore[operator]

    def level(self, score: float) -> VerdictLevel:
        if score >= self.supported:
            return VerdictLevel.SUPPORTED
        if score >= self.not_supported:
            return VerdictLevel.PARTIALLY_SUPPORTED
        return VerdictLevel.NOT_SUPPORTED

    def reportable(self, level: VerdictLevel, score: float) -> bool:
        """Precise enough for a talk page: not supported, and below the report cut (so never unsure)."""
        return level is VerdictLevel.NOT_SUPPORTED and score < self.report and score < self.flag  # type: ignore[operator]


def part_levels(whole: float, parts: Sequence[float], cuts: LevelThresholds, guard: bool = True) -> VerdictLevel:
    """The level of a claim read off its sub-claims' scores (:mod:`side.verify.decompose`).

    Supported when every part reaches the supported cut, not supported when no part reaches the
    not-supported cut, partially supported otherwise: a claim whose page backs one clause and
    not another is what WiCE calls partially supported, and one whole-sentence score blurs it.
    With ``guard``, the whole claim's score counts as one more part (a split that lost the
    sentence's sense cannot lift it). Without parts, the whole claim's score and the cuts decide.
    """
    if not parts:
        return cuts.level(whole)
    scores = [*parts, whole] if guard else list(parts)
    if min(scores) >= cuts.supported:
        return VerdictLevel.SUPPORTED
    if max(scores) < cuts.not_supported:
        return VerdictLevel.NOT_SUPPORTED
    return VerdictLevel.PARTIALLY_SUPPORTED
