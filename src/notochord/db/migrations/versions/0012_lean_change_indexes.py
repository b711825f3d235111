"""Fewer index updates per write: every write appends a change record and its touched objects, and
a fact write a fact, so each index on ``facts``, ``changes`` and ``change_objects`` costs every
write a page. Only what a query reads stays indexed:

- ``changes.run_id`` holds only changes made in a run (``run_id = ?`` never asks for the others);
- ``changes (actor, created_at)`` and ``facts.writer`` hold only what is not the user's: they serve
  a gem's or the assistant's own changes and an uninstalled gem's facts, while the user's own
  writes, most of the store, are never looked up by who wrote them;
- on SQLite ``change_objects`` is a ``WITHOUT ROWID`` table: its primary key is the table itself
  instead of a second b-tree beside it.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_PARTIAL = (
    ("ix_changes_run_id", "changes", ["run_id"], "run_id IS NOT NULL"),
    ("ix_changes_actor_created_at", "changes", ["actor", "created_at"], "actor <> 'user'"),
    ("ix_facts_writer", "facts", ["writer"], "writer <> 'user'"),
)

_OBJECTS = """CREATE TABLE {name} (
	change_id INTEGER NOT NULL,
	object_type VARCHAR(20) NOT NULL,
	object_id INTEGER NOT NULL,
	CONSTRAINT pk_change_objects PRIMARY KEY (change_id, object_type, object_id),
	CONSTRAINT fk_change_objects_change_id_changes FOREIGN KEY(change_id) REFERENCES changes (id)
){rowid}"""
_OBJECTS_INDEX = "ix_change_objects_object_type_object_id"


def _rebuild_objects(*, with_rowid: bool) -> None:
    op.execute(_OBJECTS.format(name="change_objects_rebuilt", rowid="" if with_rowid else " WITHOUT ROWID"))
    op.execute(
        "INSERT INTO change_objects_rebuilt (change_id, object_type, object_id) "
        "SELECT change_id, object_type, object_id FROM change_objects"
    )
    op.execute("DROP TABLE change_objects")
    op.execute("ALTER TABLE change_objects_rebuilt RENAME TO change_objects")
    op.create_index(_OBJECTS_INDEX, "change_objects", ["object_type", "object_id"])


def upgrade() -> None:
    for name, table, columns, where in _PARTIAL:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, columns, sqlite_where=sa.text(where), postgresql_where=sa.text(where))
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_objects(with_rowid=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_objects(with_rowid=True)
    for name, table, columns, _where in _PARTIAL:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, columns)
