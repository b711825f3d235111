"""Per-gem settings the user chooses (working folder, …).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gem_settings",
        sa.Column("gem_id", sa.String(100), sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value_json", sa.Text, nullable=False),
        sa.Column("changed_at", sa.String(24), nullable=False),
    )
