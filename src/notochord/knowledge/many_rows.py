"""Many rows in few statements on SQLite: a batch's new rows, and the stored rows of its keys.

On SQLite, ``executemany`` of a one-row ``INSERT`` runs the statement once per row, and each run
opens the table's and every index's cursor anew; a multi-row ``INSERT … VALUES (…), (…), …`` opens
them once for all its rows, which halves the cost of a row of a table with several indexes. Rows
fewer than :data:`ROWS_PER_STATEMENT` go in one ``executemany`` as before; more go in statements of
that many rows, then of a quarter as many, always with the same two texts, so the driver compiles
each once per connection and keeps it (compiling one costs about as much as writing its rows; the
shared columns below add two more); the last few go in one ``executemany``: a statement of their
exact count would be compiled anew.

Most columns of a batch's rows hold one value for the whole batch (its writer, its time, its run),
and binding a value costs the driver and SQLite about as much as storing it: where the caller names
such columns and a statement's rows all agree on them, the statement binds them once and selects
the rows' own values from a ``VALUES`` list (a quarter fewer instructions a change row). A
statement whose rows differ there binds every value, as above.

Reading the rows of many keys (:func:`keyed_rows`) takes the keys as the rows of a ``VALUES`` list
in the statement the same way, in chunks of two fixed sizes, the last one filled up by repeating its
last key (the caller drops the rows found twice): bound values cost SQLite less than taking a JSON
text of the keys apart.

On any other backend the new rows go through
:meth:`~notochord.knowledge.prepared.Prepared.run_tuples` unchanged (one ``COPY`` on PostgreSQL).
Statement listeners (counts, tracing) are told of every statement, as SQLAlchemy would tell them.
"""

from __future__ import annotations

import operator
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
_SHARED_SQL: dict[tuple[str, tuple[str, ...], int, frozenset[str]], str] = {}


def insert_rows(
    conn: sa.Connection,
    statement: Prepared,
    table: sa.Table,
    columns: tuple[str, ...],
    rows: Sequence[tuple[Any, ...]],
    *,
    copy: bool = False,
    shared: frozenset[str] = frozenset(),
) -> None:
    """Insert ``rows`` into ``table``: each a tuple of the values of ``columns``, in that order.

    ``statement`` is the plain ``INSERT`` of ``table`` the rows would otherwise go through (the
    remainder on SQLite, all of them elsewhere; ``copy`` as for ``run_tuples``). Every text of
    ``rows`` must have been refused for U+0000 where it entered: they are not checked again.

    ``shared`` names columns that usually hold one value for every row of a batch (its writer,
    its time, its run), each a text or null: a statement whose rows all agree on them binds those
    values once instead of once a row (see :func:`_shared_row_sql`).
    """
    if not rows:
        return
    per = _rows_per_statement(conn, len(columns))
    if per == 0 or len(rows) < per:
        statement.run_tuples(conn, columns, rows, texts_checked=True, copy=copy)
        return
    alike = _SharedColumns.of(columns, shared)
    start = 0
    for size in (per, per // SHORT_CHUNKS):
        if size < 2:
            break
        sql = _multi_row_sql(conn, table, columns, size)
        while len(rows) - start >= size:
            chunk = rows[start : start + size]
            if alike is not None and alike.agree(chunk):
                _execute(conn, _shared_row_sql(conn, table, columns, shared, size), alike.values(chunk))
            else:
                _execute(conn, sql, [value for row in chunk for value in row])
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


class _SharedColumns:
    """Which values of ``columns`` a statement of :func:`_shared_row_sql` binds once, and which per row."""

    def __init__(self, shared: Sequence[int], varying: Sequence[int]) -> None:
        self._shared = _getter(shared)
        self._varying = _getter(varying)

    @classmethod
    def of(cls, columns: tuple[str, ...], shared: frozenset[str]) -> _SharedColumns | None:
        """``None`` unless some of ``columns`` are ``shared`` and some are not."""
        alike = [i for i, c in enumerate(columns) if c in shared]
        varying = [i for i, c in enumerate(columns) if c not in shared]
        return cls(alike, varying) if alike and varying else None

    def agree(self, chunk: Sequence[tuple[Any, ...]]) -> bool:
        # the shared columns hold texts or nulls, so equal values are the same value of the same type
        keys = list(map(self._shared, chunk))
        return keys.count(keys[0]) == len(keys)

    def values(self, chunk: Sequence[tuple[Any, ...]]) -> list[Any]:
        get = self._varying
        values = list(self._shared(chunk[0]))
        values += [value for row in chunk for value in get(row)]
        return values


def _getter(indexes: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """The values of a row at ``indexes``, always as a tuple."""
    if len(indexes) == 1:
        only = indexes[0]
        return lambda row: (row[only],)
    return operator.itemgetter(*indexes)


def _shared_row_sql(
    conn: sa.Connection, table: sa.Table, columns: tuple[str, ...], shared: frozenset[str], per: int
) -> str:
    """A multi-row ``INSERT`` of ``per`` rows binding the ``shared`` columns' values once: the rows'
    own values are a ``VALUES`` list it selects from (binding a value costs more than SQLite's reading
    it back from that list)."""
    key = (table.name, columns, per, shared)
    found = _SHARED_SQL.get(key)
    if found is None:
        quote = conn.dialect.identifier_preparer.quote
        varying = [c for c in columns if c not in shared]
        picked = {c: f"column{varying.index(c) + 1}" for c in varying}
        # the bound values come in the order of the text: the shared ones (in column order) first
        selected = ", ".join(picked.get(c, "?") for c in columns)
        found = _SHARED_SQL[key] = (
            f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
            f"SELECT {selected} FROM (VALUES {values_list(len(varying), per)})"
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
