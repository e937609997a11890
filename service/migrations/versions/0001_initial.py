"""Initial schema: checks, results, feedback, reports.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "checks",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("wiki", sa.String(64), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("revision", sa.BigInteger, nullable=True),
        sa.Column("parent_revision", sa.BigInteger, nullable=True),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("payload", sa.Text(length=16_000_000), nullable=False),
        sa.Column("citations", sa.Integer, nullable=False),
        sa.Column("flagged", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
        sa.Column("seconds", sa.Float, nullable=True),
    )
    op.create_index("ix_checks_page", "checks", ["wiki", "title", "revision"])
    op.create_index("ix_checks_status", "checks", ["status", "created_at"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("client_key", sa.String(64), nullable=False),
        sa.Column("claim_key", sa.String(32), nullable=False),
        sa.Column("claim_text", sa.Text, nullable=False),
        sa.Column("citation_url", sa.Text, nullable=False),
        sa.Column("claim", sa.Text(length=16_000_000), nullable=False),
        sa.Column("source_status", sa.String(16), nullable=False),
        sa.Column("source_error", sa.Text, nullable=False),
        sa.Column("label", sa.String(32), nullable=True),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("failure_likelihood", sa.Float, nullable=True),
        sa.Column("flagged", sa.Boolean, nullable=False),
        sa.Column("rank", sa.Integer, nullable=True),
        sa.Column("url_depth", sa.Integer, nullable=True),
        sa.Column("reasons", sa.Text, nullable=False),
        sa.Column("verdict", sa.Text(length=16_000_000), nullable=True),
        sa.Column("suggestions", sa.Text(length=16_000_000), nullable=False),
        sa.Column("review_status", sa.String(16), nullable=False),
        sa.Column("reviewed_at", sa.DateTime, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("check_id", "position", name="uq_results_check_position"),
    )
    op.create_index("ix_results_queue", "results", ["flagged", "review_status", "failure_likelihood"])
    op.create_index("ix_results_created", "results", ["created_at"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("suggestion_url", sa.Text, nullable=False),
        sa.Column("user", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_feedback_result", "feedback", ["result_id"])
    op.create_table(
        "reports",
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
    op.create_index("ix_reports_page", "reports", ["wiki", "title", "created_at"])
    op.create_index("ix_reports_suggestion", "reports", ["wiki", "suggestion_key"])


def downgrade() -> None:
    for table in ("reports", "feedback", "results", "checks"):
        op.drop_table(table)
