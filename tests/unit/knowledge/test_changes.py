"""The change log and undo (K-CHG, OD-K43, OD-K44) through the host API."""

from __future__ import annotations

from datetime import timedelta

import pytest

from notochord import KnowledgeNotFoundError, KnowledgeValidationError, RevertError, Space
from notochord.clock import FixedClock


def test_every_write_is_recorded_with_its_actor_op_and_summary(space: Space) -> None:
    """K-CHG-01, K-CHG-06."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht", run_id="setup")
    space.as_assistant.facts.put(predicate="work.company", value="Acme")
    latest, first = space.changes.list()
    assert (latest.actor, latest.op, latest.summary, latest.status) == (
        "assistant", "facts.put", "work.company = Acme", "applied",
    )  # fmt: skip
    assert (first.actor, first.run_id, first.created_at) == ("user", "setup", "2026-09-29T08:00:00.000Z")


def test_list_filters_by_since_status_run_and_actor(space: Space, clock: FixedClock) -> None:
    """K-CHG-02, OD-K21: since is inclusive and a date means local midnight."""
    space.as_assistant.facts.put(predicate="work.title", value="old")
    # 2026-09-29 23:30 UTC is already 2026-09-30 in Amsterdam
    clock.advance(timedelta(hours=15, minutes=30))
    space.user.facts.put(predicate="work.title", value="new", run_id="r1")
    assert [c.summary for c in space.changes.list(since="2026-09-30")] == ["work.title = new (replaced 1)"]
    assert len(space.changes.list(since="2026-09-29")) == 2
    assert [c.actor for c in space.changes.list(actor="assistant")] == ["assistant"]
    assert [c.run_id for c in space.changes.list(run_id="r1")] == ["r1"]
    with pytest.raises(KnowledgeValidationError, match="not a date"):
        space.changes.list(since="yesterday")
    with pytest.raises(KnowledgeValidationError, match="status"):
        space.changes.list(status="done")


def test_reverting_a_put_restores_the_value_it_replaced(space: Space) -> None:
    """K-CHG-03, OD-K44."""
    space.as_assistant.facts.put(predicate="work.company", value="A")
    b = space.as_assistant.facts.put(predicate="work.company", value="B")
    assert b.change_id is not None
    result = space.changes.revert(b.change_id)
    assert (result.status, result.count) == ("reverted", 1)
    assert [f.value for f in space.user.facts.lookup("self", "work")] == ["A"]
    assert space.changes.revert(b.change_id).status == "already_reverted"
    assert space.changes.get(b.change_id).status == "reverted"


def test_reverting_a_retract_makes_the_fact_current_again(space: Space) -> None:
    fact = space.user.facts.put(predicate="pref.food.dislike", value="cilantro")
    retraction = space.user.facts.retract(fact.id)
    assert retraction.change_id is not None
    space.changes.revert(retraction.change_id)
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["cilantro"]


def test_reverting_a_run_undoes_all_its_changes_newest_first(space: Space) -> None:
    """K-CHG-03, K-FACT-17: a whole batch comes back out together."""
    space.user.facts.put(predicate="work.company", value="Before")
    for value in ("A", "B", "C"):
        space.as_assistant.facts.put(predicate="work.company", value=value, run_id="nightly-2026-09-29")
    space.as_assistant.facts.put(predicate="pref.food.like", value="tea", run_id="nightly-2026-09-29")
    result = space.changes.revert(run_id="nightly-2026-09-29")
    # the user's value turned A, B and C into conflicts: they are dismissed with the applied write
    assert (result.status, result.count) == ("reverted", 4)
    assert [f.value for f in space.user.facts.lookup("self", "work")] == ["Before"]
    assert space.user.facts.lookup("self", "pref") == []


def test_run_revert_restores_the_state_before_the_run(space: Space) -> None:
    space.as_assistant.facts.put(predicate="work.company", value="Before")
    for value in ("A", "B", "C"):
        space.as_assistant.facts.put(predicate="work.company", value=value, run_id="r")
    assert space.changes.revert(run_id="r").count == 3
    assert [f.value for f in space.user.facts.lookup("self", "work")] == ["Before"]


def test_revert_is_refused_as_superseded_when_another_writer_changed_the_object_since(space: Space) -> None:
    """OD-K44: undo never overwrites a later edit by someone else."""
    put = space.as_assistant.facts.put(predicate="pref.food.like", value="tea")
    space.user.facts.retract(put.id)
    assert put.change_id is not None
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(put.change_id)
    assert space.changes.get(put.change_id).status == "applied"


def test_a_refused_run_revert_reverts_nothing(space: Space) -> None:
    """All of a run or none of it."""
    keep = space.as_assistant.facts.put(predicate="pref.food.like", value="tea", run_id="r")
    space.as_assistant.facts.put(predicate="pref.food.like", value="coffee", run_id="r")
    space.user.facts.retract(keep.id)
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(run_id="r")
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["coffee"]


def test_reverting_a_conflict_dismisses_it(space: Space) -> None:
    """OD-K44."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    conflict = space.as_assistant.facts.put(predicate="location.home.city", value="Amsterdam")
    assert conflict.change_id is not None
    space.changes.revert(conflict.change_id)
    assert space.changes.list(status="conflict") == []
    assert [f.value for f in space.user.facts.lookup("self", "location")] == ["Utrecht"]


def test_entity_changes_are_revertible(space: Space) -> None:
    """K-CHG-08: create, identifiers, merge and delete all undo."""
    a = space.user.entities.resolve(email="a@x.nl", name="A", create=True)
    b = space.user.entities.resolve(email="b@x.nl", name="B", create=True)
    assert a and b
    merge_change = space.user.entities.merge(keep=a.id, merge=b.id)
    space.changes.revert(merge_change)
    assert space.user.entities.get(b.id).id == b.id
    delete_change = space.user.entities.delete(a.id)
    space.changes.revert(delete_change)
    assert space.user.entities.get(a.id).display_name == "A"
    space.user.entities.add_identifier(a.id, "phone", "+3161")
    [add_change] = space.changes.list(limit=1)
    space.changes.revert(add_change.id)
    assert [i.type for i in space.user.entities.get(a.id).identifiers] == ["email", "name"]
    [create_b] = [c for c in space.changes.list() if c.op == "entities.create" and c.target_id == b.id]
    space.changes.revert(create_b.id)
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        space.user.entities.get(b.id)


def test_a_revert_is_itself_a_change_that_cannot_be_reverted(space: Space) -> None:
    put = space.user.facts.put(predicate="work.title", value="x")
    assert put.change_id is not None
    space.changes.revert(put.change_id)
    [revert_change] = space.changes.list(limit=1)
    assert (revert_change.op, revert_change.target_id) == ("changes.revert", put.change_id)
    with pytest.raises(KnowledgeValidationError, match="cannot itself be reverted"):
        space.changes.revert(revert_change.id)


def test_unknown_change_is_not_found(space: Space) -> None:
    with pytest.raises(KnowledgeNotFoundError, match="no change"):
        space.changes.revert(999)
