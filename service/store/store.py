"""The results store: every Check, its Verdicts, Suggestions, review feedback and bot reports.

One small data layer over SQLAlchemy Core, so the same code runs on the embedded default
(SQLite under ``var/``) and on Toolforge's ToolsDB (MariaDB, ``mysql+pymysql://…``). The schema
is versioned with Alembic migrations (``service/migrations``) applied by :meth:`Store.open`, so a
deployed database is upgraded in place instead of being recreated.

Records go in and come out typed (:mod:`service.store.records`): a Check's Claims, a Result's
Verdict and Suggestions are kept as their ``to_dict()`` JSON and read back with ``from_dict``
here, and nowhere else.

Writes are idempotent where the queue may repeat work: a Check's id is derived from the work
itself (:func:`check_key`), and :meth:`Store.finish` replaces a check's results in one
transaction, so a job that runs twice never duplicates rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from service.store.judging import JudgeLedger, pending_rows
from service.store.ledger import ReportLedger
from service.store.migrate import make_engine, migrate, schema_version
from service.store.records import (
    Check,
    CheckRequest,
    CheckStatus,
    DismissReason,
    Feedback,
    FeedbackAction,
    Origin,
    QueueView,
    ReviewStatus,
    StoredLeadClaim,
    StoredResult,
    StoreError,
    missing_kind,
    parse_enum,
    severity_of,
    utcnow,
)
from service.store.stats import Stats, collect_stats
from service.store.tables import article_leads, checks, feedback, inserted_id, judge_pending, lead_claims, results
from side.config import PriorityConfig
from side.errors import InputError
from side.extract.claims import Claim
from side.extract.lead import ArticleLead
from side.pipeline import Result, SourceCopy, SourceStatus, Suggestion
from side.priority import Priority, result_priority
from side.ranking import SEVERITY_ORDER, Band
from side.verify.judge import JudgeVerdict
from side.verify.lead import LeadVerdict
from side.verify.levels import VerdictLevel
from side.verify.severity import Severity
from side.verify.verifier import Verdict, VerdictLabel

__all__ = ["Store"]

#: The review status a feedback action leaves a result in.
_REVIEW = {FeedbackAction.ACCEPT: ReviewStatus.ACCEPTED, FeedbackAction.DISMISS: ReviewStatus.DISMISSED}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Store(ReportLedger, JudgeLedger):
    """Checks, results, feedback and reports in one database (the report ledger: :class:`ReportLedger`;
    the judge's backlog: :class:`JudgeLedger`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, upgrade: bool = True) -> Store:
        try:
            engine = make_engine(url)
        except (sa.exc.ArgumentError, ModuleNotFoundError) as exc:
            raise StoreError(f"invalid database URL {url!r}: {exc}") from exc
        try:
            if upgrade:
                migrate(engine)
        except sa.exc.OperationalError as exc:
            raise StoreError(f"cannot open the results store {engine.url!r}: {exc.orig}") from exc
        return cls(engine)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    def ping(self) -> str | None:
        """Schema version when the database answers (for /healthz)."""
        return schema_version(self.engine)

    # -- checks -----------------------------------------------------------------------------

    def add_check(self, new: CheckRequest) -> tuple[Check, bool]:
        """Insert a queued Check unless this exact work is known; returns (check, created)."""
        origin = parse_enum(Origin, new.origin, "origin")
        check_id = new.id
        existing = self.check(check_id)
        if existing is not None:
            return existing, False
        row = {"id": check_id, "wiki": new.wiki, "title": new.title, "revision": new.revision,
               "parent_revision": new.parent_revision, "origin": origin, "status": CheckStatus.QUEUED,
               "error": "", "payload": _payload(new.claims, new.keys()), "citations": len(new.claims), "flagged": 0,
               "attempts": 0, "created_at": utcnow()}
        try:
            with self._tx() as conn:
                conn.execute(checks.insert().values(**row))
                if new.lead is not None:
                    conn.execute(article_leads.insert().values(check_id=check_id, payload=_json(new.lead.to_dict()),
                                                               created_at=row["created_at"]))
        except sa.exc.IntegrityError:  # a concurrent request inserted it first
            return self.check(check_id), False  # type: ignore[return-value]
        return self.check(check_id), True  # type: ignore[return-value]

    def check(self, check_id: str) -> Check | None:
        with self.engine.connect() as conn:
            row = conn.execute(checks.select().where(checks.c.id == check_id)).mappings().first()
        return None if row is None else _check_record(row)

    def checks(self, status: CheckStatus | None = None, origin: Origin | None = None, wiki: str | None = None,
               limit: int = 100) -> list[Check]:
        query = checks.select().order_by(checks.c.created_at.desc()).limit(limit)
        for column, value in (("status", status), ("origin", origin), ("wiki", wiki)):
            if value is not None:
                query = query.where(checks.c[column] == value)
        with self.engine.connect() as conn:
            return [_check_record(r) for r in conn.execute(query).mappings()]

    def start(self, check_id: str) -> Check:
        """Mark a check running (one more attempt)."""
        with self._tx() as conn:
            updated = conn.execute(checks.update().where(checks.c.id == check_id).values(
                status=CheckStatus.RUNNING, started_at=utcnow(), error="", attempts=checks.c.attempts + 1))
        if updated.rowcount == 0:
            raise StoreError(f"unknown check {check_id}")
        return self.check(check_id)  # type: ignore[return-value]

    def finish(self, check_id: str, outcomes: list[Result], seconds: float,
               lead: list[LeadVerdict] | None = None,
               priorities: list[Priority] | None = None) -> Check:
        """Store the outcome (one Result per claim, in claim order) and, when given, the lead
        claims' verdicts against the body; replaces old results (old lead claims only when
        ``lead`` is given).

        ``priorities`` (one per Result, from :class:`side.priority.Prioritizer`) order the patrol
        queue; without them each Result gets the default weights' priority, with no history.
        A Result still to be judged (its ``judge_request``) goes to ``judge_pending`` in the same
        transaction, replacing any a previous run of the check left.
        """
        record = self.check(check_id)
        if record is None:
            raise StoreError(f"unknown check {check_id}")
        if priorities is None:
            priorities = [result_priority(r, PriorityConfig()) for r in outcomes]
        if len(priorities) != len(outcomes):
            raise StoreError(f"{len(priorities)} priorities for {len(outcomes)} results")
        now = utcnow()
        rows = [_result_row(record, n, result, now, rank)
                for n, (result, rank) in enumerate(zip(outcomes, priorities, strict=True))]
        with self._tx() as conn:
            conn.execute(judge_pending.delete().where(judge_pending.c.check_id == check_id))
            conn.execute(results.delete().where(results.c.check_id == check_id))
            if rows:
                conn.execute(results.insert(), rows)
            pending_rows(conn, check_id, {n: (r.judge_request, r.judge_note) for n, r in enumerate(outcomes)
                                          if r.judge_request is not None}, now)
            if lead is not None:
                conn.execute(lead_claims.delete().where(lead_claims.c.check_id == check_id))
                if lead:
                    conn.execute(lead_claims.insert(), [_lead_row(check_id, v, now) for v in lead])
            conn.execute(checks.update().where(checks.c.id == check_id).values(
                status=CheckStatus.DONE, error="", finished_at=now, seconds=round(seconds, 3),
                citations=len(rows), flagged=sum(bool(r["flagged"]) for r in rows)))
        return self.check(check_id)  # type: ignore[return-value]

    def fail(self, check_id: str, error: str) -> None:
        with self._tx() as conn:
            conn.execute(checks.update().where(checks.c.id == check_id).values(
                status=CheckStatus.FAILED, error=error[:4000], finished_at=utcnow()))

    def discard_check(self, check_id: str) -> bool:
        """Delete a check no worker has touched (queued, no attempt), for a submission refused
        before it was acknowledged; a check any worker started is never deleted here."""
        with self._tx() as conn:
            deleted = conn.execute(checks.delete().where(checks.c.id == check_id,
                                                         checks.c.status == CheckStatus.QUEUED,
                                                         checks.c.attempts == 0))
        return deleted.rowcount > 0

    def requeue(self, check_id: str, reason: str = "") -> None:
        """Back to queued; ``reason`` (why the last attempt failed) stays visible while it waits."""
        with self._tx() as conn:
            conn.execute(checks.update().where(checks.c.id == check_id).values(status=CheckStatus.QUEUED,
                                                                             error=reason[:4000]))

    def latest_for_page(self, wiki: str, title: str) -> Check | None:
        """The most recent finished check of a page (highest revision, then newest)."""
        query = (checks.select().where(checks.c.wiki == wiki, checks.c.title == title,
                                      checks.c.status == CheckStatus.DONE)
                 .order_by(checks.c.revision.desc(), checks.c.finished_at.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _check_record(row)

    # -- results ----------------------------------------------------------------------------

    def _results_query(self):
        return sa.select(results, checks.c.wiki, checks.c.title, checks.c.revision,
                         checks.c.parent_revision, checks.c.origin).join(checks, results.c.check_id == checks.c.id)

    def results(self, check_id: str) -> list[StoredResult]:
        query = self._results_query().where(results.c.check_id == check_id).order_by(results.c.position)
        with self.engine.connect() as conn:
            return [_result_record(r) for r in conn.execute(query).mappings()]

    def result(self, result_id: int) -> StoredResult | None:
        with self.engine.connect() as conn:
            row = conn.execute(self._results_query().where(results.c.id == result_id)).mappings().first()
        return None if row is None else _result_record(row)

    # -- lead claims ----------------------------------------------------------------------

    def article_lead(self, check_id: str) -> ArticleLead | None:
        """The lead and body submitted with a check (None: the check has none to check)."""
        with self.engine.connect() as conn:
            payload = conn.execute(sa.select(article_leads.c.payload)
                                   .where(article_leads.c.check_id == check_id)).scalar()
        return None if payload is None else ArticleLead.from_dict(json.loads(payload))

    def lead_claims(self, check_id: str, level: VerdictLevel | None = None) -> list[StoredLeadClaim]:
        """A check's lead claims with their verdicts against the body, in lead order."""
        query = lead_claims.select().where(lead_claims.c.check_id == check_id)
        if level is not None:
            query = query.where(lead_claims.c.level == level)
        with self.engine.connect() as conn:
            return [_lead_record(r) for r in conn.execute(query.order_by(lead_claims.c.position)).mappings()]

    def page_results(self, wiki: str, title: str) -> tuple[Check | None, list[StoredResult]]:
        check = self.latest_for_page(wiki, title)
        return check, ([] if check is None else self.results(check.id))

    def flagged(self, wiki: str | None = None, level: VerdictLevel | None = None,
                review_status: ReviewStatus | None = ReviewStatus.OPEN,
                min_score: float | None = None, max_score: float | None = None,
                since: datetime | None = None, until: datetime | None = None, origin: Origin | None = None,
                limit: int = 50, offset: int = 0, view: QueueView = QueueView.FLAGS,
                severity: Severity | str | None = None) -> list[StoredResult]:
        """The patrol queue: flagged citations (``view`` unsure: those Side is unsure of; all: both,
        the flags first), in :func:`side.ranking.queue_key`'s order: the band of the level shown
        (sure not supported, sure partially supported, unsure, supported) first, then highest
        priority (failure likelihood with the signals of :mod:`side.priority`), then the severity
        of what is missing (high, low, none: the tie-break of :func:`~side.ranking.queue_key`),
        then most likely failed verification. ``severity`` keeps only the results of that
        severity (a bad value is an :class:`~side.errors.InputError`)."""
        query = self._results_query().where(_in_view(parse_enum(QueueView, view, "view")))
        conditions = [
            (wiki, lambda v: checks.c.wiki == v), (level, lambda v: results.c.level == v),
            (review_status, lambda v: results.c.review_status == v),
            (min_score, lambda v: results.c.score >= v), (max_score, lambda v: results.c.score <= v),
            (since, lambda v: results.c.created_at >= v), (until, lambda v: results.c.created_at < v),
            (origin, lambda v: checks.c.origin == v),
        ]
        for value, condition in conditions:
            if value is not None:
                query = query.where(condition(value))
        if severity is not None:
            query = query.where(results.c.severity == parse_enum(Severity, severity, "severity").value)
        query = query.order_by(results.c.flagged.desc(), _band.desc(), results.c.priority.is_(None),
                               results.c.priority.desc(), _severity_rank, results.c.failure_likelihood.desc(),
                               results.c.id.desc()).limit(limit).offset(offset)
        with self.engine.connect() as conn:
            return [_result_record(r) for r in conn.execute(query).mappings()]

    def wikis(self) -> list[str]:
        with self.engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(sa.select(checks.c.wiki).distinct()))

    def count_checks(self) -> dict[CheckStatus, int]:
        """Checks per status, every status present (for /metrics, scraped often: one query)."""
        query = sa.select(checks.c.status, sa.func.count()).group_by(checks.c.status)
        with self.engine.connect() as conn:
            counts = {status: int(n) for status, n in conn.execute(query)}
        return {status: counts.get(status, 0) for status in CheckStatus}

    def count_flagged(self, view: QueueView = QueueView.FLAGS) -> dict[ReviewStatus, int]:
        """Flagged (or, by ``view``, unsure) results per review status (the patrol queue's size,
        for the dashboard)."""
        query = (sa.select(results.c.review_status, sa.func.count())
                 .where(_in_view(parse_enum(QueueView, view, "view")))
                 .group_by(results.c.review_status))
        with self.engine.connect() as conn:
            counts = {status: int(n) for status, n in conn.execute(query)}
        return {status: counts.get(status, 0) for status in ReviewStatus}

    # -- feedback ---------------------------------------------------------------------------

    def add_feedback(self, result_id: int, action: FeedbackAction, reason: str = "", reviewer: str = "",
                     suggestion_url: str = "", comment: str = "") -> Feedback:
        """Accept or dismiss a flagged citation's suggestion; the result's review status follows.
        ``reviewer`` is the wiki user name the web service's login vouched for."""
        action = parse_enum(FeedbackAction, action, "action")
        if action == FeedbackAction.DISMISS:
            try:
                reason = DismissReason(reason)
            except ValueError:
                raise InputError(f"a dismissal needs a reason: one of {', '.join(DismissReason)}") from None
        if self.result(result_id) is None:
            raise InputError(f"unknown result {result_id}")
        record = Feedback(id=0, result_id=result_id, action=action, reason=reason[:64], comment=comment[:2000],
                          suggestion_url=suggestion_url[:2000], reviewer=reviewer[:255], created_at=utcnow())
        row = asdict(record)
        del row["id"]
        with self._tx() as conn:
            new_id = inserted_id(conn.execute(feedback.insert().values(**row)))
            conn.execute(results.update().where(results.c.id == result_id).values(
                review_status=_REVIEW[action], reviewed_at=record.created_at))
        return replace(record, id=new_id)

    def feedback_for(self, result_id: int) -> list[Feedback]:
        query = feedback.select().where(feedback.c.result_id == result_id).order_by(feedback.c.id)
        with self.engine.connect() as conn:
            return [_feedback_record(r) for r in conn.execute(query).mappings()]

    def reviewed(self, wiki: str | None = None) -> list[tuple[StoredResult, Feedback]]:
        """Every reviewed result with its latest decision (a patroller may change their mind), oldest first.

        What ``side-feedback export`` writes for calibration and training.
        """
        latest = sa.select(feedback.c.result_id, sa.func.max(feedback.c.id).label("feedback_id")).group_by(
            feedback.c.result_id).subquery()
        query = (self._results_query().add_columns(*[c.label(f"feedback_{c.name}") for c in feedback.c])
                 .join(latest, latest.c.result_id == results.c.id)
                 .join(feedback, feedback.c.id == latest.c.feedback_id)
                 .order_by(feedback.c.id))
        if wiki is not None:
            query = query.where(checks.c.wiki == wiki)
        out = []
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                data = dict(row)
                decision = {c.name: data.pop(f"feedback_{c.name}") for c in feedback.c}
                out.append((_result_record(data), _feedback_record(decision)))
        return out

    # -- stats ------------------------------------------------------------------------------

    def stats(self, days: int = 30, wiki: str | None = None) -> Stats:
        """What the dashboard's stats page plots (see :mod:`service.store.stats`)."""
        return collect_stats(self.engine, days, wiki)


#: :func:`side.ranking.band_of` in SQL: the band of the level a row shows, higher first.
_band = sa.case((results.c.level == VerdictLevel.CANNOT_CHECK.value, -1),
                (results.c.level == VerdictLevel.SUPPORTED.value, int(Band.SUPPORTED)),
                (results.c.unsure.is_(True), int(Band.UNSURE)),
                (results.c.level == VerdictLevel.NOT_SUPPORTED.value, int(Band.NOT_SUPPORTED)),
                else_=int(Band.PARTIALLY_SUPPORTED))


#: :func:`side.ranking.severity_rank` in SQL: high first, then low, then none.
_severity_rank = sa.case(*((results.c.severity == name, rank) for name, rank in SEVERITY_ORDER.items()),
                         else_=len(SEVERITY_ORDER))


def _in_view(view: QueueView):
    """The patrol queue's condition for ``view``: sure flags, unsure results, or either."""
    if view is QueueView.FLAGS:
        return results.c.flagged.is_(True)
    if view is QueueView.UNSURE:
        return sa.and_(results.c.unsure.is_(True), results.c.flagged.is_(False))
    return sa.or_(results.c.flagged.is_(True), results.c.unsure.is_(True))


def _payload(claims: list[Claim], client_keys: list[str]) -> str:
    """A check's claims as stored: ``Claim.to_dict()`` each, with the client's key beside it."""
    return _json([{**claim.to_dict(), "client_key": key} for claim, key in zip(claims, client_keys, strict=True)])


def _payload_claim(data: dict[str, Any]) -> tuple[Claim, str]:
    """One stored claim and its client key; early payloads were the API's flat ``url``/``citation_title``."""
    if "citation" not in data and ("url" in data or "citation_title" in data):
        citation = {"id": str(data.get("key", "")), "kind": "external_link" if data.get("url") else "text",
                    "url": data.get("url") or None, "title": data.get("citation_title") or None}
        data = {**data, "citation": citation}
    if "article_title" not in data and "title" in data:
        data = {**data, "article_title": data["title"]}
    claim = Claim.from_dict(data)
    return claim, str(data.get("client_key") or data.get("key") or claim.key)


def _lead_row(check_id: str, verdict: LeadVerdict, now: datetime) -> dict[str, Any]:
    """One lead claim's row: ``position`` is its place among the lead's sentences (unique per check)."""
    return {"check_id": check_id, "position": verdict.position, "claim_text": verdict.claim,
            "level": verdict.level, "score": verdict.score, "nearest_text": verdict.nearest,
            "nearest_section": _json(list(verdict.nearest_section)), "reason": verdict.reason, "created_at": now}


def _lead_record(row) -> StoredLeadClaim:
    verdict = LeadVerdict(claim=row["claim_text"], position=row["position"], level=VerdictLevel(row["level"]),
                          score=row["score"], nearest=row["nearest_text"],
                          nearest_section=tuple(json.loads(row["nearest_section"] or "[]")), reason=row["reason"])
    return StoredLeadClaim(id=row["id"], check_id=row["check_id"], verdict=verdict, created_at=row["created_at"])


def _check_record(row) -> Check:
    data = dict(row)
    pairs = [_payload_claim(c) for c in json.loads(data.pop("payload") or "[]")]
    data["claims"] = [claim for claim, _ in pairs]
    data["client_keys"] = [key for _, key in pairs]
    data["origin"], data["status"] = Origin(data["origin"]), CheckStatus(data["status"])
    return Check(**data)


def _result_row(check: Check, position: int, result: Result, now: datetime, rank: Priority) -> dict[str, Any]:
    claim, verdict = result.claim, result.verdict
    client_key = check.client_keys[position] if position < len(check.client_keys) else claim.key
    return {
        "check_id": check.id, "position": position, "client_key": client_key[:64],
        "claim_key": claim.key[:32], "claim_text": claim.text, "citation_url": claim.citation.url or "",
        "claim": _json(claim.to_dict()), "source_status": result.source_status,
        "source_error": result.source_error, "source_read": _source_read(result),
        "label": verdict.label if verdict else None, "level": result.level, "level_reason": result.level_reason,
        "reportable": result.reportable, "score": verdict.score if verdict else None,
        "failure_likelihood": result.failure_likelihood, "flagged": result.flagged,
        "rank": result.rank, "url_depth": result.url_depth, "reasons": _json(result.reasons),
        "priority": rank.score, "priority_parts": _json(rank.to_dict()),
        "verdict": _json(verdict.to_dict()) if verdict else None,
        "suggestions": _json([s.to_dict() for s in result.suggestions]),
        "review_status": ReviewStatus.OPEN, "reviewed_at": None, "created_at": now,
        "decided_by": result.decided_by[:255], "judge": _json(result.judge.to_dict()) if result.judge else None,
        "judge_note": result.judge_note or None, "judge_pending": result.judge_pending,
        "source_instructions": _json(result.source_instructions) if result.source_instructions else None,
        "unsure": result.unsure,
        "missing": result.missing.value if result.missing else None,
        "severity": result.severity.value if result.severity else None,
    }


def _source_read(result: Result) -> str | None:
    """The ``source_read`` column: which copy was read, as JSON; None when none was."""
    if result.source_copy is None:
        return None
    return _json({"copy": result.source_copy, "url": result.source_url, "fallback": result.source_fallback})


def _result_record(row) -> StoredResult:
    data = dict(row)
    data.pop("claim_text", None)
    read = json.loads(data.pop("source_read", None) or "{}")
    data["source_copy"] = SourceCopy(read["copy"]) if read.get("copy") else None
    data["source_url"], data["source_fallback"] = str(read.get("url") or ""), str(read.get("fallback") or "")
    data["claim"] = Claim.from_dict(json.loads(data["claim"]))
    data["source_status"] = SourceStatus(data["source_status"])
    data["label"] = VerdictLabel(data["label"]) if data["label"] else None
    data["level"] = VerdictLevel(data["level"])
    data["level_reason"] = data["level_reason"] or ""
    data["reportable"] = bool(data["reportable"])
    parts = data.pop("priority_parts", None)
    data["priority"] = Priority.from_dict(json.loads(parts)) if parts else None
    data["reasons"] = json.loads(data["reasons"])
    data["verdict"] = Verdict.from_dict(json.loads(data["verdict"])) if data["verdict"] else None
    data["suggestions"] = [Suggestion.from_dict(s) for s in json.loads(data["suggestions"])]
    data["flagged"] = bool(data["flagged"])
    data["review_status"] = ReviewStatus(data["review_status"])
    data["origin"] = Origin(data["origin"])
    data["judge"] = JudgeVerdict.from_dict(json.loads(data["judge"])) if data["judge"] else None
    data["judge_note"] = data["judge_note"] or ""
    data["judge_pending"] = bool(data["judge_pending"])
    data["source_instructions"] = json.loads(data["source_instructions"] or "[]")
    data["unsure"] = bool(data.get("unsure"))
    data["missing"], data["severity"] = missing_kind(data.get("missing")), severity_of(data.get("severity"))
    return StoredResult(**data)


def _feedback_record(row) -> Feedback:
    data = dict(row)
    data["action"] = FeedbackAction(data["action"])
    return Feedback(**data)
