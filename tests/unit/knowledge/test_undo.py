"""Undo in order, and relations that go with a deleted entity (OD-K44)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from notochord import KnowledgeValidationError, RevertError, Space
from notochord.db.schema import changes


def _city(space: Space) -> list[str]:
    return [f.value for f in space.user.facts.lookup("self", "location.home.city")]


def test_reverting_a_value_that_a_later_change_replaced_is_refused_as_superseded(space: Space) -> None:
    """Undoing Delft after Leiden replaced it must not pretend to succeed."""
    delft = space.user.facts.put(predicate="location.home.city", value="Delft")
    leiden = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert delft.change_id is not None and leiden.change_id is not None
    with pytest.raises(RevertError, match=rf"superseded by the later change {leiden.change_id}"):
        space.changes.revert(delft.change_id)
    assert space.changes.get(delft.change_id).status == "applied"
    assert _city(space) == ["Leiden"]


def test_undoing_both_writes_newest_first_leaves_no_city(space: Space) -> None:
    """The later revert restores the state before it; then the earlier one undoes Delft."""
    delft = space.user.facts.put(predicate="location.home.city", value="Delft")
    leiden = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert delft.change_id is not None and leiden.change_id is not None
    space.changes.revert(leiden.change_id)
    assert _city(space) == ["Delft"]
    space.changes.revert(delft.change_id)
    assert _city(space) == []


def test_reverting_a_run_undoes_a_value_and_its_replacement_together(space: Space) -> None:
    """Within one run, newest first, so nothing is superseded."""
    space.user.facts.put(predicate="location.home.city", value="Delft", run_id="move")
    space.user.facts.put(predicate="location.home.city", value="Leiden", run_id="move")
    assert space.changes.revert(run_id="move").count == 2
    assert _city(space) == []


def test_a_value_whose_write_was_undone_never_comes_back(space: Space) -> None:
    """A log where an earlier version let Delft's write be reverted after Leiden
    replaced it; undoing Leiden now leaves no city instead of bringing Delft back."""
    delft = space.user.facts.put(predicate="location.home.city", value="Delft")
    leiden = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert leiden.change_id is not None
    with space.core.store.write(actor=space.user.actor, run_id=None) as tx:
        tx.conn.execute(sa.update(changes).where(changes.c.id == delft.change_id).values(status="reverted"))
    space.changes.revert(leiden.change_id)
    assert _city(space) == []


def test_writing_a_value_back_into_a_slot_that_a_later_write_filled_is_refused(space: Space) -> None:
    """After retracting Delft and then setting Leiden, undoing the retraction would
    give two cities."""
    delft = space.user.facts.put(predicate="location.home.city", value="Delft")
    retraction = space.user.facts.retract(delft.id)
    space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert retraction.change_id is not None
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(retraction.change_id)
    assert _city(space) == ["Leiden"]


def test_two_documents_created_in_one_collection_are_undone_independently(space: Space) -> None:
    """Writing into the same collection does not supersede the other document."""
    first = space.user.documents.upsert(collection="keep", title="first", body="a")
    space.user.documents.upsert(collection="keep", title="second", body="b")
    assert first.change_id is not None
    space.changes.revert(first.change_id)
    assert [d.title for d in space.user.documents.list("keep")] == ["second"]


def test_undoing_a_merge_is_refused_once_facts_were_written_on_the_merged_entity(space: Space) -> None:
    """Those facts would otherwise end up on the wrong person."""
    ann = space.user.entities.resolve(name="Ann", create=True)
    anne = space.user.entities.resolve(name="Anne", create=True)
    assert ann and anne
    merge = space.user.entities.merge(keep=ann.id, merge=anne.id)
    space.user.facts.put(predicate="location.home.city", subject=anne.id, value="Delft")
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(merge)


def test_relations_to_a_deleted_entity_expire_with_it(space: Space) -> None:
    """No fact keeps pointing at an entity that is gone."""
    bob = space.user.entities.resolve(name="Bob", create=True)
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert bob and cat
    space.user.facts.put(predicate="relation.colleague", subject=bob.id, object=cat.id)
    space.user.facts.put(predicate="relation.colleague", object=cat.id)
    space.user.facts.put(predicate="pref.food.like", value="tea")
    deletion = space.user.entities.delete(cat.id)
    assert space.user.facts.lookup(bob.id, "relation") == []
    assert [f.predicate for f in space.user.facts.lookup("self")] == ["pref.food.like"]
    change = space.changes.get(deletion)
    assert change.summary == "deleted Cat and 2 relations to it"


def test_undoing_the_deletion_brings_the_relations_back(space: Space) -> None:
    """The relations expired in the same change, so one undo restores all of it."""
    bob = space.user.entities.resolve(name="Bob", create=True)
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert bob and cat
    space.user.facts.put(predicate="relation.colleague", subject=bob.id, object=cat.id)
    deletion = space.user.entities.delete(cat.id)
    space.changes.revert(deletion)
    assert [(f.predicate, f.object) for f in space.user.facts.lookup(bob.id)] == [("relation.colleague", cat.id)]
    assert space.user.entities.get(cat.id).display_name == "Cat"


def test_a_relation_does_not_come_back_pointing_at_an_entity_deleted_since(space: Space) -> None:
    """Undoing the retraction of a relation waits for the entity's deletion to be undone."""
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert cat
    relation = space.user.facts.put(predicate="relation.colleague", object=cat.id)
    retraction = space.user.facts.retract(relation.id)
    deletion = space.user.entities.delete(cat.id)
    assert retraction.change_id is not None
    with pytest.raises(RevertError, match="deleted since"):
        space.changes.revert(retraction.change_id)
    space.changes.revert(deletion)
    space.changes.revert(retraction.change_id)
    assert [f.object for f in space.user.facts.lookup("self", "relation")] == [cat.id]


def test_reverting_the_change_of_a_duplicate_write_says_it_has_none_to_revert(space: Space) -> None:
    """K-CHG-06: a duplicate put changes nothing and has no change id; passing that ``None`` on used
    to answer that revert "needs exactly one of a change or a runId", naming neither cause."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    duplicate = space.user.facts.put(predicate="location.home.city", value="Utrecht")
    assert duplicate.status == "duplicate" and duplicate.change_id is None

    with pytest.raises(KnowledgeValidationError, match="got neither; a write that changed nothing"):
        space.changes.revert(duplicate.change_id)
    with pytest.raises(KnowledgeValidationError, match="not both"):
        space.changes.revert(1, run_id="run-1")
    assert _city(space) == ["Utrecht"]
