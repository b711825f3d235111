"""What a batch of facts works out once for all its items stays exactly what each put would work
out on its own (K-FACT, K-ENT-12, K-ENT-13, K-CHG).

A batch looks the entities it names up in one go and checks the usual item's arguments without
the general call; neither may go stale or let through what a single put refuses: an entity merged,
created or deleted earlier in the same transaction is seen by the next batch, and every argument a
single put refuses is refused by the batch's check with the same error.
"""

from __future__ import annotations

from typing import Any

import pytest

from notochord import Space
from notochord.errors import KnowledgeError
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.fact_rows import MISSING, prepare_put, put_preparer
from notochord.knowledge.writes import ASSISTANT, USER, Actor


def _person(space: Space, name: str) -> int:
    found = space.user.entities.resolve(name=name, create=True)
    assert found is not None
    return found.id


def test_a_batch_after_a_merge_in_the_same_transaction_writes_on_the_kept_entity(space: Space) -> None:
    """K-ENT-12: the batch's look-ups of an entity are not kept past a merge made before it in the
    same transaction: the merged-away id now writes on the kept entity, and its earlier value is a
    duplicate there."""
    kept, merged = _person(space, "Bob"), _person(space, "Robert")
    with space.core.store.batch():
        [first] = space.user.facts.put_many(
            [{"predicate": "pref.food.like", "value": "tea", "subject": merged}]
        ).results
        space.user.entities.merge(keep=kept, merge=merged)
        again, soup = space.user.facts.put_many(
            [
                {"predicate": "pref.food.like", "value": "tea", "subject": merged},
                {"predicate": "pref.food.like", "value": "soup", "subject": merged},
            ]
        ).results
    assert (again.status, again.id) == ("duplicate", first.id)
    assert space.user.facts.get(soup.id).subject == kept
    assert sorted(f.value for f in space.user.facts.lookup(kept, "pref.food.like")) == ["soup", "tea"]


def test_a_batch_sees_an_entity_created_or_deleted_earlier_in_the_same_transaction(space: Space) -> None:
    """K-ENT-13: an entity created in the transaction is found by the next batch, and one deleted in
    it is not found (the item names its index), though the batch before had looked it up."""
    anna = _person(space, "Anna")
    with pytest.raises(BatchItemError) as refused, space.core.store.batch():
        space.user.facts.put_many([{"predicate": "pref.food.like", "value": "tea", "subject": anna}])
        carol = _person(space, "Carol")
        [late] = space.user.facts.put_many([{"predicate": "pref.food.like", "value": "tea", "subject": carol}]).results
        assert late.status == "applied"
        space.user.entities.delete(anna)
        space.user.facts.put_many(
            [
                {"predicate": "pref.food.like", "value": "soup", "subject": carol},
                {"predicate": "pref.food.like", "value": "soup", "subject": anna},
            ]
        )
    assert refused.value.index == 1
    assert space.user.facts.lookup(anna) == []


_HUGE = "x" * 70_000
_ITEMS: list[dict[str, Any]] = [
    {"predicate": "pref.food.like", "value": "tea"},
    {"predicate": "pref.food.like", "value": "小笼包 Zoë", "subject": 7},
    {"predicate": "pref.food.like", "value": {"k": ["ü", 1]}, "subject": "self"},
    {"predicate": "relation.friend", "object_id": 4},
    {"predicate": "relation.friend", "value": "met at work", "object_id": 4},
    {"predicate": "pref.food.like", "value": None},
    {"predicate": "pref.food.like", "value": True, "subject": True},
    {"predicate": "pref.food.like", "value": 3.5, "subject": 2.0},
    {"predicate": "pref.food.like"},
    {"value": "tea"},
    {"predicate": None, "value": "tea"},
    {"predicate": "pref.food.like", "value": "nul\x00"},
    {"predicate": "pref.food.like", "value": ["lone \ud83d"]},
    {"predicate": "pref.food.like", "value": _HUGE},
    {"predicate": "pref.food.like", "value": float("nan")},
    {"predicate": "pref.food.like", "value": {1, 2}},
    {"predicate": "relation.friend", "object_id": "4"},
    {"predicate": "relation.friend", "object_id": 4.0},
    {"predicate": "pref.food.like", "value": "tea", "pin": False},
    {"predicate": "pref.food.like", "value": "tea", "source_ref": "msg 1", "origin": "me"},
    {"hint": "favourite tea", "value": "tea"},
    {"predicate": "pref.food.like", "value": MISSING, "object_id": 4},
]


def _outcome(call: Any) -> Any:
    try:
        return call()
    except KnowledgeError as error:
        return type(error), error.message


@pytest.mark.parametrize("actor", [USER, ASSISTANT, Actor.gem("tea-gem")], ids=str)
@pytest.mark.parametrize("item", _ITEMS, ids=range(len(_ITEMS)))
def test_the_batch_check_of_an_item_equals_a_single_puts(actor: Actor, item: dict[str, Any]) -> None:
    """K-FACT: the arguments (defaults filled in) or the refusal of each shape of item, usual or
    not, are exactly those of ``prepare_put``."""
    assert _outcome(lambda: put_preparer(actor)(item)) == _outcome(lambda: prepare_put(actor, **item))
