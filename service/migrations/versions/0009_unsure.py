"""Whether Side is sure of a result's level: ``results.unsure``.

``flagged`` means "likely fails review": the level needs review and the score is below the sure
flag cut. Between that cut and the supported cut the result is *unsure*: its level is shown as
Side's guess, it is never flagged nor reported, and the patrol queue shows it only when asked
(after the flags). Rows stored before the column are sure (false), as they were read then.

Revision ID: 0009_unsure
Revises: 0008_source_instructions
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_unsure"
down_revision = "0008_source_instructions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("unsure", sa.Boolean, nullable=False, server_default="0"))
    op.create_index("ix_results_unsure", "results", ["unsure", "review_status", "priority"])


def downgrade() -> None:
    op.drop_index("ix_results_unsure", "results")
    # In place, as 0004 does: a batch copy of ``results`` would cascade-delete its feedback.
    with op.batch_alter_table("results", recreate="never") as batch:
        batch.drop_column("unsure")
