"""Engines for one space's database, and the translation of driver errors.

SQLite rules: WAL journal, ``synchronous=NORMAL``, foreign keys on, a busy timeout. The driver's own
transaction handling is switched off so that SQLAlchemy's ``begin`` emits the ``BEGIN`` we choose:
write transactions start with ``BEGIN IMMEDIATE``, which takes the write lock up front. That makes
the read-check-write of a quota counter exact under concurrent writers (two deferred transactions
could both read the same counter and one would fail late with ``SQLITE_BUSY`` instead of waiting).

A database whose file or folder cannot be written (a read-only mount, an immutable file) is opened
read-only, so that it can still be read. A WAL database needs its ``-shm`` index to be read: when
the ``-shm`` file is there, SQLite reads through it without writing; when neither it nor a
``-wal`` file is left (the last writer closed cleanly, everything is in the main file), the file is
opened as immutable, which needs no index at all. A leftover ``-wal`` without its index cannot be
read honestly (its commits would be skipped), so that case is refused with what to do.

An existing empty file is refused: stores are created complete (:mod:`notochord.db.creation`), so
such a file is one whose contents were lost. A new file (as that module builds one) is switched to
WAL as it is first opened. A file that already holds pages keeps its journal until :func:`use_wal`
switches it, which :func:`~notochord.db.migrate.migrate` does only once it knows the file is a
notochord store it may open: switching rewrites the file's header, and another program's database
(or a newer notochord's) put where a space belongs is refused unchanged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
import urllib.parse
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc, pool

from notochord.errors import (
    KnowledgeValidationError,
    NotochordError,
    ReadOnlyStoreError,
    StorageError,
    StorageFullError,
    StoreLockedError,
    StoreUnreachableError,
)

__all__ = [
    "DRIVER_TX",
    "WRITE_LOCK",
    "busy_timeout_seconds",
    "create_sqlite_engine",
    "is_read_only",
    "read_tx",
    "server_unreachable",
    "storage_errors",
    "use_wal",
    "write_tx",
]

WRITE_LOCK = "notochord_immediate"
"""The execution option of a write transaction: take the store's write lock with its first statement."""
DRIVER_TX = "notochord_driver_tx"
"""The execution option of a connection whose transactions are begun and ended on its driver's
connection by its owner (the SQLite writer connection, :mod:`notochord.db.writer`): SQLAlchemy's
``begin`` sends nothing on it."""
_SQLITE_BUSY = 5
_SQLITE_READONLY = 8
_SQLITE_CANTOPEN = 14
_SQLITE_FULL = 13
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# PostgreSQL's SQLSTATEs: disk_full, out_of_memory-class "insufficient resources", read-only transaction
_PG_FULL = frozenset({"53100", "53000"})
_PG_READ_ONLY = frozenset({"25006"})
_PG_PRIVILEGE = "42501"  # insufficient_privilege: a role that may read, or connect, but not write
_PG_OUT_OF_RANGE = "22003"  # numeric_value_out_of_range: a caller's number beyond the column's type

_READ_ONLY: weakref.WeakSet[sa.Engine] = weakref.WeakSet()
_BUSY_SECONDS: weakref.WeakKeyDictionary[sa.Engine, float] = weakref.WeakKeyDictionary()


def _writable(path: Path) -> bool:
    # os.access, not the mode bits: it also sees read-only mounts and immutable files, even as root.
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _read_only_uri(path: Path) -> str:
    quoted = urllib.parse.quote(str(path.resolve()))
    if Path(f"{path}-shm").exists():
        return f"file:{quoted}?mode=ro"
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ReadOnlyStoreError(
            f"the store {path} is read-only and was not closed cleanly (its write-ahead log {wal.name} is "
            "left without its index): make the folder writable and open it once, then it can be read-only again"
        )
    return f"file:{quoted}?immutable=1"


