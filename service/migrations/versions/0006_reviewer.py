"""Feedback names its reviewer by the wiki account they logged in with, not a typed-in name.

Reviewers now log in through Wikimedia OAuth (gadget/server/login.py), and a review is stored
under the user name the wiki vouched for, in the new ``reviewer`` column. The free-text ``user``
column goes: anyone could type any name into it, so its values are not carried over as
reviewers (a row from before logins has ``reviewer`` ""). A downgrade brings the ``user`` column
back holding the reviewer names.

Revision ID: 0006_reviewer
Revises: 0005_lead_claims
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_reviewer"
down_revision = "0005_lead_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.add_column(sa.Column("reviewer", sa.String(255), nullable=False, server_default=""))
        batch.drop_column("user")
    with op.batch_alter_table("feedback") as batch:
        batch.alter_column("reviewer", server_default=None, existing_type=sa.String(255), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.add_column(sa.Column("user", sa.String(255), nullable=False, server_default=""))
    feedback = sa.table("feedback", sa.column("user", sa.String), sa.column("reviewer", sa.String))
    op.execute(feedback.update().values(user=feedback.c.reviewer))
    with op.batch_alter_table("feedback") as batch:
        batch.drop_column("reviewer")
        batch.alter_column("user", server_default=None, existing_type=sa.String(255), existing_nullable=False)
