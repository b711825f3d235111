"""The write transactions of the knowledge store, on one writer connection per SQLite database.

SQLite lets one connection write at a time (``BEGIN IMMEDIATE`` takes the lock), so handing every
write of a process its own pool checkout buys no concurrency; it costs a connection set-up and
tear-down through the pool on every write (checkout and check-in events, the reset on return),
several times what SQLite takes to commit a small write, and a write on a connection whose page
cache the previous write (on another connection) made stale. Here each SQLite engine keeps one
connection checked out for its writes, handed to one thread at a time: a thread that finds it busy
waits for it (up to the busy timeout, then on a pool connection and SQLite's own busy wait, as
every write did before), and a write nested inside another on the same thread takes a pool
connection as before, so nothing that worked deadlocks. The transaction itself is SQLAlchemy's as
in :func:`~notochord.db.engine.write_tx` (same ``BEGIN IMMEDIATE``, same events, same error
translation); closing or disposing of the engine closes the writer connection too, so the last
connection to go still leaves the database without a write-ahead log.

PostgreSQL writes keep their pool connection each (many servers' clients write concurrently and
the lock is the space's advisory lock, see :mod:`notochord.db.postgres`).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy import event

from notochord.db.engine import WRITE_LOCK, busy_timeout_seconds, is_read_only, storage_errors, write_tx

__all__ = ["close_writer", "write_session"]


class _Writer:
    """One engine's writer connection and the lock that hands it to one thread at a time."""

    def __init__(self, engine: sa.Engine, wait_seconds: float) -> None:
        self._engine = weakref.ref(engine)
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.wait_seconds = wait_seconds
        self.close_after = False
        self._conn: sa.Connection | None = None

    def connection(self) -> sa.Connection:
        """The writer connection (opened on first use, or again after it was closed or invalidated)."""
        conn = self._conn
        if conn is None or conn.closed or conn.invalidated:
            if conn is not None:
                conn.close()
            engine = self._engine()
            assert engine is not None
            conn = self._conn = engine.connect().execution_options(**{WRITE_LOCK: True})
        return conn

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
            conn = writer.connection()
            with conn.begin():
                yield conn
    finally:
        writer.owner = None
        if writer.close_after:
            writer.close_after = False
            writer.close()
        writer.lock.release()
