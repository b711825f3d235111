"""Runs of gem tools: status, folder, output and log, for ``notochord runs``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TS = sa.String(24)


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(300), primary_key=True),
        sa.Column("gem_id", sa.String(100), nullable=False),
        sa.Column("tool", sa.String(200)),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("conversation", sa.Text),
        sa.Column("folder", sa.Text),
        sa.Column("input_json", sa.Text),
        sa.Column("output_json", sa.Text),
        sa.Column("error_json", sa.Text),
        sa.Column("isolation_json", sa.Text),
        sa.Column("log", sa.Text),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("finished_at", TS),
    )
    op.create_index("ix_runs_gem_id_started_at", "runs", ["gem_id", "started_at"])
