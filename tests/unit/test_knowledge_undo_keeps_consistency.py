"""Undo sequences, conflict settlement and identifier forms that must leave the knowledge consistent.

Each test states a rule a careful user relies on: an undo never leaves two current copies of one
value, never brings a document or a collection back into a place that is gone, never ties
collections into a loop or nests them deeper than allowed; a value the user took from a conflict
is the same value when it is said again; identifiers that differ only in their Unicode form name
the same person, and a predicate hint that differs only in its Unicode form the same predicate.
K-FACT-13, K-FACT-21, K-CHG-03, K-DOC-16, K-COL-09, K-COL-13, K-ENT-01, OD-K17, OD-K26, OD-K44.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from knowledge_gem import knowledge_gem
from notochord import Space
from notochord.errors import KnowledgeValidationError, RevertError

# ---------------------------------------------------------------------------------------- facts


def test_undoing_a_retraction_refuses_to_bring_back_a_value_said_again_since(space: Space) -> None:
    """K-FACT-21, OD-K44: after retract, put of the same value, undo of the retract, the value is
    current once; the undo is refused as superseded and nothing changes."""
    first = space.user.facts.put(predicate="pref.food.like", value="cilantro")
    retracted = space.user.facts.retract(first.id)
    again = space.user.facts.put(predicate="pref.food.like", value="cilantro")
    assert again.status == "applied"

    assert retracted.change_id is not None
    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(retracted.change_id)

    current = space.user.facts.lookup("self", "pref.food")
    assert [(f.id, f.value) for f in current] == [(again.id, "cilantro")]
    assert space.changes.get(retracted.change_id).status == "applied"


def test_undoing_the_later_put_first_lets_the_retraction_be_undone(space: Space) -> None:
    """K-CHG-03, OD-K44: undoing newest first still restores the retracted value, exactly once."""
    first = space.user.facts.put(predicate="pref.food.like", value="cilantro")
    retracted = space.user.facts.retract(first.id)
    again = space.user.facts.put(predicate="pref.food.like", value="cilantro")

    space.changes.revert(again.change_id)
    space.changes.revert(retracted.change_id)

    assert [(f.id, f.value) for f in space.user.facts.lookup("self", "pref.food")] == [(first.id, "cilantro")]


def test_a_value_taken_from_a_conflict_is_a_duplicate_when_said_again(space: Space) -> None:
    """K-FACT-21, OD-K17: the proposal the user took is stored as canonical JSON, so restating it,
    keys in any order, writes nothing and raises no new conflict."""
    space.user.facts.put(predicate="location.home.address", value={"street": "Oudegracht", "no": 1})
    proposed = {"street": "Neude", "no": 2}
    conflict = space.as_assistant.facts.put(predicate="location.home.address", value=proposed)
    assert conflict.status == "conflict" and conflict.change_id is not None
    taken = space.changes.resolve(conflict.change_id, take="theirs")

    by_assistant = space.as_assistant.facts.put(predicate="location.home.address", value={"no": 2, "street": "Neude"})
    by_user = space.user.facts.put(predicate="location.home.address", value=proposed)

    assert (by_assistant.status, by_assistant.id) == ("duplicate", taken.fact_id)
    assert (by_user.status, by_user.id) == ("duplicate", taken.fact_id)
    assert space.changes.list(status="conflict") == []
    assert [f.id for f in space.user.facts.lookup("self", "location.home")] == [taken.fact_id]


# ------------------------------------------------------------------------------------ documents


def test_a_deleted_document_is_not_restored_into_a_collection_removed_since(space: Space) -> None:
    """K-DOC-16, OD-K44: restoring a document whose collection's creation was undone is refused,
    and the document stays deleted instead of living in a collection nobody can see."""
    recipes = space.user.collections.create("Recipes")
    doc = space.user.documents.upsert(collection=recipes.id, title="Stew", body="Tomato beef stew")
    space.user.documents.delete(doc.id)
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == recipes.id]
    space.changes.revert(created.id)

    with pytest.raises(RevertError, match="superseded"):
        space.user.documents.restore(doc.id)

    assert space.user.documents.deleted_one(doc.id) is not None
    assert space.user.search("stew") == []


def test_undoing_a_document_move_is_refused_once_its_old_collection_was_removed(space: Space) -> None:
    """K-COL-13, OD-K44: a move is undone only into a collection that still exists."""
    drafts = space.user.collections.create("Drafts")
    doc = space.user.documents.upsert(collection=drafts.id, title="Stew", body="Tomato beef stew")
    moved = space.user.documents.move(doc.id, collection="keep")
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == drafts.id]
    space.changes.revert(created.id)

    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(moved)

    assert [d.id for d in space.user.documents.list("keep")] == [doc.id]


# ---------------------------------------------------------------------------------- collections


def _parents(space: Space) -> dict[str, int | None]:
    return {c.name: c.parent_id for c in space.user.collections.list() if c.builtin is None}


def test_undoing_a_collection_move_never_ties_collections_into_a_loop(space: Space) -> None:
    """K-COL-13, OD-K56: after k moved under l and back out, and l moved under k, undoing k's move
    out would put k under its own subfolder; it is refused and the tree stays a tree."""
    k = space.user.collections.create("k")
    ell = space.user.collections.create("l")
    space.user.collections.move(k.id, parent=ell.id)
    out = space.user.collections.move(k.id, parent=None)
    space.user.collections.move(ell.id, parent=k.id)

    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(out)

    assert _parents(space) == {"k": None, "l": k.id}


def test_undoing_a_collection_move_is_refused_once_its_old_parent_was_removed(space: Space) -> None:
    """K-COL-13, OD-K44: the collection does not go back under a parent that no longer exists."""
    parent = space.user.collections.create("Parent")
    child = space.user.collections.create("Child", parent=parent.id)
    out = space.user.collections.move(child.id, parent=None)
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == parent.id]
    space.changes.revert(created.id)

    with pytest.raises(RevertError, match="superseded"):
        space.changes.revert(out)

    assert _parents(space) == {"Child": None}


def test_undoing_a_collection_move_never_nests_deeper_than_five_levels(space: Space) -> None:
    """K-COL-09, OD-K33: x › y moved out, then y grew four levels below it; moving y back under x
    would make six levels, so the undo is refused and nothing moves."""
    x = space.user.collections.create("x")
    y = space.user.collections.create("y", parent=x.id)
    out = space.user.collections.move(y.id, parent=None)
    below = y.id
    for name in ("y1", "y2", "y3", "y4"):
        below = space.user.collections.create(name, parent=below).id

    with pytest.raises(RevertError, match="depth"):
        space.changes.revert(out)

    assert _parents(space)["y"] is None


# ----------------------------------------------------------------------------------- identifiers

NFC_EMAIL = unicodedata.normalize("NFC", "José@Example.nl")
NFD_EMAIL = unicodedata.normalize("NFD", "josé@example.nl")
NFC_NAME = unicodedata.normalize("NFC", "Zoë Müller")
NFD_NAME = unicodedata.normalize("NFD", "zoë  müller")


def test_emails_differing_only_in_case_and_unicode_form_name_one_person(space: Space) -> None:
    """K-ENT-01, OD-K26: an email typed in decomposed form finds the person saved in composed form."""
    assert NFC_EMAIL.lower() != NFD_EMAIL  # the two texts differ, code point by code point
    jose = space.user.entities.resolve(email=NFC_EMAIL, create=True)
    assert jose is not None

    found = space.user.entities.resolve(email=NFD_EMAIL)
    again = space.user.entities.resolve(email=NFD_EMAIL, create=True)

    assert found is not None and found.id == jose.id
    assert again is not None and again.id == jose.id
    assert space.user.entities.add_identifier(jose.id, "email", NFD_EMAIL) == "exists"
    assert [e.id for e in space.user.entities.list("person")] == [jose.id]


def test_names_differing_only_in_unicode_form_name_one_person(space: Space) -> None:
    """K-ENT-01, OD-K26: name matching is case-insensitive, whitespace-collapsed and blind to the
    Unicode form, against the display name and the name identifiers, and so is the list query."""
    zoe = space.user.entities.resolve(name=NFC_NAME, create=True)
    assert zoe is not None

    found = space.user.entities.resolve(name=NFD_NAME)

    assert found is not None and found.id == zoe.id
    assert [e.id for e in space.user.entities.list("person", query=unicodedata.normalize("NFD", "Müller"))] == [zoe.id]


# ------------------------------------------------------------------------------------ predicates


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_hint_in_decomposed_unicode_lands_on_the_same_predicate(space: Space, tmp_path: Path) -> None:
    """K-FACT-13, K-FACT-19, OD-K09, OD-K10: "Café prefs" typed with a combining accent is the same
    hint as the composed one; it resolves to the same ``x.`` predicate (not ``x.cafe_prefs``), so
    the permission the gem holds for it covers both writes."""
    predicate = unicodedata.normalize("NFC", "x.café_prefs")
    knowledge = knowledge_gem(space, tmp_path, [f"facts.read:self:{predicate}", f"facts.write:self:{predicate}"])

    composed = await knowledge.facts.put(predicateHint=unicodedata.normalize("NFC", "Café prefs"), value="flat white")
    decomposed = await knowledge.facts.put(predicateHint=unicodedata.normalize("NFD", "Café prefs"), value="latte")
    exact = await knowledge.facts.put(predicateHint=unicodedata.normalize("NFD", predicate), value="cortado")

    assert [composed.status, decomposed.status, exact.status] == ["applied"] * 3
    assert composed.predicate == decomposed.predicate == exact.predicate == predicate
    looked_up = await knowledge.facts.lookup("self", "x")
    assert sorted(f.value for f in looked_up) == ["cortado", "flat white", "latte"]


def test_a_predicate_written_with_combining_accents_is_refused_saying_so(space: Space) -> None:
    """K-FACT-13: "x.café" with the accent as a combining mark looks exactly like the valid
    predicate; the refusal says what differs instead of calling a level that reads well malformed."""
    decomposed = unicodedata.normalize("NFD", "x.café")
    with pytest.raises(KnowledgeValidationError) as refused:
        space.user.facts.put(predicate=decomposed, value="flat white")
    assert "combining marks" in refused.value.message
    assert "composed characters (Unicode NFC)" in refused.value.message
    assert space.user.facts.lookup("self", "x") == []
