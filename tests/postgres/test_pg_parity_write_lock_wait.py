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

import notochord
from notochord.db import postgres
from notochord.db.creation import open_sqlite_store
from notochord.db.engine import read_tx, write_tx
from notochord.db.migrate import migrate
from notochord.db.schema import space_meta
from notochord.errors import StoreLockedError
from notochord.settings import Settings
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


@pytest.mark.postgresql
@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_a_write_held_up_by_a_table_another_client_locked_is_refused_as_busy(
    store: tuple[sa.Engine, Holder], request: pytest.FixtureRequest
) -> None:
    """K-QUOTA-14: the wait bound covers every lock a write's statements wait for, not only the
    space's write lock: a table another client of the server locked (a maintenance job, a migration
    of another process) past the wait is a busy store in the same words, and nothing is written."""
    engine, _ = store
    _write(engine, "before")
    url: str = request.getfixturevalue("database_url")
    libpq = postgres.server_url(url, postgres.database_name(url, "personal"))
    target = libpq.set(drivername="postgresql").render_as_string(hide_password=False)

    with psycopg.connect(target) as other:
        other.execute("LOCK TABLE space_meta IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreLockedError) as caught:
            _write(engine, "during")
        other.rollback()
    assert "Retry once it is done" in str(caught.value)
    assert "psycopg" not in str(caught.value) and "55P03" not in str(caught.value)
    assert _marker(engine) == "before"


@pytest.mark.postgresql
def test_a_vault_on_the_server_waits_as_long_as_its_setting_says(tmp_path: Path, database_url: str) -> None:
    """K-QUOTA-14: the setting that bounds a write's wait on SQLite bounds it on the server too; the
    refusal names the wait the vault was given, and the fact was not written."""
    settings = Settings(
        data_dir=tmp_path / "vault", index_in_background=False, database_url=database_url, sqlite_busy_timeout_ms=250
    )
    with notochord.open(settings.data_dir, settings) as vault:
        space = vault.personal
        libpq = postgres.server_url(database_url, postgres.database_name(database_url, "personal"))
        target = libpq.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(target) as other:
            other.execute("SELECT pg_advisory_xact_lock(%s)", (postgres.WRITE_LOCK_KEY,))
            with pytest.raises(StoreLockedError, match=r"\(0\.25 s\)"):
                space.user.facts.put(predicate="location.home.city", value="Leiden")
            other.rollback()
        assert space.user.facts.lookup("self", "location.home.city") == []