def _enter_wal(cursor: sqlite3.Cursor, busy_seconds: float) -> None:
    """Switch the database to WAL, waiting out other processes doing the same.

    Changing the journal mode of a database another connection is creating or switching can answer
    "database is locked" at once, without SQLite's busy handler: so many processes opening a fresh
    data directory together retry here, within the busy timeout, as any other lock is waited for.
    """
    deadline = time.monotonic() + busy_seconds
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _is_new(cursor: sqlite3.Cursor) -> bool:
    """Whether the database has no page yet (a file just created, or an empty one): nothing to rewrite."""
    row = cursor.execute("PRAGMA page_count").fetchone()
    return row is None or row[0] == 0


def use_wal(conn: sa.Connection) -> None:
    """Switch the SQLite database of ``conn`` to WAL if it is not in WAL yet (a no-op on other stores).

    Changes the file's header: call it only on a database known to be a notochord store, outside
    any transaction of ``conn``. A read-only store keeps the journal it has.
    """
    if conn.dialect.name != "sqlite" or conn.engine in _READ_ONLY:
        return
    driver = conn.connection.driver_connection
    if not isinstance(driver, sqlite3.Connection):
        return
    cursor = driver.cursor()
    try:
        row = cursor.execute("PRAGMA journal_mode").fetchone()
        if row is not None and str(row[0]).lower() not in {"wal", "memory"}:
            _enter_wal(cursor, busy_timeout_seconds(conn.engine))
    finally:
        cursor.close()


def create_sqlite_engine(path: Path, *, busy_timeout_ms: int) -> sa.Engine:
    """An engine for the SQLite file at ``path`` with the pragmas above (read-only if it cannot be written)."""
    if path.is_dir():
        raise StorageError(
            f"the store {path} is a folder, not a database file: move it away, "
            "or bring the space back with `notochord restore`"
        )
    if path.is_file() and path.stat().st_size == 0:
        raise StorageError(
            f"the store {path} is an empty file: a store is only ever put in place complete, so its contents "
            "were lost (a failed copy, a full disk, a program that emptied it); bring the space back with "
            "`notochord restore`, or move the file away to start this space afresh"
        )
    if not path.exists() and path.parent.is_dir() and not os.access(path.parent, os.W_OK):
        raise ReadOnlyStoreError(f"cannot create the store {path}: its folder is read-only; make it writable")
    read_only = path.exists() and not _writable(path)
    common: dict[str, Any] = {"pool_size": 8, "max_overflow": 8}
    if read_only:
        uri = _read_only_uri(path)
        timeout = busy_timeout_ms / 1000

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=timeout)

        # The URL names the file for messages only: the creator opens it.
        engine = sa.create_engine(f"sqlite+pysqlite:///{path}", creator=connect, poolclass=pool.QueuePool, **common)
        _READ_ONLY.add(engine)
    else:
        engine = sa.create_engine(
            f"sqlite+pysqlite:///{path}",
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            **common,
        )

    _BUSY_SECONDS[engine] = busy_timeout_ms / 1000

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            if not read_only:
                if _is_new(cursor):
                    _enter_wal(cursor, busy_timeout_ms / 1000)
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        options = conn.get_execution_options()
        if options.get(DRIVER_TX, False):
            return
        begin = "BEGIN IMMEDIATE" if options.get(WRITE_LOCK, False) else "BEGIN"
        if conn.dispatch.before_cursor_execute:
            conn.exec_driver_sql(begin)  # someone listens to statements (counts, tracing)
            return
        # On the driver's connection directly: through SQLAlchemy, BEGIN costs as much as a write.
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(begin)

    return engine


def busy_timeout_seconds(engine: sa.Engine) -> float:
    """How long a write on ``engine``'s SQLite file waits for another writer before it fails."""
    return _BUSY_SECONDS.get(engine, 5.0)


def is_read_only(engine: sa.Engine) -> bool:
    """Whether ``engine`` was opened read-only because its database cannot be written."""
    return engine in _READ_ONLY


def _sqlite_code(error: BaseException) -> int | None:
    orig = error.orig if isinstance(error, exc.DBAPIError) else error
    code = getattr(orig, "sqlite_errorcode", None)
    # Extended codes carry the primary code in their low byte (SQLITE_READONLY_DBMOVED is 8 | 4 << 8).
    return code & 0xFF if isinstance(code, int) else None


