"""Statements of the hot write path, compiled once per dialect and run with bound parameters.

On SQLite a Core statement executed through SQLAlchemy costs several times what SQLite takes to
run it (cache-key lookup, parameter processing, result set-up), and a fact write runs about six of
them. A :class:`Prepared` statement is compiled once per dialect and set of parameter names; on
SQLite it then runs on the driver's connection of the same transaction (same ``BEGIN IMMEDIATE``,
same rollback, driver errors translated by the transaction's ``storage_errors``). On any other
backend it runs through SQLAlchemy as before, so both stay one statement and one result.

Only statements without expanding (``IN``) parameters and whose columns need no type processing
(integers, text, booleans, nulls) are prepared this way.
"""

from __future__ import annotations

import operator
import threading
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.bulk import copy_rows
from notochord.knowledge.quotas import refuse_nul_in

__all__ = ["Prepared"]


class Prepared:
    """One statement, compiled lazily per parameter set, run natively on SQLite."""

    def __init__(self, statement: sa.Executable) -> None:
        self.statement = statement
        # a write's texts are checked before they are sent (see quotas.refuse_nul_in)
        self._writes = isinstance(statement, sa.Insert | sa.Update)
        # a plain INSERT of a table's columns: many rows of it may go as one COPY on PostgreSQL
        self._copies = (
            isinstance(statement, sa.Insert)
            and isinstance(getattr(statement, "table", None), sa.Table)
            and not getattr(statement, "_returning", ())
            and not getattr(statement, "_values", None)
        )
        self._table: str | None = getattr(getattr(statement, "table", None), "name", None)
        self._lock = threading.Lock()
        self._compiled: dict[tuple[str, ...], tuple[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]]] = {}
        self._row_type: Any = None
        self._positional: dict[tuple[str, ...], tuple[str, tuple[int, ...] | None]] = {}

    def _sqlite(
        self, conn: sa.Connection, names: tuple[str, ...]
    ) -> tuple[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]]:
        """The statement's SQL for the parameter names ``names`` and what turns parameters into its values."""
        found = self._compiled.get(names)
        if found is None:
            keys = frozenset(names)
            compiled = self.statement.compile(dialect=conn.dialect, column_keys=sorted(keys))  # type: ignore[attr-defined]
            order = tuple(compiled.positiontup or ())
            if compiled.post_compile_params or compiled.literal_execute_params:
                raise TypeError("a prepared statement cannot take expanding parameters")
            # the values written into the statement itself (``key == "…"``)
            fixed = {k: v for k, v in compiled.construct_params(_check=False).items() if k not in keys}
            found = (compiled.string, _values(order, fixed))
            with self._lock:
                self._compiled[names] = found
        return found

    def _checked(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if self._writes:
            refuse_nul_in(self._table, params)
        return dict(params)

    @staticmethod
    def _native(conn: sa.Connection) -> Any:
        return conn.dialect.name == "sqlite"

    def _cursor(self, conn: sa.Connection, params: Mapping[str, Any], *, texts_checked: bool = False) -> Any:
        if self._writes and not texts_checked:
            refuse_nul_in(self._table, params)
        sql, values = self._sqlite(conn, tuple(params))
        driver = conn.connection.driver_connection
        assert driver is not None
        if not conn.engine.dispatch.before_cursor_execute:
            return driver.execute(sql, values(params))
        # someone listens (statement counts, tracing): tell them, as SQLAlchemy would
        bound = values(params)
        cursor = driver.cursor()
        conn.dispatch.before_cursor_execute(conn, cursor, sql, bound, None, False)
        return cursor.execute(sql, bound)

    def rows(self, conn: sa.Connection, params: Mapping[str, Any]) -> list[Any]:
        """Every row, each with its columns as attributes."""
        if not self._native(conn):
            return list(conn.execute(self.statement, self._checked(params)).all())
        cursor = self._cursor(conn, params)
        row_type = self._row_type
        if row_type is None:
            row_type = self._row_type = namedtuple("Row", [d[0] for d in cursor.description])
        return [row_type(*r) for r in cursor.fetchall()]

    def first(self, conn: sa.Connection, params: Mapping[str, Any]) -> Any:
        found = self.rows(conn, params)
        return found[0] if found else None

    def scalar(self, conn: sa.Connection, params: Mapping[str, Any], *, texts_checked: bool = False) -> Any:
        """The first column of the first row (``None`` without one). ``texts_checked``: as for
        :meth:`run_tuples` (on SQLite; elsewhere the engine's hook checks every statement anyway)."""
        if not self._native(conn):
            return conn.execute(self.statement, self._checked(params)).scalar()
        row = self._cursor(conn, params, texts_checked=texts_checked).fetchone()
        return None if row is None else row[0]

    def run(self, conn: sa.Connection, params: Mapping[str, Any]) -> int:
        """Run a statement without rows; return how many rows it changed."""
        if not self._native(conn):
            return int(conn.execute(self.statement, self._checked(params)).rowcount)
        return int(self._cursor(conn, params).rowcount)

    def run_many(self, conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run a statement without rows once per parameter set (all sets have the same names)."""
        if not rows:
            return
        if self._writes:
            for row in rows:
                refuse_nul_in(self._table, row)
        if not self._native(conn):
            conn.execute(self.statement, [dict(r) for r in rows])
            return
        sql, value_of = self._sqlite(conn, tuple(rows[0]))
        driver = conn.connection.driver_connection
        assert driver is not None
        values = [value_of(r) for r in rows]
        cursor = driver.cursor()
        if conn.engine.dispatch.before_cursor_execute:
            conn.dispatch.before_cursor_execute(conn, cursor, sql, values, None, True)
        cursor.executemany(sql, values)

    def run_tuples(
        self,
        conn: sa.Connection,
        names: tuple[str, ...],
        rows: Sequence[tuple[Any, ...]],
        *,
        texts_checked: bool,
        copy: bool = False,
    ) -> None:
        """:meth:`run_many` with each parameter set a tuple of the values of ``names``, in that order.

        ``texts_checked``: the caller refused U+0000 in every text of ``rows`` already (a batch
        checks each text once, where it enters), so the rows are not checked again here.
        ``copy``: on PostgreSQL, send many rows of a plain ``INSERT`` as one ``COPY``.
        """
        if not rows:
            return
        if self._writes and not texts_checked:
            for row in rows:
                refuse_nul_in(self._table, dict(zip(names, row, strict=True)))
        if not self._native(conn):
            if copy and self._copies and len(rows) > 1 and conn.dialect.name == "postgresql":
                assert self._table is not None
                copy_rows(conn, self._table, names, rows)  # one COPY: one exchange for all the rows
            else:
                conn.execute(self.statement, [dict(zip(names, row, strict=True)) for row in rows])
            return
        found = self._positional.get(names)
        if found is None:
            sql, _ = self._sqlite(conn, names)
            compiled = self.statement.compile(dialect=conn.dialect, column_keys=sorted(names))  # type: ignore[attr-defined]
            order = tuple(compiled.positiontup or ())
            if set(order) != set(names):
                raise TypeError("a positional statement takes exactly the values of its names")
            moved = tuple(names.index(n) for n in order)
            found = (sql, None if moved == tuple(range(len(names))) else moved)
            with self._lock:
                self._positional[names] = found
        sql, permutation = found
        values: Sequence[tuple[Any, ...]] = (
            rows if permutation is None else [tuple(row[i] for i in permutation) for row in rows]
        )
        driver = conn.connection.driver_connection
        assert driver is not None
        cursor = driver.cursor()
        many = len(values) > 1  # one row: a plain execute costs less than setting up executemany
        if conn.engine.dispatch.before_cursor_execute:
            conn.dispatch.before_cursor_execute(conn, cursor, sql, values if many else values[0], None, many)
        if many:
            cursor.executemany(sql, values)
        else:
            cursor.execute(sql, values[0])


def _values(order: tuple[str, ...], fixed: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """What turns a statement's parameters into its positional values (``order``), filling in ``fixed``."""
    if not fixed:
        if len(order) == 1:
            only = order[0]
            return lambda params: (params[only],)
        if order:
            return operator.itemgetter(*order)
        return lambda _params: ()

    def with_fixed(params: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(params[n] if n in params else fixed[n] for n in order)

    return with_fixed
