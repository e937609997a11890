"""The results store: every Check, its Verdicts, Suggestions, review feedback and bot reports.

One small data layer over SQLAlchemy Core, so the same code runs on the embedded default
(SQLite under ``var/``) and on Toolforge's ToolsDB (MariaDB, ``mysql+pymysql://…``). The schema
is versioned with Alembic migrations (``service/migrations``) applied by :meth:`Store.open`, so a
deployed database is upgraded in place instead of being recreated.

Writes are idempotent where the queue may repeat work: a Check's id is derived from the work
itself (:func:`check_key`), and :meth:`Store.finish` replaces a check's results in one
transaction, so a job that runs twice never duplicates rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from side.errors import InputError, SideError
from service.store.optionfile import read_client_credentials

log = logging.getLogger(__name__)

STATUSES = ("queued", "running", "done", "failed")
ORIGINS = ("bot", "gadget", "api", "cli")
REVIEW_STATUSES = ("open", "accepted", "dismissed")
FEEDBACK_ACTIONS = ("accept", "dismiss")
#: Why a suggestion was dismissed (after Edit Check's decline reasons).
DISMISS_REASONS = ("not-relevant", "source-is-fine", "suggestion-wrong", "other")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

metadata = sa.MetaData()

checks = sa.Table(
    "checks", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("wiki", sa.String(64), nullable=False),
    sa.Column("title", sa.String(255), nullable=False),
    sa.Column("revision", sa.BigInteger, nullable=True),
    sa.Column("parent_revision", sa.BigInteger, nullable=True),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("citations", sa.Integer, nullable=False),
    sa.Column("flagged", sa.Integer, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    sa.Column("seconds", sa.Float, nullable=True),
)

results = sa.Table(
    "results", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("client_key", sa.String(64), nullable=False),
    sa.Column("claim_key", sa.String(32), nullable=False),
    sa.Column("claim_text", sa.Text, nullable=False),
    sa.Column("citation_url", sa.Text, nullable=False),
    sa.Column("claim", sa.Text, nullable=False),
    sa.Column("source_status", sa.String(16), nullable=False),
    sa.Column("source_error", sa.Text, nullable=False),
    sa.Column("label", sa.String(32), nullable=True),
    sa.Column("score", sa.Float, nullable=True),
    sa.Column("failure_likelihood", sa.Float, nullable=True),
    sa.Column("flagged", sa.Boolean, nullable=False),
    sa.Column("rank", sa.Integer, nullable=True),
    sa.Column("url_depth", sa.Integer, nullable=True),
    sa.Column("reasons", sa.Text, nullable=False),
    sa.Column("verdict", sa.Text, nullable=True),
    sa.Column("suggestions", sa.Text, nullable=False),
    sa.Column("review_status", sa.String(16), nullable=False),
    sa.Column("reviewed_at", sa.DateTime, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("check_id", "position", name="uq_results_check_position"),
)

feedback = sa.Table(
    "feedback", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(64), nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("suggestion_url", sa.Text, nullable=False),
    sa.Column("user", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

reports = sa.Table(
    "reports", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("wiki", sa.String(64), nullable=False),
    sa.Column("title", sa.String(255), nullable=False),
    sa.Column("check_id", sa.String(64), nullable=False),
    sa.Column("result_id", sa.Integer, nullable=True),
    sa.Column("suggestion_key", sa.String(64), nullable=False),
    sa.Column("talk_title", sa.String(255), nullable=False),
    sa.Column("posted", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)


def utcnow() -> datetime:
    """Naive UTC: DATETIME columns on MariaDB and SQLite carry no zone."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat() + "Z"


def _claim_identity(claim: dict[str, Any]) -> list[str]:
    citation = claim.get("citation") or {}
    return [str(claim.get("text", "")), str(claim.get("left_context", "")), str(citation.get("url") or ""),
            str(citation.get("title") or ""), str(claim.get("key", ""))]


def check_key(wiki: str, title: str, revision: int | None, claims: Iterable[dict[str, Any]]) -> str:
    """Deterministic id of a unit of work: the same wiki, revision and claims give the same id.

    It is also the RQ job id, which is what makes enqueueing the same work twice run it once.
    """
    body = json.dumps([wiki, title, revision, sorted(_claim_identity(c) for c in claims)], ensure_ascii=False)
    return "chk_" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


