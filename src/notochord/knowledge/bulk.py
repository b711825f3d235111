"""Many rows of one table written by one statement, on either backend.

A batch of documents writes thousands of rows (chunks, mentions); sending them one statement, or
one executemany parameter set, per row costs more than the database takes to store them:

- **SQLite**: the driver's own ``executemany`` of one compiled ``INSERT`` (no per-row parameter
  processing by SQLAlchemy), all in the caller's transaction, in memory, no round trip.
- **PostgreSQL**: one ``INSERT … SELECT * FROM unnest(…)`` with one array per column, so the whole
  set is one message and one round trip, whatever the number of rows.

Rows are inserted in the order given, so ids the table assigns ascend with it, as they would
one insert at a time. Tables and columns come from the schema, never from callers' data.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.knowledge.prepared import Prepared

__all__ = ["insert_rows"]

_PREPARED: dict[str, Prepared] = {}
_UNNEST: dict[tuple[str, tuple[str, ...]], str] = {}
_LOCK = threading.Lock()


def _prepared(table: sa.Table) -> Prepared:
    with _LOCK:
        found = _PREPARED.get(table.name)
        if found is None:
            found = _PREPARED[table.name] = Prepared(sa.insert(table))
        return found


def _unnest_sql(conn: sa.Connection, table: sa.Table, names: tuple[str, ...]) -> str:
    key = (table.name, names)
    with _LOCK:
        found = _UNNEST.get(key)
    if found is None:
        quote = conn.dialect.identifier_preparer.quote
        columns = ", ".join(quote(n) for n in names)
        arrays = ", ".join(
            f"CAST(:c{i} AS {table.c[n].type.compile(dialect=conn.dialect)}[])" for i, n in enumerate(names)
        )
        found = f"INSERT INTO {quote(table.name)} ({columns}) SELECT * FROM unnest({arrays})"
        with _LOCK:
            _UNNEST[key] = found
    return found


def insert_rows(conn: sa.Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (mappings with the same column names) into ``table`` in ``conn``'s transaction."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        _prepared(table).run_many(conn, rows)
        return
    names = tuple(rows[0])
    arrays = {f"c{i}": [row[n] for row in rows] for i, n in enumerate(names)}
    conn.execute(sa.text(_unnest_sql(conn, table, names)), arrays)
