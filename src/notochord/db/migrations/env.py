"""Alembic environment: migrations always run on a connection handed in by ``db.migrate``."""

from __future__ import annotations

from alembic import context

from notochord.db.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("notochord migrations run through notochord.db.migrate, not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
