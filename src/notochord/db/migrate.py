"""Bring a space's database to the newest schema with Alembic, on open.

Revisions are numbered ``0001``, ``0002``, … in file names and ids alike, so the newest one is known
without loading Alembic: a database already at the head (every open after the first) costs one
read, and Alembic is imported only when there is something to migrate.

Several processes may open a new space at the same moment. The version is therefore read first,
without any lock; only a database behind the head takes the write lock (``BEGIN IMMEDIATE``, which
waits out the busy timeout instead of failing), reads the version again under the lock (another
process may have migrated it meanwhile) and migrates in that one transaction. A read-only store
at the head is used as it is; one that needs migrating is refused with what to do.

A database this version cannot migrate is refused before anything is written to it: one whose
schema is newer than this version knows (a newer notochord wrote it), and one that holds tables but
no schema record (another program's database put where a space belongs): migrating the latter
would write notochord's tables into someone else's data. Not even the journal is switched before
that check (switching a SQLite file to WAL rewrites its header): a refused file is left byte for
byte as it was, and the engine lets go of it at once, so that no ``-wal`` or ``-shm`` file of a
WAL-mode database outlives the refusal.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from notochord.db.engine import is_read_only, storage_errors, use_wal, write_tx
from notochord.errors import ReadOnlyStoreError, StorageError, StoreVersionError

__all__ = ["head_revision", "migrate"]

_SCRIPTS = Path(__file__).with_name("migrations")


def _revisions() -> set[str]:
    return {p.name.split("_", 1)[0] for p in (_SCRIPTS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py")}


def head_revision() -> str:
    """The newest revision id shipped with this version of notochord."""
    return max(_revisions())


def _current(conn: sa.Connection) -> str | None:
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def _refuse_unknown(engine: sa.Engine, conn: sa.Connection, current: str | None, head: str) -> None:
    """Raise when the database is not one this version can bring to ``head``."""
    store = engine.url.database or "of this space"
    if current is None:
        if sa.inspect(conn).get_table_names():
            raise StorageError(
                f"the store {store} holds tables but is not a notochord database (it has no schema record): "
                "another program's database may have been put in its place; move it away, "
                "or bring the space back with `notochord restore`"
            )
        return
    if current not in _revisions():
        newer = current.isdigit() and len(current) == len(head) and current > head
        cause = (
            "a newer version of notochord wrote it; upgrade notochord to open it"
            if newer
            else "this version of notochord does not know it; upgrade notochord, or bring the space back "
            "with `notochord restore`"
        )
        raise StoreVersionError(
            f"the store {store} has schema {current!r}, and this version knows up to {head}: {cause}"
        )


def migrate(engine: sa.Engine) -> None:
    """Apply every migration the database has not seen yet. Idempotent, and safe across processes."""
    head = head_revision()
    try:
        _migrate(engine, head)
    except StorageError:
        engine.dispose()  # a refused store is let go of: nothing of it stays open
        raise


def _migrate(engine: sa.Engine, head: str) -> None:
    with storage_errors("migrating the store"):
        with engine.connect() as conn:
            current = _current(conn)
            if current != head:
                _refuse_unknown(engine, conn, current, head)
            conn.rollback()  # the journal changes only outside a transaction
            use_wal(conn)  # known to be notochord's now (a restored backup is in rollback mode)
            if current == head:
                return
        if is_read_only(engine):
            found = f"schema {current}" if current else "no schema yet"
            raise ReadOnlyStoreError(
                f"the store {engine.url.database} needs an upgrade to schema {head} "
                f"({found}) but it is read-only: make the data directory writable and open it once, "
                "then it can be read-only again"
            )
        from alembic import command
        from alembic.config import Config

        with write_tx(engine, action="migrating the store") as conn:
            current = _current(conn)
            if current == head:
                return
            _refuse_unknown(engine, conn, current, head)
            config = Config()
            config.set_main_option("script_location", str(_SCRIPTS))
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