def _sqlstate(error: BaseException) -> str | None:
    orig = error.orig if isinstance(error, exc.DBAPIError) else error
    state = getattr(orig, "sqlstate", None)
    return state if isinstance(state, str) else None


def _holds_nul(error: BaseException) -> bool:
    # PostgreSQL's text type cannot hold U+0000; psycopg refuses such a value before sending it
    orig = error.orig if isinstance(error, exc.DBAPIError) else error
    return type(orig).__module__.startswith("psycopg") and "cannot contain NUL" in str(orig)


def _driver_error(error: BaseException) -> BaseException:
    """What the driver (or Python, binding a value) raised, without SQLAlchemy's wrapping."""
    orig = getattr(error, "orig", None)
    return orig if isinstance(orig, BaseException) else error


def _too_large(error: BaseException) -> bool:
    # sqlite3 refuses to bind an int beyond 64 bits; such a number can only come from the caller
    return isinstance(error, OverflowError) and "too large to convert" in str(error)


_TOO_LARGE = (
    "a number is too large: ids and whole numbers here are at most 9223372036854775807; check the number and retry"
)


# lock_not_available: a statement of a write waited past its transaction's lock_timeout
_PG_LOCK_WAIT = "55P03"
# deadlock_detected and serialization_failure: the server chose this transaction to undo; a retry succeeds
_PG_CONFLICT = ("40P01", "40001")
# connection exceptions, refused logins, and a server shutting down or starting up
_PG_UNREACHABLE = ("08", "28", "57P01", "57P02", "57P03")
# what a server (or libpq) says when it refuses the login rather than the connection
_LOGIN_REFUSED = ("authentication failed", "no password supplied", "pg_hba.conf", "role ", "password")


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def server_unreachable(error: BaseException, *, setting: str = "database_url") -> StoreUnreachableError | None:
    """The PostgreSQL server could not be reached or refused the login, in words naming the server and
    ``setting`` (what the user typed its URL into); ``None`` for any other error.

    The driver's own text is kept as the reason (it says "connection refused", or which user the
    server refused), with the password taken out: libpq quotes parts of a URL it cannot read.
    """
    orig = _driver_error(error)
    if not any(c.__name__ == "OperationalError" and c.__module__.startswith("psycopg") for c in type(orig).__mro__):
        return None
    state = _sqlstate(orig)
    if state is not None and not state.startswith(_PG_UNREACHABLE):
        return None
    pgconn = getattr(orig, "pgconn", None)
    reason = _text(getattr(pgconn, "error_message", None)) or str(orig)
    # libpq's first line is what happened; the lines after it are its own hints, which the message replaces
    first = next((line for line in reason.splitlines() if line.strip()), reason)
    reason = " ".join(first.replace("FATAL:", "").split()).rstrip(".")
    password = _text(getattr(pgconn, "password", None))
    for secret in {password, urllib.parse.quote(password, safe="")} - {""}:
        reason = reason.replace(f'"{secret}"', '"***"')  # as libpq quotes a token it cannot read
    host, port = _text(getattr(pgconn, "host", None)), _text(getattr(pgconn, "port", None))
    server = (
        f"the PostgreSQL server at {host or 'localhost'}:{port or 5432}"
        if pgconn is not None
        else "the PostgreSQL server"
    )
    user = _text(getattr(pgconn, "user", None))
    if user and any(sign in reason for sign in _LOGIN_REFUSED):
        return StoreUnreachableError(
            f"{server} refused the login of {user} ({reason}): check the user and password in {setting}"
        )
    return StoreUnreachableError(
        f"cannot connect to {server} ({reason}): check that the server runs and that {setting} names it "
        "(host and port), then retry"
    )