def suggestion_key(wiki: str, claim_key: str, url: str) -> str:
    """Identity of one suggestion (a claim and the source proposed for it) across revisions."""
    return hashlib.sha256(f"{wiki}\x1f{claim_key}\x1f{url}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class CheckRequest:
    """Work to do: the claims (``Claim.to_dict()``) of one revision or one gadget request."""

    wiki: str
    title: str
    claims: list[dict[str, Any]]
    revision: int | None = None
    parent_revision: int | None = None
    origin: str = "api"

    @property
    def id(self) -> str:
        return check_key(self.wiki, self.title, self.revision, self.claims)


@dataclass
class Check:
    id: str
    wiki: str
    title: str
    revision: int | None
    parent_revision: int | None
    origin: str
    status: str
    error: str
    claims: list[dict[str, Any]]
    citations: int
    flagged: int
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "wiki": self.wiki, "title": self.title, "revision": self.revision,
                "parent_revision": self.parent_revision, "origin": self.origin, "status": self.status,
                "error": self.error, "citations": self.citations, "flagged": self.flagged,
                "attempts": self.attempts, "created_at": iso(self.created_at),
                "started_at": iso(self.started_at), "finished_at": iso(self.finished_at),
                "seconds": self.seconds}


@dataclass
class StoredResult:
    """One citation use of a Check with its Verdict, Evidence and Suggestions."""

    id: int
    check_id: str
    position: int
    client_key: str
    claim_key: str
    claim: dict[str, Any]
    citation_url: str
    source_status: str
    source_error: str
    label: str | None
    score: float | None
    failure_likelihood: float | None
    flagged: bool
    rank: int | None
    url_depth: int | None
    reasons: list[str]
    verdict: dict[str, Any] | None
    suggestions: list[dict[str, Any]]
    review_status: str
    reviewed_at: datetime | None
    created_at: datetime
    # from the check
    wiki: str = ""
    title: str = ""
    revision: int | None = None
    parent_revision: int | None = None
    origin: str = ""

    @property
    def claim_text(self) -> str:
        return str(self.claim.get("text", ""))

    @property
    def evidence(self) -> list[dict[str, Any]]:
        return list((self.verdict or {}).get("evidence", []))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "check_id": self.check_id, "position": self.position,
                "client_key": self.client_key, "claim_key": self.claim_key, "claim": self.claim,
                "url": self.citation_url, "source_status": self.source_status,
                "source_error": self.source_error, "label": self.label, "score": self.score,
                "failure_likelihood": self.failure_likelihood, "flagged": self.flagged, "rank": self.rank,
                "url_depth": self.url_depth, "reasons": self.reasons, "evidence": self.evidence,
                "suggestions": self.suggestions, "review_status": self.review_status,
                "reviewed_at": iso(self.reviewed_at), "created_at": iso(self.created_at),
                "wiki": self.wiki, "title": self.title, "revision": self.revision}


@dataclass(frozen=True)
class Feedback:
    id: int
    result_id: int
    action: str
    reason: str
    comment: str
    suggestion_url: str
    user: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "result_id": self.result_id, "action": self.action, "reason": self.reason,
                "comment": self.comment, "suggestion_url": self.suggestion_url, "user": self.user,
                "created_at": iso(self.created_at)}


@dataclass(frozen=True)
class Report:
    id: int
    wiki: str
    title: str
    check_id: str
    result_id: int | None
    suggestion_key: str
    talk_title: str
    posted: bool
    created_at: datetime


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


