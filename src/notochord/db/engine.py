"""Engines for one space's database, and the translation of driver errors.

SQLite rules: WAL journal, ``synchronous=NORMAL``, foreign keys on, a busy timeout. The driver's own
transaction handling is switched off so that SQLAlchemy's ``begin`` emits the ``BEGIN`` we choose:
write transactions start with ``BEGIN IMMEDIATE``, which takes the write lock up front. That makes
the read-check-write of a quota counter exact under concurrent writers (two deferred transactions
could both read the same counter and one would fail late with ``SQLITE_BUSY`` instead of waiting).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc

from notochord.errors import StorageError

__all__ = ["create_sqlite_engine", "read_tx", "storage_errors", "write_tx"]

_IMMEDIATE = "notochord_immediate"


def create_sqlite_engine(path: Path, *, busy_timeout_ms: int) -> sa.Engine:
    """An engine for the SQLite file at ``path`` with the pragmas above."""
    engine = sa.create_engine(
        f"sqlite+pysqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
        pool_size=8,
        max_overflow=8,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


@contextlib.contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Translate driver and SQLAlchemy errors into :class:`StorageError`."""
    try:
        yield
    except (exc.SQLAlchemyError, sqlite3.Error) as error:
        raise StorageError(f"{action} failed in the store: {error}") from error


@contextlib.contextmanager
def write_tx(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A write transaction holding the database's write lock from its first statement."""
    with (
        storage_errors("a write"),
        engine.connect().execution_options(**{_IMMEDIATE: True}) as conn,
        conn.begin(),
    ):
        yield conn


@contextlib.contextmanager
def read_tx(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A read transaction: one consistent snapshot for everything read inside it."""
    with storage_errors("a read"), engine.connect() as conn, conn.begin():
        yield conn
