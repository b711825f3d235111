"""``put_many`` decides every item exactly as a loop of single puts in one transaction would
(and the write targets; K-FACT, K-CHG, K-QUOTA).

The batch path reads the current facts once per batch and writes change objects and expiries in
one statement each; these tests replay seeded random sequences of batches — ``one`` and ``many``
predicates, repeated values, a merged subject, new predicates, the user and the assistant (whose
``one`` values conflict with the user's) — interleaved with retracts and reverts by change and by
run, on two stores: one through ``put_many``, the other through ``put`` per item inside
``Store.batch`` (the single-put path). Every stored fact, change record, touched object, result
and lookup must be identical, ids included.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import change_objects, changes, facts, predicates
from notochord.errors import KnowledgeError
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.quotas import DailyLimits
from notochord.knowledge.writes import ASSISTANT, USER, Actor
from notochord.settings import Settings

PREDICATES = ["location.home.city", "identity.name", "pref.food.like", "contact.email", "x.batch.test"]
VALUES = ["tea", "coffee", "Paris", "Lyon", {"n": 1}, 3]


@pytest.fixture
def two(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[list[Any]]:
    opened = []
    with notochord.open(
        tmp_path / "a",
        Settings(data_dir=tmp_path / "a", index_in_background=False, database_url=new_database_url()),
        clock=clock,
        embedder=None,
    ) as first:
        opened.append(first.personal)
        with notochord.open(
            tmp_path / "b",
            Settings(data_dir=tmp_path / "b", index_in_background=False, database_url=new_database_url()),
            clock=clock,
            embedder=None,
        ) as second:
            opened.append(second.personal)
            yield opened


def _people(space: notochord.Space) -> list[Any]:
    anna = space.user.entities.resolve(name="Anna", create=True)
    bob = space.user.entities.resolve(name="Bob", create=True)
    robert = space.user.entities.resolve(name="Robert", create=True)
    assert anna is not None and bob is not None and robert is not None
    space.user.facts.put(predicate="pref.food.like", value="tea", subject=robert.id)
    space.user.facts.put(predicate="location.home.city", value="Lyon", subject=robert.id)
    space.core.entities.merge(actor=USER, keep=bob.id, merge=robert.id)
    return ["self", anna.id, bob.id, robert.id]


def _items(rng: random.Random, subjects: list[Any]) -> list[dict[str, Any]]:
    items = []
    for _ in range(rng.randint(1, 12)):
        item: dict[str, Any] = {
            "subject": rng.choice(subjects),
            "predicate": rng.choice(PREDICATES),
            "value": rng.choice(VALUES),
        }
        if rng.random() < 0.2:
            item["object_id"] = rng.choice(subjects[1:])
        items.append(item)
    return items


def _one_by_one(space: notochord.Space, items: list[dict[str, Any]], actor: Actor, run_id: str) -> list[Any]:
    core = space.core
    limits = None if actor.is_user else DailyLimits()
    results = []
    with core.store.batch():
        for index, item in enumerate(items):
            try:
                results.append(core.facts.put(actor=actor, run_id=run_id, limits=limits, **item))
            except KnowledgeError as error:
                raise BatchItemError(index, error.message) from error
    return results


def _state(space: notochord.Space, subjects: list[Any]) -> dict[str, Any]:
    with space.core.store.read() as conn:
        tables: dict[str, list[object]] = {
            name: [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()]
            for name, table in (("facts", facts), ("changes", changes), ("objects", change_objects))
        }
        tables["predicates"] = [
            tuple(r) for r in conn.execute(sa.select(predicates.c.name, predicates.c.cardinality).order_by("name"))
        ]
    tables["lookups"] = [space.user.facts.lookup(s) for s in subjects]
    return tables


def _step(space: notochord.Space, rng: random.Random, step: int, subjects: list[Any], *, batched: bool) -> Any:
    kind = rng.random()
    if kind < 0.15:
        current = space.user.facts.lookup(rng.choice(subjects))
        if current:
            return space.user.facts.retract(rng.choice(current).id)
        return None
    if kind < 0.3:
        with space.core.store.read() as conn:
            ids = [r.id for r in conn.execute(sa.select(changes.c.id).where(changes.c.status == "applied"))]
        try:
            if rng.random() < 0.5 and ids:
                return space.changes.revert(change_id=rng.choice(ids))
            return space.changes.revert(run_id=f"run-{rng.randrange(step + 1)}")
        except KnowledgeError as error:
            return type(error).__name__
    actor = rng.choice([USER, ASSISTANT])
    items = _items(rng, subjects)
    run_id = f"run-{step}"
    try:
        if batched:
            limits = None if actor.is_user else DailyLimits()
            return space.core.facts.put_many(items, actor=actor, run_id=run_id, limits=limits).results
        return _one_by_one(space, items, actor, run_id)
    except BatchItemError as error:
        return ("refused", error.index)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_put_many_stores_exactly_what_single_puts_store(two: list[notochord.Space], seed: int) -> None:
    """The batch path and the single-put path leave identical rows behind."""
    fast, plain = two
    subjects = _people(fast)
    assert _people(plain) == subjects
    rng_fast, rng_plain = random.Random(seed), random.Random(seed)
    for step in range(14):
        got = _step(fast, rng_fast, step, subjects, batched=True)
        want = _step(plain, rng_plain, step, subjects, batched=False)
        assert got == want, f"step {step}"
        assert _state(fast, subjects) == _state(plain, subjects), f"step {step}"


def test_a_batch_sees_its_own_earlier_items(space: notochord.Space) -> None:
    """Inside one batch a repeated value is a duplicate of the item before it, and
    a second ``one`` value replaces the first, each its own change."""
    outcome = space.user.facts.put_many(
        [
            {"predicate": "pref.food.like", "value": "tea"},
            {"predicate": "pref.food.like", "value": "tea"},
            {"predicate": "location.home.city", "value": "Paris"},
            {"predicate": "location.home.city", "value": "Lyon"},
        ]
    )
    first, again, paris, lyon = outcome.results
    assert (first.status, again.status, again.id) == ("applied", "duplicate", first.id)
    assert (paris.status, lyon.status) == ("applied", "applied")
    assert [f.value for f in space.user.facts.lookup("self", "location")] == ["Lyon"]
    space.changes.revert(change_id=lyon.change_id)
    assert [f.value for f in space.user.facts.lookup("self", "location")] == ["Paris"]
