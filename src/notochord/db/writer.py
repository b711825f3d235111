"""The write transactions of the knowledge store, on one writer connection per SQLite database.

SQLite lets one connection write at a time (``BEGIN IMMEDIATE`` takes the lock), so handing every
write of a process its own pool checkout buys no concurrency; it costs a connection set-up and
tear-down through the pool on every write (checkout and check-in events, the reset on return),
several times what SQLite takes to commit a small write, and a write on a connection whose page
cache the previous write (on another connection) made stale. Here each SQLite engine keeps one
connection checked out for its writes, handed to one thread at a time: a thread that finds it busy
waits for it (up to the busy timeout, then on a pool connection and SQLite's own busy wait, as
every write did before), and a write nested inside another on the same thread takes a pool
connection as before, so nothing that worked deadlocks. Closing or disposing of the engine closes
the writer connection too, so the last connection to go still leaves the database without a
write-ahead log.

The transaction is begun and ended on the driver's connection: the same ``BEGIN IMMEDIATE`` as
:func:`~notochord.db.engine.write_tx` (announced to ``before_cursor_execute`` listeners like every
statement), the driver's commit or rollback, the same error translation. SQLAlchemy's transaction
object, its events and its commit bookkeeping cost about as much as the write's own statements;
the writer connection instead holds one SQLAlchemy transaction for its whole life, which sends
nothing (:data:`~notochord.db.engine.DRIVER_TX`) and only keeps SQLAlchemy from beginning one per
statement.

PostgreSQL writes keep their pool connection each (many servers' clients write concurrently and
the lock is the space's advisory lock, see :mod:`notochord.db.postgres`).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from notochord.db.engine import DRIVER_TX, WRITE_LOCK, busy_timeout_seconds, is_read_only, storage_errors, write_tx

__all__ = ["close_writer", "lasting_memo", "write_session"]

_TRACKED_KEYS = ("entity_data_version", "vocabulary_version", "gem_grants_version")
"""The ``space_meta`` keys whose writes end :func:`lasting_memo` (the data versions)."""
_CHANGED = "notochord_versions_changed"
_HAS_META = "SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = 'space_meta'"
# Temporary (per connection, never in the file): each write of a tracked key on the writer
# connection tells the writer, whichever code path wrote it.
_TRIGGERS = tuple(
    f"CREATE TEMP TRIGGER IF NOT EXISTS notochord_versions_{event.lower()} AFTER {event} ON main.space_meta "
    f"WHEN {row}.key IN ({', '.join(repr(k) for k in _TRACKED_KEYS)}) BEGIN SELECT {_CHANGED}(); END"
    for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
)


class _Writer:
    """One engine's writer connection and the lock that hands it to one thread at a time."""

    def __init__(self, engine: sa.Engine, wait_seconds: float) -> None:
        self._engine = weakref.ref(engine)
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.wait_seconds = wait_seconds
        self.close_after = False
        self._conn: sa.Connection | None = None
        self._driver: Any = None
        self.memo: dict[Any, Any] = {}
        self.in_write = False
        self._tracking = False
        self._seen_version: int | None = None
        self._changed = False

    def connection(self) -> tuple[sa.Connection, Any]:
        """The writer connection and its driver's connection (opened on first use, or again after it
        was closed or invalidated)."""
        conn = self._conn
        if conn is None or conn.closed or conn.invalidated:
            if conn is not None:
                conn.close()
            engine = self._engine()
            assert engine is not None
            conn = engine.connect().execution_options(**{WRITE_LOCK: True, DRIVER_TX: True})
            conn.begin()  # sends nothing: see the module's notes
            self._conn, self._driver = conn, conn.connection.driver_connection
            self.forget()
            self._driver.create_function(_CHANGED, 0, self._on_change)
        return conn, self._driver

    def _on_change(self) -> None:
        self._changed = True

    def forget(self) -> None:
        self.memo.clear()
        self._tracking = False
        self._seen_version = None

    def lasting(self) -> dict[Any, Any] | None:
        """:attr:`memo`, emptied first if any connection may have changed the data versions since
        it was filled; ``None`` when changes cannot be told (no ``space_meta`` table yet)."""
        conn, driver = self._conn, self._driver
        assert conn is not None
        version = _scalar(conn, driver, "PRAGMA data_version")
        if version != self._seen_version or not self._tracking:
            # another connection committed (this one's own commits leave data_version alone), or
            # the triggers are not there yet: start again, and make sure they are there
            self.memo.clear()
            self._seen_version = version
            self._tracking = bool(_scalar(conn, driver, _HAS_META))
            if self._tracking:
                for trigger in _TRIGGERS:
                    driver.execute(trigger)
        if self._changed:
            self._changed = False
            self.memo.clear()
        return self.memo if self._tracking else None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            # closed for real, not returned to the pool: the engine's pool is being disposed of, and
            # the last connection to close is the one that folds the write-ahead log into the file
            conn.invalidate()
            conn.close()


