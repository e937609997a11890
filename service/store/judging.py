"""The LLM judge's part of the results store: its cache and the citations it is still to judge.

:class:`JudgeLedger` is a mixin of :class:`~service.store.store.Store`. A check's citations that
the judge could not answer for (endpoint down, slow, out of budget) are stored by
:meth:`~service.store.store.Store.finish` with their whole :class:`~side.verify.judge.JudgeRequest`
in ``judge_pending``; a later job (:func:`workers.jobs.run_judgements`) takes them,
:meth:`JudgeLedger.record_judgement` puts the verdict on the result and removes the row in one
transaction, and :meth:`JudgeLedger.postpone_judgement` leaves it for the next try. Nothing is
dropped: a row goes only when its result has the judge's answer.

:class:`StoreJudgeCache` is the judge's cache (:class:`side.verify.judge.JudgeCache`) in the store,
shared by every worker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from service.store.records import StoreError, utcnow
from service.store.tables import judge_cache, judge_pending, results
from side.extract.claims import Claim
from side.verify.judge import JudgeRequest, JudgeVerdict
from side.verify.levels import VerdictLevel
from side.verify.severity import missing_and_severity
from side.verify.verifier import Verdict

__all__ = ["PendingJudgement", "JudgeLedger", "StoreJudgeCache", "pending_rows"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class PendingJudgement:
    """One citation waiting for the judge."""

    id: int
    result_id: int
    check_id: str
    request: JudgeRequest
    attempts: int
    reason: str
    created_at: datetime


def pending_rows(conn: Connection, check_id: str, requests: dict[int, tuple[JudgeRequest, str]], now: datetime) -> int:
    """Add ``requests`` (by result position: request, reason) of ``check_id``'s freshly stored
    results to ``judge_pending``; returns how many were added."""
    if not requests:
        return 0
    ids = {row.position: row.id for row in conn.execute(sa.select(results.c.position, results.c.id).where(
        results.c.check_id == check_id, results.c.position.in_(list(requests))))}
    rows = [{"result_id": ids[position], "check_id": check_id, "request": _json(request.to_dict()), "attempts": 0,
             "reason": reason[:4000], "created_at": now} for position, (request, reason) in requests.items()]
    conn.execute(judge_pending.insert(), rows)
    return len(rows)


class JudgeLedger:
    """Store methods for the citations the judge is still to answer for."""

    engine: Engine

    def pending_judgements(self, check_id: str | None = None, limit: int = 100) -> list[PendingJudgement]:
        """Citations waiting for the judge (of ``check_id``, or all), oldest first."""
        query = sa.select(judge_pending).order_by(judge_pending.c.id).limit(limit)
        if check_id is not None:
            query = query.where(judge_pending.c.check_id == check_id)
        with self.engine.connect() as conn:
            return [PendingJudgement(row.id, row.result_id, row.check_id,
                                     JudgeRequest.from_dict(json.loads(row.request)), row.attempts, row.reason,
                                     row.created_at)
                    for row in conn.execute(query)]

    def count_pending_judgements(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(judge_pending)).scalar_one())

    def postpone_judgement(self, pending_id: int, reason: str) -> None:
        """The judge failed again: count the attempt and keep the row (and its result's note)."""
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(judge_pending.c.result_id).where(judge_pending.c.id == pending_id)).first()
            if row is None:
                return
            conn.execute(judge_pending.update().where(judge_pending.c.id == pending_id).values(
                attempts=judge_pending.c.attempts + 1, reason=reason[:4000]))
            conn.execute(results.update().where(results.c.id == row.result_id).values(
                judge_note=f"to be judged later by the LLM: {reason}"[:4000]))

    def drop_judgement(self, pending_id: int, note: str) -> None:
        """Stop waiting for the judge on this citation (it gave no verdict): Side's verdict stands."""
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(judge_pending.c.result_id).where(judge_pending.c.id == pending_id)).first()
            if row is None:
                return
            conn.execute(results.update().where(results.c.id == row.result_id).values(
                judge_note=note[:4000], judge_pending=False))
            conn.execute(judge_pending.delete().where(judge_pending.c.id == pending_id))

    def record_judgement(self, pending_id: int, verdict: JudgeVerdict) -> bool:
        """Put the judge's ``verdict`` on the pending citation's result and drop the row, in one
        transaction. An accepted verdict replaces the level (and the flag that follows from it) and
        names the model as who decided; a rejected one is kept with why. Returns whether it was
        accepted; a row already taken by another worker is a :class:`StoreError`. ``verdict`` is
        the reviewed one (:meth:`side.verify.cascade.Cascade.review`): a supported or partially
        supported verdict whose quotes Side's verifier did not back is kept, not taken."""
        with self.engine.begin() as conn:
            pending = conn.execute(sa.select(judge_pending).where(judge_pending.c.id == pending_id)).first()
            if pending is None:
                raise StoreError(f"no pending judgement {pending_id}")
            row = conn.execute(sa.select(results).where(results.c.id == pending.result_id)).mappings().one()
            conn.execute(results.update().where(results.c.id == pending.result_id).values(
                **_judged_values(row, verdict)))
            conn.execute(judge_pending.delete().where(judge_pending.c.id == pending_id))
        return not verdict.rejection_for(VerdictLevel(row["level"]) if row["verdict"] else None)


