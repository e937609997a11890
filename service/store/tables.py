"""The results store's tables (SQLAlchemy Core).

The migrations in ``service/migrations/versions`` are what creates and upgrades a database;
these tables are what the code queries.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult

__all__ = ["checks", "feedback", "inserted_id", "metadata", "reports", "results"]

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


def inserted_id(result: CursorResult) -> int:
    """The autoincrement id of the row one INSERT added."""
    key = result.inserted_primary_key
    if key is None:
        raise ValueError("the INSERT returned no primary key")
    return int(key[0])
