"""A gem's ``facts.put`` travels in one write transaction and a bounded number of statements; a
``facts.lookup`` in one read.

Issue 13, item 3 (P-KVAL-09, OD-K07): the subject and predicate are resolved once, permission is
decided once inside the transaction that writes (the switches read there also give the quota), and
validation happens once, in the knowledge store. The walk is counted on the space's engine with
SQLAlchemy events: every transaction begun and every SQL statement sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from notochord import KnowledgeValidationError, Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]

MAX_TRANSACTIONS = 2
"""The goal of the issue; the walk now takes one (resolution, decision, quota and write together)."""
MAX_STATEMENTS = 16


@dataclass
class Walk:
    transactions: int = 0
    statements: list[str] = field(default_factory=list)


@contextmanager
def counted(engine: sa.Engine) -> Iterator[Walk]:
    walk = Walk()

    def on_begin(_conn: sa.Connection) -> None:
        walk.transactions += 1

    def on_statement(_conn: sa.Connection, _cursor: Any, statement: str, *_rest: Any) -> None:
        walk.statements.append(statement)

    sa.event.listen(engine, "begin", on_begin)
    sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield walk
    finally:
        sa.event.remove(engine, "begin", on_begin)
        sa.event.remove(engine, "before_cursor_execute", on_statement)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _knowledge(space: Space, root: Path) -> KnowledgeApi:
    folder = root / "recipes"
    (folder / "tools").mkdir(parents=True)
    manifest = {
        "id": "recipes",
        "name": "recipes",
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": FOOD}},
        "tools": [{"name": "main", "entry": "tools/main.py", "permissions": {"knowledge": True}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "tools" / "main.py").write_text("async def run(input, ctx):\n    return None\n", encoding="utf-8")
    space.gems.install(folder)
    space.gems.set_permissions("recipes", FOOD, True)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    return knowledge


async def test_a_gem_put_takes_one_transaction_and_a_bounded_number_of_statements(space: Space, tmp_path: Path) -> None:
    """Issue 13, item 3: ≤ 2 transactions (the goal; one is reached) and ≤ 16 statements for a
    put that adds a fact, after a first put has added the predicate to the vocabulary."""
    knowledge = _knowledge(space, tmp_path)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    with counted(space.core.store.engine) as walk:
        result = await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    assert result.status == "applied"
    assert walk.transactions <= MAX_TRANSACTIONS
    assert walk.transactions == 1, "\n".join(walk.statements)
    assert len(walk.statements) <= MAX_STATEMENTS, "\n".join(walk.statements)
    # the gem's switches are read once, for the permission and the quota together
    assert sum("gem_grants" in s for s in walk.statements) == 1


async def test_a_put_refused_by_validation_opens_no_transaction(space: Space, tmp_path: Path) -> None:
    """Issue 13, item 3 (OD-K07): validation runs once, in the knowledge store, before any
    transaction; the gem API only passes its arguments through."""
    knowledge = _knowledge(space, tmp_path)
    with counted(space.core.store.engine) as walk, pytest.raises(KnowledgeValidationError, match="must be a string"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew", description=7)
    assert walk.transactions == 0


async def test_a_gem_lookup_takes_one_read_transaction(space: Space, tmp_path: Path) -> None:
    """Issue 13, item 3: the subject is resolved once and the switches are read in the snapshot of
    the facts, so a lookup is one read transaction that reads the switches once."""
    knowledge = _knowledge(space, tmp_path)
    space.user.facts.put(predicate="pref.food.like", value="stew")
    with counted(space.core.store.engine) as walk:
        found = await knowledge.facts.lookup("self", "pref.food")
    assert [f.value for f in found] == ["stew"]
    assert walk.transactions == 1, "\n".join(walk.statements)
    assert sum("gem_grants" in s for s in walk.statements) == 1
