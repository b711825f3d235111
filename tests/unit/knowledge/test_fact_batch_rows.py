"""``put_many``'s rows, written in one statement per table with ids known up front, are exactly the
rows of one ``put`` per transaction, and undoing the batch's run restores the state before it
(K-FACT, K-CHG, K-QUOTA).

Seeded random batches (``one`` and ``many`` predicates, repeated values, replacements inside the
batch, conflicts of the assistant with the user's values, duplicates of earlier facts) on two
stores of the same backend: one through ``put_many``, the other through ``facts.put`` one
transaction per item with the same run id. Facts, change records and touched objects must be
identical, ids included; then the run is reverted on the first store, and its current facts and
open conflicts must be those from before the batch.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa

import notochord
from notochord.db.schema import change_objects, changes, facts
from notochord.knowledge.quotas import DailyLimits, usage
from notochord.knowledge.writes import ASSISTANT, USER

PREDICATES = ["location.home.city", "identity.name", "pref.food.like", "contact.email"]
VALUES = ["tea", "coffee", "Paris", "Lyon", {"n": 1}, 3]


def _rows(space: notochord.Space) -> dict[str, list[tuple[Any, ...]]]:
    with space.core.store.read() as conn:
        return {
            name: [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()]
            for name, table in (("facts", facts), ("changes", changes), ("objects", change_objects))
        }


def _visible(space: notochord.Space, subjects: list[Any]) -> Any:
    current = [[(f.id, f.predicate, f.value, f.object) for f in space.user.facts.lookup(s)] for s in subjects]
    conflicts = [c.id for c in space.changes.list(status="conflict")]
    return current, conflicts


def _setup(space: notochord.Space, rng: random.Random) -> list[Any]:
    anna = space.user.entities.resolve(name="Anna", create=True)
    bob = space.user.entities.resolve(name="Bob", create=True)
    assert anna is not None and bob is not None
    subjects: list[Any] = ["self", anna.id, bob.id]
    for _ in range(rng.randint(0, 6)):
        space.user.facts.put(predicate=rng.choice(PREDICATES), value=rng.choice(VALUES), subject=rng.choice(subjects))
    return subjects


@pytest.mark.parametrize("seed", range(6))
def test_put_many_rows_equal_one_put_per_transaction_and_undo_restores_the_state(
    two: list[notochord.Space], seed: int
) -> None:
    """Same rows and ids as single puts; the run's undo brings the state back."""
    fast, plain = two
    subjects = _setup(fast, random.Random(seed))
    assert _setup(plain, random.Random(seed)) == subjects
    assert _rows(fast) == _rows(plain)
    rng = random.Random(seed * 7919)
    for round_ in range(3):
        actor = rng.choice([USER, ASSISTANT])
        limits = None if actor.is_user else DailyLimits()
        items = [
            {"subject": rng.choice(subjects), "predicate": rng.choice(PREDICATES), "value": rng.choice(VALUES)}
            for _ in range(rng.randint(1, 25))
        ]
        before = _visible(fast, subjects)
        run_id = f"run-{seed}-{round_}"
        batched = fast.core.facts.put_many(items, actor=actor, run_id=run_id, limits=limits).results
        single = [plain.core.facts.put(actor=actor, run_id=run_id, limits=limits, **item) for item in items]
        assert batched == single
        assert _rows(fast) == _rows(plain)
        with fast.core.store.read() as a, plain.core.store.read() as b:
            day = fast.core.store.today()
            assert usage(a, writer=str(actor), day=day) == usage(b, writer=str(actor), day=day)
        if any(r.change_id is not None for r in batched):
            fast.changes.revert(run_id=run_id)
            plain.changes.revert(run_id=run_id)
            assert _visible(fast, subjects) == before
            assert _rows(fast) == _rows(plain)
