"""A write that cannot get the space's write lock in time is refused as busy on both backends.

On SQLite a writer waits for another process's write lock up to its busy timeout, then fails with
:class:`~notochord.errors.StoreLockedError` ("busy, not broken": retry once the other is done) and
changes nothing. On PostgreSQL the write lock is an advisory lock, which by itself is waited for
without end: a process that froze, or whose network went away, while holding it (the server keeps
its session until TCP gives up, hours later) would hold every writer of the space with it. The
wait is bounded the same way and ends in the same error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from notochord.db import postgres
from notochord.db.creation import open_sqlite_store
from notochord.db.engine import read_tx, write_tx
from notochord.db.migrate import migrate
from notochord.db.schema import space_meta
from notochord.errors import StoreLockedError
from postgres_server import BACKENDS

WAIT_MS = 300
Holder = Callable[[], AbstractContextManager[None]]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[sa.Engine, Holder]]:
    """A migrated space whose writes wait ``WAIT_MS`` for the write lock, and a way for another
    process's connection to hold that lock."""
    if request.param == "sqlite":
        path = tmp_path / "personal.db"
        engine = open_sqlite_store(path, busy_timeout_ms=WAIT_MS)

        @contextmanager
        def hold() -> Iterator[None]:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:
                other.rollback()
                other.close()

    else:
        url: str = request.getfixturevalue("database_url")
        postgres.create_database(url, "personal")
        engine = postgres.create_postgresql_engine(url, "personal", lock_wait_ms=WAIT_MS)
        libpq = postgres.server_url(url, postgres.database_name(url, "personal"))
        target = libpq.set(drivername="postgresql").render_as_string(hide_password=False)

        @contextmanager
        def hold() -> Iterator[None]:
            with psycopg.connect(target) as other:
                other.execute("SELECT pg_advisory_xact_lock(%s)", (postgres.WRITE_LOCK_KEY,))
                yield
                other.rollback()

    migrate(engine)
    try:
        yield engine, hold
    finally:
        engine.dispose()


def _marker(engine: sa.Engine) -> str | None:
    with read_tx(engine) as conn:
        found = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == "probe")).scalar()
    return None if found is None else str(found)


def _write(engine: sa.Engine, value: str) -> None:
    with write_tx(engine) as conn:
        conn.execute(sa.delete(space_meta).where(space_meta.c.key == "probe"))
        conn.execute(sa.insert(space_meta).values(key="probe", value=value))


def test_a_write_held_up_past_the_wait_is_refused_as_busy_and_writes_nothing(
    store: tuple[sa.Engine, Holder],
) -> None:
    """K-QUOTA-14 (a refused write writes nothing): another process holding the write lock past the
    wait is a busy store, the same error on both backends, and the next write after it succeeds."""
    engine, hold = store
    _write(engine, "before")

    with hold(), pytest.raises(StoreLockedError) as caught:
        _write(engine, "during")
    assert "Retry once it is done" in str(caught.value)
    assert "psycopg" not in str(caught.value)
    assert _marker(engine) == "before"

    _write(engine, "after")
    assert _marker(engine) == "after"
