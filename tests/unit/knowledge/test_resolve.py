"""Settling conflicts through the host API (K-FACT-22, K-CHG-09, OD-K44)."""

from __future__ import annotations

import pytest

from notochord import KnowledgeNotFoundError, KnowledgeValidationError, RevertError, Space


def _conflict(space: Space, *, user: str = "Utrecht", proposed: str = "Amsterdam") -> int:
    space.user.facts.put(predicate="location.home.city", value=user)
    blocked = space.as_assistant.facts.put(predicate="location.home.city", value=proposed, source_ref="mail:42")
    assert blocked.status == "conflict" and blocked.change_id is not None
    return blocked.change_id


def _city(space: Space) -> list[str]:
    return [f.value for f in space.user.facts.lookup("self", "location.home.city")]


def test_taking_theirs_makes_the_proposal_the_users_own_value(space: Space) -> None:
    """The proposed value replaces the current one, said by the user from then on."""
    conflict = _conflict(space)
    outcome = space.changes.resolve(conflict, take="theirs")
    assert outcome.status == "took_theirs" and outcome.fact_id is not None
    [fact] = space.user.facts.lookup("self", "location.home.city")
    assert (fact.id, fact.value, fact.origin, fact.pinned, fact.source_ref) == (
        outcome.fact_id, "Amsterdam", "user", True, "mail:42",
    )  # fmt: skip
    assert space.changes.get(conflict).status == "reverted"
    resolution = space.changes.get(outcome.change_id)
    assert (resolution.op, resolution.actor, resolution.summary) == (
        "changes.resolve", "user", "took location.home.city = Amsterdam proposed by assistant",
    )  # fmt: skip
    assert space.changes.list(status="conflict") == []


def test_keeping_mine_closes_the_conflict_without_touching_the_value(space: Space) -> None:
    conflict = _conflict(space)
    outcome = space.changes.resolve(conflict, take="mine")
    assert (outcome.status, outcome.fact_id) == ("kept_mine", None)
    assert _city(space) == ["Utrecht"]
    assert space.changes.get(outcome.change_id).summary == (
        "kept location.home.city = Utrecht; declined Amsterdam from assistant"
    )
    assert space.changes.list(status="conflict") == []


@pytest.mark.parametrize("take", ["theirs", "mine"])
def test_reverting_a_resolution_restores_the_value_and_reopens_the_conflict(space: Space, take: str) -> None:
    """The resolution is its own undoable change."""
    conflict = _conflict(space)
    outcome = space.changes.resolve(conflict, take=take)
    assert space.changes.revert(outcome.change_id).count == 1
    assert _city(space) == ["Utrecht"]
    assert [c.id for c in space.changes.list(status="conflict")] == [conflict]
    again = space.changes.resolve(conflict, take="theirs")
    assert again.status == "took_theirs"
    assert _city(space) == ["Amsterdam"]


def test_the_users_value_cannot_be_undone_under_a_taken_proposal(space: Space) -> None:
    """Taking theirs replaced the user's value, so undoing that write waits."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    [first] = space.changes.list()
    conflict = space.as_assistant.facts.put(predicate="location.home.city", value="Amsterdam").change_id
    assert conflict is not None
    space.changes.resolve(conflict, take="theirs")
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(first.id)
    assert _city(space) == ["Amsterdam"]


def test_a_proposed_relation_is_taken_with_the_entity_it_points_at(space: Space) -> None:
    """An object-only proposal keeps its object when taken."""
    ann = space.user.entities.resolve(name="Ann", create=True)
    bea = space.user.entities.resolve(name="Bea", create=True)
    assert ann and bea
    space.user.facts.put(predicate="relation.spouse", object=ann.id)
    blocked = space.as_assistant.facts.put(predicate="relation.spouse", object=bea.id)
    assert blocked.change_id is not None
    space.changes.resolve(blocked.change_id, take="theirs")
    assert [f.object for f in space.user.facts.lookup("self", "relation.spouse")] == [bea.id]


def test_only_open_conflicts_with_a_known_choice_are_resolved(space: Space) -> None:
    """Clear errors, and nothing changes."""
    conflict = _conflict(space)
    [applied] = space.changes.list(status="applied")
    with pytest.raises(KnowledgeValidationError, match="take must be 'theirs' or 'mine'"):
        space.changes.resolve(conflict, take="both")
    with pytest.raises(KnowledgeValidationError, match="not an open conflict"):
        space.changes.resolve(applied.id, take="theirs")
    with pytest.raises(KnowledgeNotFoundError, match="no change"):
        space.changes.resolve(999, take="mine")
    space.changes.revert(conflict)  # dismissed
    with pytest.raises(KnowledgeValidationError, match="its status is reverted"):
        space.changes.resolve(conflict, take="theirs")
    assert _city(space) == ["Utrecht"]
    assert [c.op for c in space.changes.list()] == ["changes.revert", "facts.put", "facts.put"]
