"""Results say which copy of the cited source was read: the live page or an archived copy.

One nullable JSON column, ``results.source_read``: ``{"copy": "live"|"archive", "url": the URL
actually read, "fallback": why that copy}``. NULL for results stored before it, and for
sources read from the evidence corpus or not read at all.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("results", sa.Column("source_read", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("results", "source_read")
