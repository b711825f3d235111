"""Helpers of the walk contracts: count a space's transactions and statements, install a knowledge gem."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa


@dataclass
class Walk:
    transactions: int = 0
    statements: list[str] = field(default_factory=list)

    def count(self, needle: str) -> int:
        return sum(needle in s for s in self.statements)


@contextmanager
def counted(engine: sa.Engine, *, ignore: Sequence[str] = ()) -> Iterator[Walk]:
    """Every transaction begun and every statement sent on ``engine`` (but those starting with ``ignore``).

    On SQLite a transaction is counted by the ``BEGIN`` it sends (the writer connection begins its
    transactions on the driver's connection, without SQLAlchemy's ``begin`` event); elsewhere by
    SQLAlchemy's ``begin`` event (the driver begins implicitly)."""
    walk = Walk()
    skipped = tuple(ignore)
    by_statement = engine.dialect.name == "sqlite"

    def on_begin(_conn: sa.Connection) -> None:
        if not by_statement:
            walk.transactions += 1

    def on_statement(_conn: sa.Connection, _cursor: Any, statement: str, *_rest: Any) -> None:
        if by_statement and statement.startswith("BEGIN"):
            walk.transactions += 1
        if not (skipped and statement.startswith(skipped)):
            walk.statements.append(statement)

    sa.event.listen(engine, "begin", on_begin)
    sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield walk
    finally:
        sa.event.remove(engine, "begin", on_begin)
        sa.event.remove(engine, "before_cursor_execute", on_statement)
