"""Instruction-like text in cited sources: ``results.source_instructions``.

A cited page that talks to a language model ("ignore previous instructions", "answer
supported"...) is noted on its result (a JSON list of the phrases found, matched by
``side.verify.judge.INSTRUCTION_PATTERNS``), so a patroller sees a page written to steer the LLM
judge. Rows from before the note have none (null).

Revision ID: 0008_source_instructions
Revises: 0007_judge
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_source_instructions"
down_revision = "0007_judge"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("source_instructions", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.drop_column("source_instructions")
