"""A gem's ``facts.put`` travels in one write transaction and a bounded number of statements; a
``facts.lookup`` in one read.

P-KVAL-09, OD-K07: the subject and predicate are resolved once, permission is
decided once inside the transaction that writes (the switches read there also give the quota), and
validation happens once, in the knowledge store. The walk is counted on the space's engine with
SQLAlchemy events: every transaction begun and every SQL statement sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from walk_harness import counted

from knowledge_gem import knowledge_gem
from notochord import KnowledgeValidationError, Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]

MAX_TRANSACTIONS = 2
"""At most two transactions for a gem's put; the walk takes one (resolution, decision, quota and
write together)."""
MAX_STATEMENTS = 16


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _knowledge(space: Space, root: Path) -> KnowledgeApi:
    return knowledge_gem(space, root, FOOD)


async def test_a_gem_put_takes_one_transaction_and_a_bounded_number_of_statements(space: Space, tmp_path: Path) -> None:
    """≤ 2 transactions (the goal; one is reached) and ≤ 16 statements for a
    put that adds a fact, after a first put has added the predicate to the vocabulary."""
    knowledge = _knowledge(space, tmp_path)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    with counted(space.core.store.engine) as walk:
        result = await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    assert result.status == "applied"
    assert walk.transactions <= MAX_TRANSACTIONS
    assert walk.transactions == 1, "\n".join(walk.statements)
    assert len(walk.statements) <= MAX_STATEMENTS, "\n".join(walk.statements)
    # the gem's switches are checked once, for the permission and the quota together: against their
    # version, unchanged since the first put, so they are not read again
    assert sum("gem_grants" in s for s in walk.statements) == 0


async def test_a_put_refused_by_validation_opens_no_transaction(space: Space, tmp_path: Path) -> None:
    """OD-K07: validation runs once, in the knowledge store, before any
    transaction; the gem API only passes its arguments through."""
    knowledge = _knowledge(space, tmp_path)
    with counted(space.core.store.engine) as walk, pytest.raises(KnowledgeValidationError, match="must be a string"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew", description=7)
    assert walk.transactions == 0


async def test_a_gem_lookup_takes_one_read_transaction(space: Space, tmp_path: Path) -> None:
    """The subject is resolved once and the switches are read in the snapshot of
    the facts, so a lookup is one read transaction that reads the switches once (the first time
    they are seen under their version)."""
    knowledge = _knowledge(space, tmp_path)
    space.user.facts.put(predicate="pref.food.like", value="stew")
    with counted(space.core.store.engine) as walk:
        found = await knowledge.facts.lookup("self", "pref.food")
    assert [f.value for f in found] == ["stew"]
    assert walk.transactions == 1, "\n".join(walk.statements)
    assert sum("gem_grants" in s for s in walk.statements) == 1
