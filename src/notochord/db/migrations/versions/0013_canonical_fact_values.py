"""Every stored fact value in canonical JSON.

A value the user took from a conflict ("take theirs") was stored with spaces after ``,`` and ``:``,
while every put stores compact JSON with sorted keys and compares values by that text. Such a value
never read as a duplicate afterwards: saying it again added a second current copy, or a conflict.
Only values containing ``", "`` or ``": "`` can be affected, so only those are read and, where their
canonical form differs, rewritten. The encoder is this migration's own: the rule it applies is the
one of its day, whatever the code's later becomes.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
_BATCH = 1000


def upgrade() -> None:
    conn = op.get_bind()
    facts = sa.table("facts", sa.column("id", sa.Integer), sa.column("value_json", sa.Text))
    spaced = conn.execute(
        sa.select(facts.c.id, facts.c.value_json)
        .where(sa.or_(facts.c.value_json.like("%, %"), facts.c.value_json.like("%: %")))
        .order_by(facts.c.id)
    ).all()
    rewritten = []
    for fact_id, value_json in spaced:
        canonical = _CANONICAL.encode(json.loads(value_json))
        if canonical != value_json:
            rewritten.append({"fact_id": fact_id, "canonical": canonical})
    statement = (
        sa.update(facts).where(facts.c.id == sa.bindparam("fact_id")).values(value_json=sa.bindparam("canonical"))
    )
    for start in range(0, len(rewritten), _BATCH):
        conn.execute(statement, rewritten[start : start + _BATCH])


def downgrade() -> None:
    """Nothing to undo: canonical JSON is what every version reads."""
