"""Results carry their verdict level: supported, partially_supported, not_supported, cannot_check.

Three columns on ``results``: ``level`` (what the dashboard, API, gadget and report show and
filter on), ``level_reason`` (why a citation cannot be checked; "" otherwise) and
``reportable`` (not supported at the talk-page report's operating point). Rows stored before
them are backfilled from what they kept: no score means cannot check, a flag means not
supported, else supported; none of them is reportable.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("level", sa.String(24), nullable=False, server_default="cannot_check"))
        batch.add_column(sa.Column("level_reason", sa.Text, nullable=True))
        batch.add_column(sa.Column("reportable", sa.Boolean, nullable=False, server_default="0"))
    results = sa.table("results", sa.column("level", sa.String), sa.column("score", sa.Float),
                       sa.column("flagged", sa.Boolean), sa.column("source_error", sa.Text),
                       sa.column("level_reason", sa.Text))
    op.execute(results.update().where(results.c.score.isnot(None)).values(
        level=sa.case((results.c.flagged.is_(True), "not_supported"), else_="supported"), level_reason=""))
    op.execute(results.update().where(results.c.score.is_(None)).values(level_reason=results.c.source_error))
    op.create_index("ix_results_level", "results", ["level", "review_status"])


def downgrade() -> None:
    op.drop_index("ix_results_level", "results")
    # Dropped in place (SQLite >= 3.35 can): batch mode's copy-and-rename of ``results`` would drop
    # the old table, and with foreign keys on that deletes every feedback row by cascade.
    with op.batch_alter_table("results", recreate="never") as batch:
        batch.drop_column("reportable")
        batch.drop_column("level_reason")
        batch.drop_column("level")