def _judged_values(row: Any, verdict: JudgeVerdict) -> dict[str, Any]:
    """The result row's new values once the judge has answered."""
    values: dict[str, Any] = {"judge": _json(verdict.to_dict()), "judge_pending": False}
    old_level = VerdictLevel(row["level"])
    rejection = verdict.rejection_for(old_level if row["verdict"] else None)
    if rejection:  # a supported verdict lifts a level Side scored only with its quotes backed
        values["judge_note"] = rejection
        return values
    flagged_otherwise = bool(row["flagged"]) and not old_level.needs_review  # e.g. a better source
    reasons = [r for r in json.loads(row["reasons"]) if not r.startswith("to be judged later")]
    reasons.append(f"{verdict.decided_by}: {verdict.level.text}")
    values.update(decided_by=verdict.decided_by, judge_note="", level=verdict.level, level_reason="",
                  flagged=verdict.level.needs_review or flagged_otherwise, unsure=False, reportable=False,
                  reasons=_json(reasons))
    unsupported: tuple[str, ...] = (verdict.unsupported,) if verdict.unsupported else ()
    if row["verdict"]:
        old = Verdict.from_dict(json.loads(row["verdict"]))
        unsupported = unsupported or old.unsupported
        values["verdict"] = _json(replace(old, level=verdict.level, unsupported=unsupported,
                                          reason=f"{verdict.decided_by}: {verdict.level.text}").to_dict())
    values["missing"] = values["severity"] = None  # what is missing, of the judge's level now
    if verdict.level.needs_review:
        raw = row.get("claim")
        claim = Claim.from_dict(json.loads(raw)) if raw else None
        missing, severity = missing_and_severity(unsupported, claim.text if claim else "",
                                                 bool(claim and claim.living_person))
        values["missing"], values["severity"] = missing.value, severity.value
    return values


class StoreJudgeCache:
    """The judge's verdicts in the results store (:class:`side.verify.judge.JudgeCache`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> JudgeVerdict | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(judge_cache.c.verdict).where(judge_cache.c.key == key)).first()
        return None if row is None else JudgeVerdict.from_dict(json.loads(row.verdict))

    def put(self, key: str, verdict: JudgeVerdict) -> None:
        data = {**verdict.to_dict(), "cached": False}
        row = {"key": key, "model": verdict.model[:255], "prompt_version": verdict.prompt_version[:64],
               "verdict": _json(data), "created_at": utcnow()}
        try:
            with self.engine.begin() as conn:
                conn.execute(judge_cache.insert(), [row])
        except sa.exc.IntegrityError:  # another worker cached the same verdict first
            pass