class StoreError(SideError):
    code = "store_error"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _on_sqlite_connect(dbapi_conn, _record) -> None:
    """WAL and a busy timeout let the web app read while a worker writes."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


#: MySQL drivers that read user and password from ``read_default_file`` themselves.
OPTION_FILE_DRIVERS = frozenset({"pymysql", "mysqldb"})


def option_file_args(url: sa.URL) -> tuple[sa.URL, dict[str, Any]]:
    """``?read_default_file=PATH`` of a MySQL URL as driver arguments, the file checked first.

    Toolforge's ``replica.my.cnf`` holds the tool's ToolsDB credentials, so the URL names only
    host and database, e.g. ``mysql+pymysql://tools.db.svc.wikimedia.cloud/s12345__side?
    read_default_file=~/replica.my.cnf``; the driver reads the file on each new connection
    (see :mod:`service.store.optionfile`). URLs without the option come back unchanged.
    """
    option = url.query.get("read_default_file")
    if option is None:
        return url, {}
    path = Path(option if isinstance(option, str) else option[-1]).expanduser()
    if url.get_backend_name() not in ("mysql", "mariadb") or url.get_driver_name() not in OPTION_FILE_DRIVERS:
        raise StoreError(f"read_default_file works with mysql+pymysql or mysql+mysqldb URLs, "
                         f"not {url.drivername}")
    if url.password:
        raise StoreError("the database URL has a password and a read_default_file: "
                         "keep the password in the file")
    read_client_credentials(path)
    return url.difference_update_query(["read_default_file"]), {"read_default_file": str(path)}


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 30})
        sa.event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    parsed, connect_args = option_file_args(sa.engine.make_url(url))
    # ToolsDB closes idle connections: check them before use and recycle well under its timeout.
    return sa.create_engine(parsed, connect_args=connect_args, pool_pre_ping=True, pool_recycle=280)


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` with Alembic; safe to run from several processes."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    for attempt in range(5):
        try:
            with engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
            return
        except sa.exc.OperationalError as exc:  # another process is migrating the same database
            if attempt == 4:
                raise StoreError(f"could not migrate the results store: {exc.orig}") from exc
            time.sleep(0.2 * (attempt + 1))


def schema_version(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


class Store:
    """Checks, results, feedback and reports in one database."""

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
        if new.origin not in ORIGINS:
            raise InputError(f"unknown origin {new.origin!r}")
        check_id = new.id
        existing = self.check(check_id)
        if existing is not None:
            return existing, False
        row = {"id": check_id, "wiki": new.wiki, "title": new.title, "revision": new.revision,
               "parent_revision": new.parent_revision, "origin": new.origin, "status": "queued", "error": "",
               "payload": _json(new.claims), "citations": len(new.claims), "flagged": 0, "attempts": 0,
               "created_at": utcnow()}
        try:
            with self._tx() as conn:
                conn.execute(checks.insert().values(**row))
        except sa.exc.IntegrityError:  # a concurrent request inserted it first
            return self.check(check_id), False  # type: ignore[return-value]
        return self.check(check_id), True  # type: ignore[return-value]

    def check(self, check_id: str) -> Check | None:
        with self.engine.connect() as conn:
            row = conn.execute(checks.select().where(checks.c.id == check_id)).mappings().first()
        return None if row is None else _check_record(row)

    def checks(self, status: str | None = None, origin: str | None = None, wiki: str | None = None,
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
                status="running", started_at=utcnow(), error="", attempts=checks.c.attempts + 1))
        if updated.rowcount == 0:
            raise StoreError(f"unknown check {check_id}")
        return self.check(check_id)  # type: ignore[return-value]

    def finish(self, check_id: str, citation_checks: list[dict[str, Any]], seconds: float) -> Check:
        """Store the outcome (``Result.to_dict()`` per claim, in claim order); replaces old results."""
        record = self.check(check_id)
        if record is None:
            raise StoreError(f"unknown check {check_id}")
        now = utcnow()
        rows = [_result_row(check_id, n, item, record.claims, now) for n, item in enumerate(citation_checks)]
        with self._tx() as conn:
            conn.execute(results.delete().where(results.c.check_id == check_id))
            if rows:
                conn.execute(results.insert(), rows)
            conn.execute(checks.update().where(checks.c.id == check_id).values(
                status="done", error="", finished_at=now, seconds=round(seconds, 3),
                citations=len(rows), flagged=sum(bool(r["flagged"]) for r in rows)))
        return self.check(check_id)  # type: ignore[return-value]

    def fail(self, check_id: str, error: str) -> None:
        with self._tx() as conn:
            conn.execute(checks.update().where(checks.c.id == check_id).values(
                status="failed", error=error[:4000], finished_at=utcnow()))

    def discard_check(self, check_id: str) -> bool:
        """Delete a check no worker has touched (queued, no attempt), for a submission refused
        before it was acknowledged; a check any worker started is never deleted here."""
        with self._tx() as conn:
            deleted = conn.execute(checks.delete().where(checks.c.id == check_id, checks.c.status == "queued",
                                                         checks.c.attempts == 0))
        return deleted.rowcount > 0

    def requeue(self, check_id: str, reason: str = "") -> None:
        """Back to queued; ``reason`` (why the last attempt failed) stays visible while it waits."""
        with self._tx() as conn:
            conn.execute(checks.update().where(checks.c.id == check_id).values(status="queued",
                                                                             error=reason[:4000]))

    def latest_for_page(self, wiki: str, title: str) -> Check | None:
        """The most recent finished check of a page (highest revision, then newest)."""
        query = (checks.select().where(checks.c.wiki == wiki, checks.c.title == title, checks.c.status == "done")
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

    def page_results(self, wiki: str, title: str) -> tuple[Check | None, list[StoredResult]]:
        check = self.latest_for_page(wiki, title)
        return check, ([] if check is None else self.results(check.id))

    def flagged(self, wiki: str | None = None, label: str | None = None, review_status: str | None = "open",
                min_score: float | None = None, max_score: float | None = None,
                since: datetime | None = None, until: datetime | None = None, origin: str | None = None,
                limit: int = 50, offset: int = 0) -> list[StoredResult]:
        """The patrol queue: flagged citations, most likely failed verification first."""
        query = self._results_query().where(results.c.flagged.is_(True))
        conditions = [
            (wiki, lambda v: checks.c.wiki == v), (label, lambda v: results.c.label == v),
            (review_status, lambda v: results.c.review_status == v),
            (min_score, lambda v: results.c.score >= v), (max_score, lambda v: results.c.score <= v),
            (since, lambda v: results.c.created_at >= v), (until, lambda v: results.c.created_at < v),
            (origin, lambda v: checks.c.origin == v),
        ]
        for value, condition in conditions:
            if value is not None:
                query = query.where(condition(value))
        query = query.order_by(results.c.failure_likelihood.desc(), results.c.id.desc()).limit(limit).offset(offset)
        with self.engine.connect() as conn:
            return [_result_record(r) for r in conn.execute(query).mappings()]

    def wikis(self) -> list[str]:
        with self.engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(sa.select(checks.c.wiki).distinct()))

    def count_checks(self) -> dict[str, int]:
        """Checks per status, every status present (for /metrics, scraped often: one query)."""
        query = sa.select(checks.c.status, sa.func.count()).group_by(checks.c.status)
        with self.engine.connect() as conn:
            counts = {status: int(n) for status, n in conn.execute(query)}
        return {status: counts.get(status, 0) for status in STATUSES}

    def count_flagged(self) -> dict[str, int]:
        """Flagged results per review status (the patrol queue's size, for the dashboard)."""
        query = (sa.select(results.c.review_status, sa.func.count()).where(results.c.flagged.is_(True))
                 .group_by(results.c.review_status))
        with self.engine.connect() as conn:
            counts = {status: int(n) for status, n in conn.execute(query)}
        return {status: counts.get(status, 0) for status in REVIEW_STATUSES}

    # -- feedback ---------------------------------------------------------------------------

    def add_feedback(self, result_id: int, action: str, reason: str = "", user: str = "",
                     suggestion_url: str = "", comment: str = "") -> Feedback:
        """Accept or dismiss a flagged citation's suggestion; the result's review status follows."""
        if action not in FEEDBACK_ACTIONS:
            raise InputError(f"action must be one of {', '.join(FEEDBACK_ACTIONS)}")
        if action == "dismiss" and reason not in DISMISS_REASONS:
            raise InputError(f"a dismissal needs a reason: one of {', '.join(DISMISS_REASONS)}")
        if self.result(result_id) is None:
            raise InputError(f"unknown result {result_id}")
        now = utcnow()
        row = {"result_id": result_id, "action": action, "reason": reason[:64], "comment": comment[:2000],
               "suggestion_url": suggestion_url[:2000], "user": user[:255], "created_at": now}
        with self._tx() as conn:
            new_id = conn.execute(feedback.insert().values(**row)).inserted_primary_key[0]
            conn.execute(results.update().where(results.c.id == result_id).values(
                review_status="accepted" if action == "accept" else "dismissed", reviewed_at=now))
        return Feedback(id=int(new_id), **row)

    def feedback_for(self, result_id: int) -> list[Feedback]:
        query = feedback.select().where(feedback.c.result_id == result_id).order_by(feedback.c.id)
        with self.engine.connect() as conn:
            return [Feedback(**dict(r)) for r in conn.execute(query).mappings()]

    # -- bot reports ------------------------------------------------------------------------

    def record_report(self, wiki: str, title: str, check_id: str, result_id: int | None, suggestion_key: str,
                      talk_title: str, posted: bool) -> Report:
        row = {"wiki": wiki, "title": title, "check_id": check_id, "result_id": result_id,
               "suggestion_key": suggestion_key, "talk_title": talk_title, "posted": posted, "created_at": utcnow()}
        with self._tx() as conn:
            new_id = conn.execute(reports.insert().values(**row)).inserted_primary_key[0]
        return Report(id=int(new_id), **row)

    def reports_since(self, wiki: str, since: datetime, posted: bool = True) -> int:
        query = sa.select(sa.func.count()).select_from(reports).where(
            reports.c.wiki == wiki, reports.c.created_at >= since, reports.c.posted.is_(posted))
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def last_report(self, wiki: str, title: str, posted: bool = True) -> Report | None:
        query = (reports.select().where(reports.c.wiki == wiki, reports.c.title == title,
                                        reports.c.posted.is_(posted))
                 .order_by(reports.c.created_at.desc(), reports.c.id.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else Report(**dict(row))

    def suggestion_reported(self, wiki: str, key: str, posted: bool = True) -> bool:
        query = sa.select(reports.c.id).where(reports.c.wiki == wiki, reports.c.suggestion_key == key,
                                              reports.c.posted.is_(posted)).limit(1)
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None

    # -- stats ------------------------------------------------------------------------------

    def stats(self, days: int = 30, wiki: str | None = None) -> Stats:
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
        with self.engine.connect() as conn:
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
                if action == "accept":
                    stats.accepted += 1
                else:
                    stats.dismissed += 1
                    reasons[reason] += 1
        start = since.date()
        stats.flagged_per_day = [((start + timedelta(days=d)).isoformat(),
                                  per_day.get((start + timedelta(days=d)).isoformat(), 0)) for d in range(days + 1)]
        stats.dismiss_reasons = dict(reasons)
        return stats


def _check_record(row) -> Check:
    data = dict(row)
    data["claims"] = json.loads(data.pop("payload") or "[]")
    return Check(**data)


def _result_row(check_id: str, position: int, item: dict[str, Any], claims: list[dict[str, Any]],
                now: datetime) -> dict[str, Any]:
    claim = item.get("claim") or (claims[position] if position < len(claims) else {})
    submitted = claims[position] if position < len(claims) else {}
    verdict = item.get("verdict")
    citation = claim.get("citation") or {}
    return {
        "check_id": check_id, "position": position,
        "client_key": str(submitted.get("client_key") or submitted.get("key") or claim.get("key", ""))[:64],
        "claim_key": str(claim.get("key", ""))[:32], "claim_text": str(claim.get("text", "")),
        "citation_url": str(citation.get("url") or ""), "claim": _json(claim),
        "source_status": str(item.get("source_status", ""))[:16], "source_error": str(item.get("source_error", "")),
        "label": verdict["label"] if verdict else None, "score": verdict["score"] if verdict else None,
        "failure_likelihood": item.get("failure_likelihood"), "flagged": bool(item.get("flagged")),
        "rank": item.get("rank"), "url_depth": item.get("url_depth"), "reasons": _json(item.get("reasons", [])),
        "verdict": _json(verdict) if verdict else None, "suggestions": _json(item.get("suggestions", [])),
        "review_status": "open", "reviewed_at": None, "created_at": now,
    }


def _result_record(row) -> StoredResult:
    data = dict(row)
    data.pop("claim_text", None)
    data["claim"] = json.loads(data["claim"])
    data["reasons"] = json.loads(data["reasons"])
    data["verdict"] = json.loads(data["verdict"]) if data["verdict"] else None
    data["suggestions"] = json.loads(data["suggestions"])
    data["flagged"] = bool(data["flagged"])
    return StoredResult(**data)
