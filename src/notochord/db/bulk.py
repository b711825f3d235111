"""Many rows of one table written by one statement, on either backend.

A batch of documents writes thousands of rows (chunks, postings, mentions); sending them one
statement, or one executemany parameter set, per row costs more than the database takes to store
them:

- **SQLite**: the driver's own ``executemany`` of one compiled ``INSERT`` (no per-row parameter
  processing by SQLAlchemy), in the caller's transaction, in process: no round trip.
- **PostgreSQL**: one ``COPY … FROM STDIN`` in the caller's transaction: the rows stream to the
  server in one exchange, one round trip whatever their number, formatted by psycopg's C code.

Rows are stored in the order given, so the ids a table assigns ascend with it, as they would one
insert at a time. Table and column names come from code, never from callers' data. Statement
listeners (``before_cursor_execute``) hear of each call as they would of SQLAlchemy's own; the
drivers' errors reach the caller as sqlite3's or SQLAlchemy's, both of which the store translates
(:func:`~notochord.db.engine.storage_errors`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg
import sqlalchemy as sa

__all__ = ["copy_rows", "copy_text", "draw_ids", "insert_rows"]

_SQL: dict[tuple[str, str, tuple[str, ...]], str] = {}
_LOCK = threading.Lock()


def _statement(conn: sa.Connection, table: str, names: tuple[str, ...]) -> str:
    key = (conn.dialect.name, table, names)
    found = _SQL.get(key)
    if found is None:
        quote = conn.dialect.identifier_preparer.quote
        columns = ", ".join(quote(n) for n in names)
        if conn.dialect.name == "postgresql":
            found = f"COPY {quote(table)} ({columns}) FROM STDIN"
        else:
            found = f"INSERT INTO {quote(table)} ({columns}) VALUES ({', '.join('?' for _ in names)})"
        with _LOCK:
            _SQL[key] = found
    return found


def _announce(conn: sa.Connection, cursor: Any, sql: str) -> None:
    # someone listens (statement counts, tracing): tell them, as SQLAlchemy would
    if conn.engine.dispatch.before_cursor_execute:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, (), None, True)


def copy_rows(conn: sa.Connection, table: str, names: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Store ``rows`` (values in the order of ``names``) in ``table``, in ``conn``'s transaction."""
    sql = _statement(conn, table, tuple(names))
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    _announce(conn, cursor, sql)
    if conn.dialect.name != "postgresql":
        cursor.executemany(sql, rows)  # sqlite3's own errors are the store's to translate
        return
    try:
        with cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
    except psycopg.Error as error:
        raise sa.exc.DBAPIError.instance(sql, None, error, psycopg.Error) from error
    finally:
        cursor.close()


def copy_text(conn: sa.Connection, table: str, names: Sequence[str], data: str) -> None:
    """Store the rows of ``data``, already in ``COPY``'s text format (values of ``names`` separated by
    tabs, one row a line, ``\\``, tab, newline and carriage return escaped), in ``table``, in
    ``conn``'s transaction: PostgreSQL only.

    For rows made in bulk elsewhere (the postings a tokenizer gives): one string to send, rather than
    a Python call per row.
    """
    if conn.dialect.name != "postgresql":
        raise TypeError("rows in COPY's text format are for PostgreSQL")
    sql = _statement(conn, table, tuple(names))
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    _announce(conn, cursor, sql)
    try:
        with cursor.copy(sql) as copy:
            copy.write(data)
    except psycopg.Error as error:
        raise sa.exc.DBAPIError.instance(sql, None, error, psycopg.Error) from error
    finally:
        cursor.close()


def insert_rows(conn: sa.Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (mappings with the same column names) into ``table`` in ``conn``'s transaction."""
    if not rows:
        return
    names = tuple(rows[0])
    copy_rows(conn, table.name, names, ([row[n] for n in names] for row in rows))


def draw_ids(conn: sa.Connection, counts: Mapping[str, int]) -> dict[str, list[int]]:
    """For each table, ``count`` new values of its integer ``id`` key, ascending, in one statement.

    PostgreSQL draws them from the tables' sequences (a rolled-back batch leaves a gap, as
    rolled-back single inserts do); SQLite takes the largest id plus one onwards, the ids its own
    inserts would assign next, which holds because the caller writes under the write lock. Table
    names come from code.
    """
    tables = list(counts)
    if not tables:
        return {}
    if conn.dialect.name == "postgresql":
        arrays = ", ".join(
            f"ARRAY(SELECT nextval(pg_get_serial_sequence('{t}', 'id')) FROM generate_series(1, :n{n}))"
            for n, t in enumerate(tables)
        )
        found = conn.execute(sa.text(f"SELECT {arrays}"), {f"n{n}": counts[t] for n, t in enumerate(tables)}).one()
        return {t: sorted(int(i) for i in drawn) for t, drawn in zip(tables, found, strict=True)}
    lasts = conn.execute(sa.text("SELECT " + ", ".join(f"(SELECT max(id) FROM {t})" for t in tables))).one()
    return {
        t: list(range(int(last or 0) + 1, int(last or 0) + 1 + counts[t]))
        for t, last in zip(tables, lasts, strict=True)
    }
