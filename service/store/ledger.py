"""The bot's report ledger: which suggestions were posted (or printed by a dry run), and when.

Kept in the results store so the bot's rate rules (a daily cap per wiki, a cooldown per
article, never the same suggestion twice) hold across restarts and several bot processes.
:class:`ReportLedger` is a mixin of :class:`~service.store.store.Store`, so callers keep
asking the store (``store.record_report(...)``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.store.records import iso, required_time, utcnow
from service.store.tables import inserted_id, reports

__all__ = ["Report", "ReportLedger"]


@dataclass(frozen=True)
class Report:
    """One citation reported on a talk page (``posted``) or printed by a dry run (not posted)."""

    id: int
    wiki: str
    title: str
    check_id: str
    result_id: int | None
    suggestion_key: str
    talk_title: str
    posted: bool
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "created_at": iso(self.created_at)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        return cls(id=int(data["id"]), wiki=data["wiki"], title=data["title"], check_id=data["check_id"],
                   result_id=data.get("result_id"), suggestion_key=data["suggestion_key"],
                   talk_title=data["talk_title"], posted=bool(data["posted"]),
                   created_at=required_time(data.get("created_at")))


class ReportLedger:
    """Ledger queries over ``self.engine`` (the store's engine)."""

    engine: Engine

    def record_report(self, wiki: str, title: str, check_id: str, result_id: int | None, suggestion_key: str,
                      talk_title: str, posted: bool) -> Report:
        report = Report(id=0, wiki=wiki, title=title, check_id=check_id, result_id=result_id,
                        suggestion_key=suggestion_key, talk_title=talk_title, posted=posted, created_at=utcnow())
        row = asdict(report)
        del row["id"]
        with self.engine.begin() as conn:
            new_id = inserted_id(conn.execute(reports.insert().values(**row)))
        return replace(report, id=new_id)

    def reports_since(self, wiki: str, since: datetime, posted: bool = True) -> int:
        """Citations reported on ``wiki`` since ``since`` (the daily cap counts these)."""
        query = sa.select(sa.func.count()).select_from(reports).where(
            reports.c.wiki == wiki, reports.c.created_at >= since, reports.c.posted.is_(posted))
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def last_report(self, wiki: str, title: str, posted: bool = True) -> Report | None:
        """The newest report about an article (the cooldown starts from it)."""
        query = (reports.select().where(reports.c.wiki == wiki, reports.c.title == title,
                                        reports.c.posted.is_(posted))
                 .order_by(reports.c.created_at.desc(), reports.c.id.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _report(row)

    def suggestion_reported(self, wiki: str, key: str, posted: bool = True) -> bool:
        query = sa.select(reports.c.id).where(reports.c.wiki == wiki, reports.c.suggestion_key == key,
                                              reports.c.posted.is_(posted)).limit(1)
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None


def _report(row) -> Report:
    data = dict(row)
    data["posted"] = bool(data["posted"])
    return Report(**data)