_WRITERS: weakref.WeakKeyDictionary[sa.Engine, _Writer] = weakref.WeakKeyDictionary()
_WRITERS_LOCK = threading.Lock()


def _writer(engine: sa.Engine) -> _Writer | None:
    found = _WRITERS.get(engine)
    if found is not None:
        return found
    if engine.dialect.name != "sqlite" or is_read_only(engine):
        return None
    with _WRITERS_LOCK:
        found = _WRITERS.get(engine)
        if found is None:
            found = _WRITERS[engine] = _Writer(engine, busy_timeout_seconds(engine))
            event.listen(engine, "engine_disposed", close_writer)
    return found


def close_writer(engine: sa.Engine) -> None:
    """Close ``engine``'s writer connection (when it is not in use); the next write opens it again."""
    writer = _WRITERS.get(engine)
    if writer is None:
        return
    if writer.owner == threading.get_ident():
        writer.close_after = True  # disposed of from inside this thread's own write, which still needs it
        return
    if writer.lock.acquire(timeout=writer.wait_seconds):
        try:
            writer.close()
        finally:
            writer.lock.release()


@contextlib.contextmanager
def write_session(engine: sa.Engine, *, action: str = "a write") -> Iterator[sa.Connection]:
    """A write transaction holding the database's write lock, as :func:`~notochord.db.engine.write_tx`;
    on SQLite on the engine's writer connection."""
    writer = _writer(engine)
    me = threading.get_ident()
    if writer is None or writer.owner == me or not writer.lock.acquire(timeout=writer.wait_seconds):
        with write_tx(engine, action=action) as conn:
            yield conn
        return
    writer.owner = me
    try:
        with storage_errors(action):
            conn, driver = writer.connection()
            _begin_immediate(conn, driver)
            writer.in_write = True
            try:
                yield conn
                driver.commit()
            except BaseException:
                # what was remembered may come from this transaction's own writes
                writer.forget()
                if driver.in_transaction:
                    driver.rollback()
                raise
    finally:
        writer.in_write = False
        writer.owner = None
        if writer.close_after:
            writer.close_after = False
            writer.close()
        writer.lock.release()


def lasting_memo(conn: sa.Connection) -> dict[Any, Any] | None:
    """A memo that lasts across the write transactions of ``conn`` while no connection changes the
    data versions (``space_meta``'s entity, vocabulary and grants tokens), for what is read from
    them alone; ``None`` unless ``conn`` is a SQLite writer connection inside its write.

    Commits of other connections, in this process or another, show in SQLite's ``PRAGMA
    data_version`` (one cheap statement per call); this connection's own writes of those keys are
    reported by temporary triggers; a rolled-back write empties it.
    """
    writer = _WRITERS.get(conn.engine)
    if writer is None or writer._conn is not conn or not writer.in_write:
        return None
    return writer.lasting()


def _scalar(conn: sa.Connection, driver: Any, sql: str) -> Any:
    if not conn.engine.dispatch.before_cursor_execute:
        return driver.execute(sql).fetchone()[0]
    cursor = driver.cursor()
    conn.dispatch.before_cursor_execute(conn, cursor, sql, (), None, False)
    return cursor.execute(sql).fetchone()[0]


def _begin_immediate(conn: sa.Connection, driver: Any) -> None:
    if not conn.engine.dispatch.before_cursor_execute:
        driver.execute("BEGIN IMMEDIATE")
        return
    # someone listens (statement counts, tracing): tell them, as SQLAlchemy would
    cursor = driver.cursor()
    conn.dispatch.before_cursor_execute(conn, cursor, "BEGIN IMMEDIATE", (), None, False)
    cursor.execute("BEGIN IMMEDIATE")
