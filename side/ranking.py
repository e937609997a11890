"""One order for every failure score that leaves Side: the level first, then Side's own score.

A Result's place in the patrol queue, the bot's backlog, ``side verify``'s report and
``side eval`` is decided by :func:`failure_rank`, never by ``1 - score`` alone:

1. **the band** (:class:`Band`), from the level shown and whether Side is sure of it:
   a sure *not supported* (Side's own below the sure flag cut, or the LLM judge's verdict when it
   was taken) first, then a sure *partially supported*, then an **unsure** Result (Side's guess
   between the sure flag cut and the supported cut: ranked after every flag), then *supported*
   (Side's or the judge's). A judge's verdict is sure by construction: the judge is asked exactly
   where Side is unsure (``mode = uncertain``), so its level moves the Result to that level's band.
2. **Side's own failure likelihood** (``1 - support score``) inside the band, so two verdicts of
   the same level keep Side's order. For a judge's verdict on a source Side could not score (a
   foreign page) that is the judge's own score (:func:`side.verify.cascade.judge_score`).

:func:`failure_score` folds both into one number in [0, 1], ``(band + likelihood) / 4``: each band
a quarter, so a score never crosses into another band's. Unscored Results (cannot check) have
none and come last. The patrol queue's extra signals (:mod:`side.priority`) add to the
likelihood inside a band (:func:`queue_key`), never across bands.

3. **the severity** (:class:`side.verify.severity.Severity`) of what is missing, as the last
   tie-break: of two Results in the same band with the same likelihood, a high gap (a number,
   date, name or quotation not backed) comes before a low one (wording only), and either before
   one with none. It never moves a Result past a higher likelihood.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import Protocol, TypeVar

from side.verify.levels import VerdictLevel


class Result(Protocol):
    """What the order reads of a Result (:class:`side.results.Result`, or a store's
    ``StoredResult``): a Protocol, so this module needs nothing from ``side.results``, which
    imports it."""

    @property
    def level(self) -> VerdictLevel: ...

    @property
    def failure_likelihood(self) -> float | None: ...

__all__ = ["Band", "band_of", "failure_score", "failure_rank", "result_band", "result_failure_score",
           "queue_key", "ranked", "severity_rank", "SEVERITY_ORDER"]

#: The severity's place as the last tie-break, smallest first: high, then low, then none.
SEVERITY_ORDER: dict[str, int] = {"high": 0, "low": 1}


def severity_rank(severity: str | None) -> int:
    """A Result's severity (:class:`side.verify.severity.Severity`, a ``str``) as a sort key,
    smallest first: high 0, low 1, none (or anything else) 2."""
    return SEVERITY_ORDER.get(str(severity) if severity is not None else "", len(SEVERITY_ORDER))


class Band(IntEnum):
    """A Result's band in the order; higher first."""

    SUPPORTED = 0
    UNSURE = 1
    PARTIALLY_SUPPORTED = 2
    NOT_SUPPORTED = 3


#: Bands in [0, 1]: each is this wide.
BANDS = len(Band)


def band_of(level: VerdictLevel, unsure: bool = False) -> Band | None:
    """The band of a level shown (None: cannot check). ``unsure`` (Side's guess, never a judge's)
    puts a needs-review level after the sure ones; a supported level is never unsure."""
    if level is VerdictLevel.CANNOT_CHECK:
        return None
    if level is VerdictLevel.SUPPORTED:
        return Band.SUPPORTED
    if unsure:
        return Band.UNSURE
    return Band.NOT_SUPPORTED if level is VerdictLevel.NOT_SUPPORTED else Band.PARTIALLY_SUPPORTED


def failure_score(level: VerdictLevel, failure_likelihood: float | None, unsure: bool = False) -> float | None:
    """``(band + likelihood) / 4`` in [0, 1], higher = more likely to fail review; None when the
    citation was not scored (no likelihood, or cannot check). ``failure_likelihood`` is Side's own
    ``1 - support score`` (clipped to [0, 1])."""
    band = band_of(level, unsure)
    if band is None or failure_likelihood is None:
        return None
    likelihood = min(1.0, max(0.0, float(failure_likelihood)))
    return round((int(band) + likelihood) / BANDS, 4)


def failure_rank(level: VerdictLevel, failure_likelihood: float | None, unsure: bool = False,
                 extra: float = 0.0, severity: str | None = None) -> tuple[int, float, float, int]:
    """A sort key, smallest first: unscored last, then band (higher first), then Side's likelihood
    plus ``extra`` (the queue's other signals, :mod:`side.priority`) inside the band, then the
    severity of what is missing (:func:`severity_rank`: high, low, none)."""
    band = band_of(level, unsure)
    if band is None or failure_likelihood is None:
        return (1, 0.0, 0.0, severity_rank(severity))
    return (0, -float(int(band)), -(float(failure_likelihood) + extra), severity_rank(severity))


def result_band(result: Result) -> Band | None:
    """The band of a Result, or of anything with its ``level``, ``unsure`` (False when it has none)
    and ``failure_likelihood`` (a store's :class:`~service.store.StoredResult`)."""
    return band_of(result.level, bool(getattr(result, "unsure", False)))


def result_failure_score(result: Result) -> float | None:
    """:func:`failure_score` of a Result: its level shown (the judge's when taken), whether Side is
    unsure of it, and Side's own failure likelihood."""
    return failure_score(result.level, result.failure_likelihood, bool(getattr(result, "unsure", False)))


def queue_key(result: Result, priority_score: float | None = None) -> tuple[int, float, float, int]:
    """The sort key of a Result in a queue (smallest first). ``priority_score`` (a
    :class:`side.priority.Priority` score: the likelihood plus its signals) orders inside a band
    in place of the bare likelihood; the severity (``severity``, None when it has none) breaks
    ties. Any object with a Result's ``level``, ``failure_likelihood`` and ``unsure`` (False when
    it has none) will do: a stored result too."""
    likelihood = result.failure_likelihood
    extra = 0.0 if priority_score is None or likelihood is None else float(priority_score) - likelihood
    return failure_rank(result.level, likelihood, bool(getattr(result, "unsure", False)), extra,
                        getattr(result, "severity", None))


R = TypeVar("R", bound="Result")


def ranked(results: Iterable[R], priorities: Sequence[float | None] | None = None) -> list[R]:
    """``results`` in queue order (stable): :func:`queue_key`, with ``priorities`` (one per result)
    when given."""
    items = list(results)
    scores = list(priorities) if priorities is not None else [None] * len(items)
    if len(scores) != len(items):
        raise ValueError(f"{len(scores)} priorities for {len(items)} results")
    order = sorted(range(len(items)), key=lambda n: queue_key(items[n], scores[n]))
    return [items[n] for n in order]
