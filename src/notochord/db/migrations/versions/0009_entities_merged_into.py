"""Index ``entities.merged_into``: following a merged entity to the one it lives on in no longer scans
the whole table on every write that resolves an entity.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_entities_merged_into", "entities", ["merged_into"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_entities_merged_into", table_name="entities")
