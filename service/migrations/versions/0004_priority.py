"""Results carry their queue priority: failure likelihood with the signals patrollers trust.

Two columns on ``results``: ``priority`` (what the patrol queue is ordered by, highest first;
NULL for a citation that was not scored) and ``priority_parts`` (JSON of
:class:`side.priority.Priority`: URL depth, WP:RSP status, reference age and survival, and what
each added). Rows stored before them get their failure likelihood as priority and no parts, so
the queue's order of old rows is what it was. One index serves the queue's query.

Revision ID: 0004_priority
Revises: 0003
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_priority"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("priority", sa.Float, nullable=True))
        batch.add_column(sa.Column("priority_parts", sa.Text, nullable=True))
    results = sa.table("results", sa.column("priority", sa.Float), sa.column("failure_likelihood", sa.Float))
    op.execute(results.update().values(priority=results.c.failure_likelihood))
    op.create_index("ix_results_priority", "results", ["flagged", "review_status", "priority"])


def downgrade() -> None:
    op.drop_index("ix_results_priority", "results")
    # Dropped in place (SQLite >= 3.35 can): batch mode's copy-and-rename of ``results`` would drop
    # the old table, and with foreign keys on that deletes every feedback row by cascade.
    with op.batch_alter_table("results", recreate="never") as batch:
        batch.drop_column("priority_parts")
        batch.drop_column("priority")
