"""What a weak citation lacks and how much it matters: ``results.missing``, ``results.severity``.

For a partially or not supported level (Side's or the judge's), ``missing`` is the kind of the
claim's unsupported part (:class:`side.verify.severity.MissingKind`: number, date, name,
quotation or wording) and ``severity`` how much that matters (high or low). Both are null for
other levels and for rows stored before the columns.

Revision ID: 0010_severity
Revises: 0009_unsure
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_severity"
down_revision = "0009_unsure"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("missing", sa.String(16), nullable=True))
        batch.add_column(sa.Column("severity", sa.String(8), nullable=True))


def downgrade() -> None:
    # In place, as 0004 does: a batch copy of ``results`` would cascade-delete its feedback.
    with op.batch_alter_table("results", recreate="never") as batch:
        batch.drop_column("severity")
        batch.drop_column("missing")
