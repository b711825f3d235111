"""Entity names and identifier values kept case-folded, for name queries and the order of pages.

A name query compared ``lower(display_name)`` with the folded query: SQLite's ``lower`` folds ASCII
letters only and PostgreSQL's follows the server's locale, so ``émile`` found ``ÉMILE`` on one
backend only, ``strasse`` found ``Straße`` on neither, and pages came in a different order on each.
Each name and identifier value now keeps its Unicode case folding (accents composed, then
``str.casefold``, composed again) beside it, written by the one write path; queries and the order
of pages compare those, byte by byte on both backends (collation ``C`` on PostgreSQL). Existing rows
are folded here, with this migration's own rule: the rule of its day, whatever the code's later becomes.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_BATCH = 1000
_FOLDED = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")


def _folded(text: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def _fill(table: str, source: str, target: str) -> None:
    conn = op.get_bind()
    rows = sa.table(table, sa.column("id", sa.Integer), sa.column(source, sa.Text), sa.column(target, sa.Text))
    statement = sa.update(rows).where(rows.c.id == sa.bindparam("row_id")).values({target: sa.bindparam("folded")})
    last = 0
    while True:
        batch = conn.execute(
            sa.select(rows.c.id, rows.c[source]).where(rows.c.id > last).order_by(rows.c.id).limit(_BATCH)
        ).all()
        if not batch:
            return
        conn.execute(statement, [{"row_id": row_id, "folded": _folded(text)} for row_id, text in batch])
        last = batch[-1][0]


def _add(table: str, column: str) -> None:
    # a store set back to an earlier revision runs this again (every later migration is repeatable)
    if column not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}:
        op.add_column(table, sa.Column(column, _FOLDED, nullable=False, server_default=""))


def upgrade() -> None:
    _add("entities", "name_folded")
    _add("identifiers", "value_folded")
    _fill("entities", "display_name", "name_folded")
    _fill("identifiers", "value", "value_folded")
    if op.get_bind().dialect.name == "sqlite":
        # a PostgreSQL B-tree entry may not hold a long name: the server sorts a page instead
        op.create_index("ix_entities_name_folded", "entities", ["name_folded"], if_not_exists=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_entities_name_folded", table_name="entities")
    with op.batch_alter_table("identifiers") as batch:
        batch.drop_column("value_folded")
    with op.batch_alter_table("entities") as batch:
        batch.drop_column("name_folded")