def _translate(action: str, error: BaseException) -> NotochordError:
    unreachable = server_unreachable(error)
    if unreachable is not None:
        return unreachable
    if _too_large(_driver_error(error)):
        return KnowledgeValidationError(_TOO_LARGE)
    if _sqlstate(error) == _PG_OUT_OF_RANGE:
        # PostgreSQL refuses to compare a number beyond its column's type (2**31 with a 32-bit
        # position, 2**63 with a bigint id); the store's own numbers stay far below, so it is the caller's
        return KnowledgeValidationError(
            "a number is out of the range this store holds: ids and whole numbers here are at most "
            "9223372036854775807, positions at most 2147483647; check the number and retry"
        )
    if _holds_nul(error):
        return KnowledgeValidationError(
            "text may not contain the NUL character (U+0000), which this store cannot hold; remove it and retry"
        )
    code = _sqlite_code(error)
    state = _sqlstate(error)
    if state in _PG_FULL:
        return StorageFullError(
            f"{action} failed: the database server is out of disk space; nothing was written. Free some space and retry"
        )
    if state == _PG_PRIVILEGE:
        said = str(_driver_error(error)).strip()
        first = said.splitlines()[0] if said else "permission denied"
        return ReadOnlyStoreError(
            f"{action} failed: the database user may not change this database ({first}); make that user the "
            "database's owner (ALTER DATABASE … OWNER TO …, and in that database ALTER SCHEMA public OWNER TO …), "
            "or name a user that owns it, then retry"
        )
    if state in _PG_READ_ONLY:
        return ReadOnlyStoreError(
            f"{action} failed: the database server accepts only reads (a standby, or read-only mode); "
            "point database_url at the primary to change anything"
        )
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StorageError(
            f"{action} failed: a database file of this vault is damaged or is not a notochord database "
            f"({_driver_error(error)}); `notochord check` names what is wrong, "
            "and `notochord restore` brings back a backup"
        )
    if state == _PG_LOCK_WAIT:
        return StoreLockedError(
            f"{action} failed: another client of the database server kept part of the store locked for longer "
            "than notochord waits (the setting sqlite_busy_timeout_ms); nothing was changed. Retry once it is done"
        )
    if state in _PG_CONFLICT:
        return StoreLockedError(
            f"{action} failed: it met another client's transaction on the database server at the same moment; "
            "nothing was changed. Retry once it is done"
        )
    if code == _SQLITE_BUSY:
        return StoreLockedError(
            f"{action} failed: another process kept the store locked for longer than notochord waits "
            "(the setting sqlite_busy_timeout_ms); nothing was changed. Retry once it is done"
        )
    if code == _SQLITE_CANTOPEN:
        return StorageError(
            f"{action} failed: a database file of this vault cannot be opened (it is missing, not a file, "
            "or its folder cannot be read); check the data directory, or bring it back with `notochord restore`"
        )
    if code == _SQLITE_FULL:
        return StorageFullError(f"{action} failed: the disk is full; nothing was written. Free some space and retry")
    if code == _SQLITE_READONLY:
        return ReadOnlyStoreError(
            f"{action} failed: the store is read-only; make the data directory writable to change anything"
        )
    return StorageError(f"{action} failed in the store: {_driver_error(error)}")


@contextlib.contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Translate driver and SQLAlchemy errors (and a full disk) into :class:`StorageError`.

    A text holding U+0000, which PostgreSQL cannot store, is the caller's error:
    :class:`~notochord.errors.KnowledgeValidationError`.
    """
    try:
        yield
    except (exc.SQLAlchemyError, sqlite3.Error) as error:
        raise _translate(action, error) from error
    except OverflowError as error:
        if not _too_large(error):
            raise
        raise KnowledgeValidationError(_TOO_LARGE) from error
    except OSError as error:
        if error.errno not in _FULL_ERRNOS:
            raise
        raise StorageFullError(
            f"{action} failed: the disk is full; nothing was written. Free some space and retry"
        ) from error


@contextlib.contextmanager
def write_tx(engine: sa.Engine, *, action: str = "a write") -> Iterator[sa.Connection]:
    """A write transaction holding the database's write lock from its first statement."""
    with (
        storage_errors(action),
        engine.connect().execution_options(**{WRITE_LOCK: True}) as conn,
        conn.begin(),
    ):
        yield conn


@contextlib.contextmanager
def read_tx(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A read transaction: one consistent snapshot for everything read inside it."""
    with storage_errors("a read"), engine.connect() as conn, conn.begin():
        yield conn
