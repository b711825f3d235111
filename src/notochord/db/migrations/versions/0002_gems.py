"""Installed gems and the permission switches the user turned on.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.String(24)


def upgrade() -> None:
    op.create_table(
        "gems",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("version", sa.String(100)),
        sa.Column("manifest_json", sa.Text, nullable=False),
        sa.Column("source_path", sa.Text),
        sa.Column("key_salt", sa.String(64), nullable=False),
        sa.Column("installed_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "gem_grants",
        sa.Column("gem_id", sa.String(100), sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("permission", sa.String(500), primary_key=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("changed_at", TS, nullable=False),
    )
