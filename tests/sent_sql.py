"""The SQL an engine sends, as the tests count it.

Tests hold the store to its round trips by counting statements, never by timing them: a count is the
same on every machine and names the statement that should not have been sent. They are seen through
SQLAlchemy's ``before_cursor_execute``, which the statements the product runs on the driver's
connection (SQLite's writer, bulk rows) announce too, so those are counted as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa


@contextmanager
def statements_sent(engine: sa.Engine, *, containing: str | None = None, begins: bool = False) -> Iterator[list[str]]:
    """The SQL texts ``engine`` sends inside the block, in order (only those containing ``containing``
    when given; with ``begins``, a ``"BEGIN"`` entry for each transaction begun without a statement of
    its own).

    With ``begins``, the entries starting with ``BEGIN`` count the transactions alike on both backends:
    a SQLite transaction starts with the ``BEGIN`` or ``BEGIN IMMEDIATE`` the engine sends for it (kept
    whatever ``containing`` says), while PostgreSQL's driver begins implicitly, so there only
    SQLAlchemy's ``begin`` event tells of it. The listeners go when the block ends, also when it
    raises: one left on the engine would go on recording, and on SQLite keep the engine sending its
    ``BEGIN`` through SQLAlchemy, for everything that runs after the block."""
    sent: list[str] = []
    begins_by_statement = engine.dialect.name == "sqlite"

    def on_statement(_conn: sa.Connection, _cursor: Any, statement: str, *_rest: Any) -> None:
        if containing is None or containing in statement or (begins and statement.startswith("BEGIN")):
            sent.append(statement)

    def on_begin(_conn: sa.Connection) -> None:
        sent.append("BEGIN")

    listeners: list[tuple[str, Callable[..., None]]] = [("before_cursor_execute", on_statement)]
    if begins and not begins_by_statement:
        listeners.append(("begin", on_begin))
    for name, listener in listeners:
        sa.event.listen(engine, name, listener)
    try:
        yield sent
    finally:
        for name, listener in listeners:
            sa.event.remove(engine, name, listener)
