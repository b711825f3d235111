"""``1`` and ``1.0`` are two fact values, on every backend and in every write path.

Values are equal when their canonical JSON is equal (OD-K17), and JSON spells the integer ``1`` and
the number ``1.0`` differently; so the second is a value of its own, not a ``duplicate``, in a single
put as in a batch, and a ``cardinality: one`` slot holding the user's ``1`` reports a conflict for
``1.0`` and a duplicate for ``1``. Each reads back as it was written. K-FACT-21, K-FACT-22, OD-K17.
"""

from __future__ import annotations

from notochord import Space


def test_a_batch_tells_one_from_one_point_zero_as_single_puts_do(space: Space) -> None:
    """K-FACT-21, OD-K17: the batch's duplicate check compares the same canonical JSON as a put."""
    outcome = space.as_assistant.facts.put_many([{"predicate": "x.count", "value": v} for v in (1, 1.0, 1, 1.0)])

    assert [r.status for r in outcome.results] == ["applied", "applied", "duplicate", "duplicate"]
    assert sorted(repr(f.value) for f in space.user.facts.lookup("self", "x.count")) == ["1", "1.0"]


def test_a_users_one_blocks_one_point_zero_and_is_restated_by_one(space: Space) -> None:
    """K-FACT-22, OD-K17: a different spelling of the number is a different value, so it conflicts."""
    said = space.user.facts.put(predicate="location.home.city", value=1)

    other = space.as_assistant.facts.put(predicate="location.home.city", value=1.0)
    same = space.as_assistant.facts.put(predicate="location.home.city", value=1)

    assert (other.status, same.status) == ("conflict", "duplicate")
    assert [repr(f.value) for f in space.user.facts.lookup("self", "location.home.city")] == ["1"]
    assert same.id == said.id
