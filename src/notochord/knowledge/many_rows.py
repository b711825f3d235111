"""Many rows in few statements on SQLite: a batch's new rows, and the stored rows of its keys.

On SQLite, ``executemany`` of a one-row ``INSERT`` runs the statement once per row, and each run
opens the table's and every index's cursor anew; a multi-row ``INSERT … VALUES (…), (…), …`` opens
them once for all its rows, which halves the cost of a row of a table with several indexes. Rows
fewer than :data:`ROWS_PER_STATEMENT` go in one ``executemany`` as before; more go in statements of
that many rows, then of a quarter as many, always with the same two texts, so the driver compiles
each once per connection and keeps it (compiling one costs about as much as writing its rows); the
last few go in one ``executemany``: a statement of their exact count would be compiled anew.

Reading the rows of many keys (:func:`keyed_rows`) takes the keys as the rows of a ``VALUES`` list
in the statement the same way, in chunks of two fixed sizes, the last one filled up by repeating its
last key (the caller drops the rows found twice): bound values cost SQLite less than taking a JSON
text of the keys apart.

On any other backend the new rows go through
:meth:`~notochord.knowledge.prepared.Prepared.run_tuples` unchanged (one ``COPY`` on PostgreSQL).
Statement listeners (counts, tracing) are told of every statement, as SQLAlchemy would tell them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.knowledge.prepared import Prepared

__all__ = [
    "KEYS_PER_SHORT_STATEMENT",
    "KEYS_PER_STATEMENT",
    "ROWS_PER_STATEMENT",
    "SHORT_CHUNKS",
    "insert_rows",
    "keyed_rows",
    "values_list",
]

ROWS_PER_STATEMENT = 128
"""New rows per multi-row statement; fewer go in one ``executemany``."""
SHORT_CHUNKS = 4
"""After the full statements, the rest goes in statements of a quarter as many rows, then the last
few in one ``executemany``."""
KEYS_PER_STATEMENT = 100
KEYS_PER_SHORT_STATEMENT = 10

_SQL: dict[tuple[str, tuple[str, ...], int], str] = {}


def insert_rows(
    conn: sa.Connection,
    statement: Prepared,
    table: sa.Table,
    columns: tuple[str, ...],
    rows: Sequence[tuple[Any, ...]],
    *,
    copy: bool = False,
) -> None:
    """Insert ``rows`` into ``table``: each a tuple of the values of ``columns``, in that order.

    ``statement`` is the plain ``INSERT`` of ``table`` the rows would otherwise go through (the
    remainder on SQLite, all of them elsewhere; ``copy`` as for ``run_tuples``). Every text of
    ``rows`` must have been refused for U+0000 where it entered: they are not checked again.
    """
    if not rows:
        return
    per = _rows_per_statement(conn, len(columns))
    if per == 0 or len(rows) < per:
        statement.run_tuples(conn, columns, rows, texts_checked=True, copy=copy)
        return
    start = 0
    for size in (per, per // SHORT_CHUNKS):
        if size < 2:
            break
        sql = _multi_row_sql(conn, table, columns, size)
        while len(rows) - start >= size:
            _execute(conn, sql, [value for row in rows[start : start + size] for value in row])
            start += size
    if start < len(rows):
        statement.run_tuples(conn, columns, rows[start:], texts_checked=True, copy=copy)


def _rows_per_statement(conn: sa.Connection, width: int) -> int:
    """Rows of ``width`` values per multi-row statement on this connection (0: not SQLite)."""
    if conn.dialect.name != "sqlite" or not width:
        return 0
    driver = conn.connection.driver_connection
    assert driver is not None
    # a build of SQLite may allow fewer bound values than the usual 32,766
    return min(ROWS_PER_STATEMENT, int(driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)) // width)


def _multi_row_sql(conn: sa.Connection, table: sa.Table, columns: tuple[str, ...], per: int) -> str:
    key = (table.name, columns, per)
    found = _SQL.get(key)
    if found is None:
        quote = conn.dialect.identifier_preparer.quote
        found = _SQL[key] = (
            f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) VALUES "
            + values_list(len(columns), per)
        )
    return found


def keyed_rows(
    conn: sa.Connection, sql: Callable[[int], str], keys: Sequence[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """The rows ``sql(count)`` finds for ``count`` keys at a time (SQLite only).

    ``sql(count)`` binds exactly ``count`` keys, in order (see :func:`values_list`); it is asked for
    :data:`KEYS_PER_STATEMENT` keys while at least half as many are left, then for
    :data:`KEYS_PER_SHORT_STATEMENT` at a time, the last chunk filled up with its last key: so only
    two texts are ever compiled, and a row may come twice.
    """
    found: list[tuple[Any, ...]] = []
    start = 0
    while start < len(keys):
        # half a long statement's keys or more: one more long one, else short ones (at most five)
        per = KEYS_PER_STATEMENT if 2 * (len(keys) - start) >= KEYS_PER_STATEMENT else KEYS_PER_SHORT_STATEMENT
        chunk = list(keys[start : start + per])
        start += per
        chunk += [chunk[-1]] * (per - len(chunk))
        found += _execute(conn, sql(per), [value for key in chunk for value in key]).fetchall()
    return found


def values_list(width: int, count: int) -> str:
    """``count`` rows of ``width`` placeholders, for a ``VALUES`` list: ``(?, ?), (?, ?)``."""
    return ", ".join(["(" + ", ".join("?" * width) + ")"] * count)


def _execute(conn: sa.Connection, sql: str, values: list[Any]) -> Any:
    """Run ``sql`` on the driver's connection of ``conn``'s transaction, telling listeners."""
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    if conn.engine.dispatch.before_cursor_execute:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, values, None, False)
    return cursor.execute(sql, values)
