"""The results store's tables (SQLAlchemy Core), exactly as the Alembic migrations build them.

The migrations in ``service/migrations/versions`` are what creates and upgrades a database;
these tables are what the code queries. tests/test_migrations.py compares the two with
Alembic's autogenerate on SQLite and MariaDB, so a change here without a migration (or the
reverse) fails a test instead of surfacing in production.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import CursorResult

__all__ = [
    "LONG_TEXT", "article_leads", "checks", "feedback", "inserted_id", "judge_cache", "judge_pending", "lead_claims",
    "metadata", "reports", "results",
]

#: JSON documents that can grow past TEXT's 64 KiB (a check's claims, a verdict with its
#: evidence): LONGTEXT on MariaDB, TEXT on SQLite. Migration 0001 asks for ``Text(16_000_000)``,
#: which MariaDB makes LONGTEXT (16M utf8mb4 characters need more than MEDIUMTEXT's 16 MiB).
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")

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
    sa.Column("payload", LONG_TEXT, nullable=False),
    sa.Column("citations", sa.Integer, nullable=False),
    sa.Column("flagged", sa.Integer, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    sa.Column("seconds", sa.Float, nullable=True),
    sa.Index("ix_checks_page", "wiki", "title", "revision"),
    sa.Index("ix_checks_status", "status", "created_at"),
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
    sa.Column("claim", LONG_TEXT, nullable=False),
    sa.Column("source_status", sa.String(16), nullable=False),
    sa.Column("source_error", sa.Text, nullable=False),
    #: Which copy of the source was read, as JSON (migration 0002); see StoredResult.source_copy.
    sa.Column("source_read", sa.Text, nullable=True),
    #: The model's own class (internal); people are shown ``level`` (migration 0003).
    sa.Column("label", sa.String(32), nullable=True),
    sa.Column("level", sa.String(24), nullable=False, server_default="cannot_check"),
    sa.Column("level_reason", sa.Text, nullable=True),
    sa.Column("reportable", sa.Boolean, nullable=False, server_default="0"),
    sa.Column("score", sa.Float, nullable=True),
    sa.Column("failure_likelihood", sa.Float, nullable=True),
    sa.Column("flagged", sa.Boolean, nullable=False),
    sa.Column("rank", sa.Integer, nullable=True),
    sa.Column("url_depth", sa.Integer, nullable=True),
    #: The queue's order, highest first, and its parts as JSON (migration 0004_priority; side.priority).
    sa.Column("priority", sa.Float, nullable=True),
    sa.Column("priority_parts", sa.Text, nullable=True),
    sa.Column("reasons", sa.Text, nullable=False),
    sa.Column("verdict", LONG_TEXT, nullable=True),
    sa.Column("suggestions", LONG_TEXT, nullable=False),
    sa.Column("review_status", sa.String(16), nullable=False),
    sa.Column("reviewed_at", sa.DateTime, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    #: Who decided the level: "Side" or "LLM: <model>" (migration 0007_judge) ...
    sa.Column("decided_by", sa.String(255), nullable=False, server_default="Side"),
    #: ... the judge's answer as JSON when it was asked, why it is not shown or still to come,
    #: and whether the citation waits in judge_pending to be judged later.
    sa.Column("judge", sa.Text, nullable=True),
    sa.Column("judge_note", sa.Text, nullable=True),
    sa.Column("judge_pending", sa.Boolean, nullable=False, server_default="0"),
    #: Instruction-like phrases the cited source holds, as a JSON list (migration 0008); null: none.
    sa.Column("source_instructions", sa.Text, nullable=True),
    #: Side is unsure of the level (between the sure flag cut and the supported cut; migration
    #: 0009): shown as Side's guess, never flagged, in the queue's unsure view only.
    sa.Column("unsure", sa.Boolean, nullable=False, server_default="0"),
    #: What a needs-review level's source does not back (side.verify.severity.MissingKind) and how
    #: much that matters (Severity: high or low; migration 0010); null: nothing missing, or older.
    sa.Column("missing", sa.String(16), nullable=True),
    sa.Column("severity", sa.String(8), nullable=True),
    sa.UniqueConstraint("check_id", "position", name="uq_results_check_position"),
    sa.Index("ix_results_queue", "flagged", "review_status", "failure_likelihood"),
    sa.Index("ix_results_created", "created_at"),
    sa.Index("ix_results_level", "level", "review_status"),
    sa.Index("ix_results_priority", "flagged", "review_status", "priority"),
    sa.Index("ix_results_unsure", "unsure", "review_status", "priority"),
)

feedback = sa.Table(
    "feedback", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(64), nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("suggestion_url", sa.Text, nullable=False),
    # the wiki user name the reviewer logged in with (OAuth identity); "" on rows from before logins
    sa.Column("reviewer", sa.String(255), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_feedback_result", "result_id"),
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
    sa.Index("ix_reports_page", "wiki", "title", "created_at"),
    sa.Index("ix_reports_suggestion", "wiki", "suggestion_key"),
)


#: A check's article lead and body (``ArticleLead`` JSON), kept for the worker (migration 0005).
article_leads = sa.Table(
    "article_leads", metadata,
    sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("payload", LONG_TEXT, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

#: Each uncited lead sentence of a check's article and how its body backs it (migration 0005).
lead_claims = sa.Table(
    "lead_claims", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("claim_text", sa.Text, nullable=False),
    sa.Column("level", sa.String(24), nullable=False),
    sa.Column("score", sa.Float, nullable=True),
    sa.Column("nearest_text", sa.Text, nullable=False),
    #: The nearest body sentence's headings, as a JSON list.
    sa.Column("nearest_section", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("check_id", "position", name="uq_lead_claims_check_position"),
    sa.Index("ix_lead_claims_level", "level"),
)


#: The judge's verdicts by model, prompt version, claim and source hash (migration 0007_judge).
judge_cache = sa.Table(
    "judge_cache", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("model", sa.String(255), nullable=False),
    sa.Column("prompt_version", sa.String(64), nullable=False),
    sa.Column("verdict", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

#: Citations that keep Side's verdict until the judge answers (endpoint down, slow or out of
#: budget), each with its whole request, so nothing is lost (migration 0007_judge).
judge_pending = sa.Table(
    "judge_pending", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False),
    sa.Column("check_id", sa.String(64), nullable=False),
    sa.Column("request", LONG_TEXT, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("result_id", name="uq_judge_pending_result"),
    sa.Index("ix_judge_pending_check", "check_id"),
)


def inserted_id(result: CursorResult) -> int:
    """The autoincrement id of the row one INSERT added."""
    key = result.inserted_primary_key
    if key is None:
        raise ValueError("the INSERT returned no primary key")
    return int(key[0])
