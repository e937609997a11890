"""Lead claims grounded in the body: what a check's article leads with, and how its body backs it.

Two tables. ``article_leads`` keeps, per Check, the article's uncited lead sentences and its
body's sentences (``side.extract.lead.ArticleLead`` as JSON) from submission until a worker
runs the check. ``lead_claims`` keeps one row per uncited lead sentence with its Verdict level
against the body, its score, the nearest body sentence and that sentence's section (JSON list);
a worker replaces a check's rows with its results in the same transaction as the citations'.

Revision ID: 0005_lead_claims
Revises: 0004_priority
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_lead_claims"
down_revision = "0004_priority"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "article_leads",
        sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("payload", sa.Text(16_000_000), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "lead_claims",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("check_id", sa.String(64), sa.ForeignKey("checks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("claim_text", sa.Text, nullable=False),
        sa.Column("level", sa.String(24), nullable=False),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("nearest_text", sa.Text, nullable=False),
        sa.Column("nearest_section", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("check_id", "position", name="uq_lead_claims_check_position"),
    )
    op.create_index("ix_lead_claims_level", "lead_claims", ["level"])


def downgrade() -> None:
    op.drop_index("ix_lead_claims_level", "lead_claims")
    op.drop_table("lead_claims")
    op.drop_table("article_leads")
