"""The batch writes and the lookups travel in one transaction and a bounded number of statements.

K-FACT, K-DOC, K-CHG: ``put_many`` reads the
current facts once per batch and writes its facts, changes, objects and expiries in one statement
each; ``upsert_many`` is one transaction; a fact
write about a known entity asks nothing about the entity or the vocabulary beyond one read of
their versions; a gem's lookup is one read with one read of its switches. Counted on the space's
engine with SQLAlchemy events (statements that bypass SQLAlchemy on SQLite still announce
themselves to ``before_cursor_execute``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from walk_harness import counted

from knowledge_gem import knowledge_gem
from notochord import Space

pytestmark = pytest.mark.anyio


# the write lock's own statements are not the walk's
LOCKING = ("BEGIN", "SELECT pg_advisory_xact_lock", "SET TRANSACTION")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _recorded(change_id: int | None) -> int:
    """The id of the change a write recorded (every write here records one)."""
    assert change_id is not None
    return change_id


def test_put_many_writes_each_table_in_one_statement(space: Space) -> None:
    """100 facts (``many`` and ``one`` values, replacements) in one transaction
    of a constant number of statements: the current facts read once, then (ids known up front, on
    SQLite) the facts, the changes, the touched objects and the expiries in one statement each."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="pref.food.like", value="warm-up", subject=anna.id)
    items: list[dict[str, Any]] = [
        {"predicate": "pref.food.like", "value": f"dish {n}", "subject": anna.id} for n in range(90)
    ]
    items += [{"predicate": "location.home.city", "value": f"city {n}"} for n in range(10)]
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        outcome = space.user.facts.put_many(items)
    assert [r.status for r in outcome.results] == ["applied"] * 100
    assert walk.transactions == 1
    assert walk.count("INSERT INTO facts") == 1, "the 100 facts go in one statement"
    assert walk.count("INSERT INTO changes") == 1, "the 100 changes go in one statement"
    assert walk.count("INSERT INTO change_objects") == 1, "the objects of all changes go in one statement"
    assert walk.count("UPDATE facts") == 1, "the nine replaced cities expire in one statement"
    assert len(walk.statements) <= 16, "\n".join(walk.statements)
    changes = space.changes.list(run_id=outcome.run_id)
    assert len(changes) == 100
    assert sorted(c.id for c in changes) == sorted(_recorded(r.change_id) for r in outcome.results)


def test_a_single_put_about_a_known_entity_reads_only_the_data_versions(space: Space) -> None:
    """The entity and the predicate of a second write come from caches keyed by
    the data versions: the write reads the versions, its slot, and writes fact, change and object."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="pref.food.like", value="warm-up", subject=anna.id)
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        assert space.user.facts.put(predicate="pref.food.like", value="tea", subject=anna.id).status == "applied"
    assert walk.transactions == 1
    assert walk.count("FROM entities") == 0, "\n".join(walk.statements)
    assert walk.count("FROM predicates") == 0, "\n".join(walk.statements)
    assert len(walk.statements) == 5, "\n".join(walk.statements)


def test_upsert_many_is_one_transaction(space: Space) -> None:
    """20 documents, one transaction, each with its own change record (the 20
    records go in one statement)."""
    collection = space.user.collections.create("notes")
    items = [
        {"collection": collection.id, "title": f"note {n}", "body": f"Anna met Bob on day {n}."} for n in range(20)
    ]
    space.user.entities.resolve(name="Anna", create=True)
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        outcome = space.user.documents.upsert_many(items)
    assert [r.status for r in outcome.results] == ["created"] * 20
    assert walk.transactions == 1
    assert walk.count("INSERT INTO changes") == 1
    recorded = {c.id: c for c in space.changes.list(limit=20)}
    assert sorted(recorded) == sorted(_recorded(r.change_id) for r in outcome.results)
    assert all(recorded[_recorded(r.change_id)].target_id == r.id for r in outcome.results)


async def test_a_gem_lookup_reads_the_facts_and_the_switches_once(space: Space, tmp_path: Path) -> None:
    """A gem's lookup is one read transaction: the versions, the facts (ranges in
    the SQL) and the gem's switches, once each; switches unchanged since the last call are known
    from their version alone, without reading ``gem_grants``."""
    knowledge = knowledge_gem(space, tmp_path, ["facts.read:self:pref.food.*"])
    space.user.facts.put(predicate="pref.food.like", value="stew")
    await knowledge.facts.lookup("self", "pref.food")
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        found = await knowledge.facts.lookup("self", "pref.food")
    assert [f.value for f in found] == ["stew"]
    assert walk.transactions == 1
    assert walk.count("gem_grants") == 0
    assert len(walk.statements) <= 3, "\n".join(walk.statements)
