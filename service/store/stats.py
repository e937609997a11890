"""What the dashboard's stats page plots: verdicts by level, score histograms, flags per day, review outcomes.

Computed from the stored results in one pass per table, so it stays one read however many
checks there are; :meth:`Store.stats <service.store.store.Store.stats>` calls :func:`collect_stats`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.store.records import FeedbackAction, utcnow
from service.store.tables import checks, feedback, results
from side.verify.levels import VerdictLevel

__all__ = ["Stats", "collect_stats"]


@dataclass
class Stats:
    """What the dashboard's stats page plots."""

    checks: int = 0
    results: int = 0
    flagged: int = 0
    #: Scores in ten bins [0, 0.1), …, [0.9, 1.0], split into flagged and not.
    score_bins: list[float] = field(default_factory=lambda: [i / 10 for i in range(11)])
    score_histogram: list[int] = field(default_factory=lambda: [0] * 10)
    flagged_histogram: list[int] = field(default_factory=lambda: [0] * 10)
    flagged_per_day: list[tuple[str, int]] = field(default_factory=list)
    accepted: int = 0
    dismissed: int = 0
    dismiss_reasons: dict[str, int] = field(default_factory=dict)
    #: Results per verdict level, every level present (cannot check included: it is a verdict
    #: people read, but never a flag).
    levels: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VerdictLevel, 0))
    #: The score histogram split by the level each scored result was given (cannot check has
    #: no score to bin).
    level_histogram: dict[str, list[int]] = field(default_factory=lambda: {
        level: [0] * 10 for level in VerdictLevel if level is not VerdictLevel.CANNOT_CHECK})
    #: Flagged results per day and level (cannot check left out), in the days of :attr:`flagged_per_day`.
    flagged_per_day_by_level: dict[str, list[int]] = field(default_factory=dict)

    @property
    def flagged_for_review(self) -> int:
        """Flagged results whose source was checked: an unread source is never a failure, even
        on a row flagged before levels were kept."""
        return sum(sum(days) for days in self.flagged_per_day_by_level.values())

    @property
    def acceptance_rate(self) -> float | None:
        total = self.accepted + self.dismissed
        return None if total == 0 else self.accepted / total

    def to_dict(self) -> dict[str, Any]:
        return {"checks": self.checks, "results": self.results, "flagged": self.flagged,
                "score_bins": self.score_bins, "score_histogram": self.score_histogram,
                "flagged_histogram": self.flagged_histogram,
                "flagged_per_day": [list(day) for day in self.flagged_per_day],
                "accepted": self.accepted, "dismissed": self.dismissed,
                "acceptance_rate": self.acceptance_rate, "dismiss_reasons": self.dismiss_reasons,
                "levels": dict(self.levels), "level_histogram": self.level_histogram,
                "flagged_per_day_by_level": self.flagged_per_day_by_level,
                "flagged_for_review": self.flagged_for_review}


def collect_stats(engine: Engine, days: int = 30, wiki: str | None = None) -> Stats:
    """The last ``days`` days of results (and all feedback) on ``wiki``, or on every wiki."""
    since = utcnow() - timedelta(days=days)
    stats = Stats()
    query = sa.select(results.c.score, results.c.flagged, results.c.created_at, results.c.level).join(
        checks, results.c.check_id == checks.c.id).where(results.c.created_at >= since)
    fb_query = sa.select(feedback.c.action, feedback.c.reason).join(
        results, feedback.c.result_id == results.c.id).join(checks, results.c.check_id == checks.c.id)
    count_query = sa.select(sa.func.count()).select_from(checks).where(checks.c.created_at >= since)
    if wiki:
        query, fb_query = query.where(checks.c.wiki == wiki), fb_query.where(checks.c.wiki == wiki)
        count_query = count_query.where(checks.c.wiki == wiki)
    per_day: Counter[str] = Counter()
    per_day_level: Counter[tuple[str, str]] = Counter()
    reasons: Counter[str] = Counter()
    with engine.connect() as conn:
        stats.checks = int(conn.execute(count_query).scalar_one())
        for score, flagged, created, level in conn.execute(query):
            stats.results += 1
            stats.levels[level] = stats.levels.get(level, 0) + 1
            if score is not None:
                b = min(int(score * 10), 9)
                (stats.flagged_histogram if flagged else stats.score_histogram)[b] += 1
                if level in stats.level_histogram:
                    stats.level_histogram[level][b] += 1
            if flagged:
                stats.flagged += 1
                per_day[created.date().isoformat()] += 1
                per_day_level[created.date().isoformat(), level] += 1
        for action, reason in conn.execute(fb_query):
            if action == FeedbackAction.ACCEPT:
                stats.accepted += 1
            else:
                stats.dismissed += 1
                reasons[reason] += 1
    start = since.date()
    stats.flagged_per_day = [((start + timedelta(days=d)).isoformat(),
                              per_day.get((start + timedelta(days=d)).isoformat(), 0)) for d in range(days + 1)]
    stats.flagged_per_day_by_level = {
        level: [per_day_level.get((day, level), 0) for day, _ in stats.flagged_per_day]
        for level in VerdictLevel if level is not VerdictLevel.CANNOT_CHECK}
    stats.dismiss_reasons = dict(reasons)
    return stats
