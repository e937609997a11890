"""What the dashboard's stats page plots: score histograms, flags per day, review outcomes.

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
                "acceptance_rate": self.acceptance_rate, "dismiss_reasons": self.dismiss_reasons}


def collect_stats(engine: Engine, days: int = 30, wiki: str | None = None) -> Stats:
    """The last ``days`` days of results (and all feedback) on ``wiki``, or on every wiki."""
    since = utcnow() - timedelta(days=days)
    stats = Stats()
    query = sa.select(results.c.score, results.c.flagged, results.c.created_at).join(
        checks, results.c.check_id == checks.c.id).where(results.c.created_at >= since)
    fb_query = sa.select(feedback.c.action, feedback.c.reason).join(
        results, feedback.c.result_id == results.c.id).join(checks, results.c.check_id == checks.c.id)
    count_query = sa.select(sa.func.count()).select_from(checks).where(checks.c.created_at >= since)
    if wiki:
        query, fb_query = query.where(checks.c.wiki == wiki), fb_query.where(checks.c.wiki == wiki)
        count_query = count_query.where(checks.c.wiki == wiki)
    per_day: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    with engine.connect() as conn:
        stats.checks = int(conn.execute(count_query).scalar_one())
        for score, flagged, created in conn.execute(query):
            stats.results += 1
            if score is not None:
                b = min(int(score * 10), 9)
                (stats.flagged_histogram if flagged else stats.score_histogram)[b] += 1
            if flagged:
                stats.flagged += 1
                per_day[created.date().isoformat()] += 1
        for action, reason in conn.execute(fb_query):
            if action == FeedbackAction.ACCEPT:
                stats.accepted += 1
            else:
                stats.dismissed += 1
                reasons[reason] += 1
    start = since.date()
    stats.flagged_per_day = [((start + timedelta(days=d)).isoformat(),
                              per_day.get((start + timedelta(days=d)).isoformat(), 0)) for d in range(days + 1)]
    stats.dismiss_reasons = dict(reasons)
    return stats
