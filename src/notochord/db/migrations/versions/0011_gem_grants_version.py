"""Give the gems' permission switches a version: a random token in ``space_meta`` that every write of
``gem_grants`` replaces, so a reader can tell at the cost of one single-row read whether the switches
it read before still hold. A space migrated here has a token from the start, so its switches are
cached from the first call (a space without one is always read afresh).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_KEY = "gem_grants_version"


def upgrade() -> None:
    bind = op.get_bind()
    found = bind.execute(sa.text("SELECT 1 FROM space_meta WHERE key = :key"), {"key": _KEY}).first()
    if found is None:
        bind.execute(
            sa.text("INSERT INTO space_meta (key, value) VALUES (:key, :token)"),
            {"key": _KEY, "token": uuid.uuid4().hex},
        )


def downgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM space_meta WHERE key = :key"), {"key": _KEY})
