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
    """Every transaction begun and every statement sent on ``engine`` (but those starting with ``ignore``)."""
    walk = Walk()
    skipped = tuple(ignore)

    def on_begin(_conn: sa.Connection) -> None:
        walk.transactions += 1

    def on_statement(_conn: sa.Connection, _cursor: Any, statement: str, *_rest: Any) -> None:
        if not (skipped and statement.startswith(skipped)):
            walk.statements.append(statement)

    sa.event.listen(engine, "begin", on_begin)
    sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield walk
    finally:
        sa.event.remove(engine, "begin", on_begin)
        sa.event.remove(engine, "before_cursor_execute", on_statement)
