"""The LLM judge: who decided each verdict, the judge's answers, its cache and its backlog.

Every result says who decided its level (``decided_by``: "Side", or "LLM: <model>" when the
judge's verdict was taken), keeps the judge's answer when it was asked (``judge``, JSON) and
why that answer is not shown or is still to come (``judge_note``). ``judge_cache`` holds the
judge's verdicts by model, prompt version, claim and source hash; ``judge_pending`` the requests
of citations to be judged later (the endpoint was down, slow or out of budget). Rows from before
the judge were all decided by Side.

Revision ID: 0007_judge
Revises: 0006_reviewer
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_judge"
down_revision = "0006_reviewer"
branch_labels = None
depends_on = None

LONG_TEXT = sa.Text(16_000_000)


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("decided_by", sa.String(255), nullable=False, server_default="Side"))
        batch.add_column(sa.Column("judge", sa.Text, nullable=True))
        batch.add_column(sa.Column("judge_note", sa.Text, nullable=True))
        batch.add_column(sa.Column("judge_pending", sa.Boolean, nullable=False, server_default="0"))
    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("prompt_version", sa.String(64), nullable=False),
        sa.Column("verdict", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "judge_pending",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False),
        sa.Column("check_id", sa.String(64), nullable=False),
        sa.Column("request", LONG_TEXT, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("result_id", name="uq_judge_pending_result"),
    )
    op.create_index("ix_judge_pending_check", "judge_pending", ["check_id"])


def downgrade() -> None:
    op.drop_index("ix_judge_pending_check", table_name="judge_pending")
    op.drop_table("judge_pending")
    op.drop_table("judge_cache")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("judge_pending")
        batch.drop_column("judge_note")
        batch.drop_column("judge")
        batch.drop_column("decided_by")
