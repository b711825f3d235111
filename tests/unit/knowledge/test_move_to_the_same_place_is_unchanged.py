"""Moving something to where it already is changes nothing, and records nothing.

Like a rename to the same name or an upsert of identical content, a move of a document into the
collection that holds it, or of a collection under the parent it has, writes no change: the
call answers ``None`` instead of a change id. So such a no-op never stands in the way of undoing
the earlier change that did move it. K-COL-13, K-COL-15, K-CHG-06, K-CHG-08, OD-K43, OD-K44, OD-K56.
"""

from __future__ import annotations

import pytest

from notochord import KnowledgeValidationError, Space


def test_moving_a_document_into_its_own_collection_records_no_change(space: Space) -> None:
    """OD-K43: the no-op move writes no change record and leaves the document where it is."""
    recipes = space.user.collections.create("Recipes")
    doc = space.user.documents.upsert(collection=recipes.id, title="Soup", body="leek")
    before = [c.id for c in space.changes.list()]

    assert space.user.documents.move(doc.id, collection=recipes.id) is None

    assert [c.id for c in space.changes.list()] == before
    assert space.user.documents.get(doc.id).collection_id == recipes.id


def test_a_no_op_document_move_does_not_block_undoing_the_real_one(space: Space) -> None:
    """OD-K44, K-CHG-08: the earlier move still undoes after a move to where the document already is."""
    recipes = space.user.collections.create("Recipes")
    doc = space.user.documents.upsert(collection="keep", title="Soup", body="leek")
    moved = space.user.documents.move(doc.id, collection=recipes.id)
    assert moved is not None

    space.user.documents.move(doc.id, collection=recipes.id)
    space.changes.revert(moved)

    assert space.user.documents.get(doc.id).collection_id == space.user.collections.get("keep").id


def test_moving_a_collection_under_its_own_parent_records_no_change(space: Space) -> None:
    """OD-K43: under the same parent, or to the top level when it is there, nothing is written."""
    food = space.user.collections.create("Food")
    recipes = space.user.collections.create("Recipes", parent=food.id)
    top = space.user.collections.create("Top")
    before = [c.id for c in space.changes.list()]

    assert space.user.collections.move(recipes.id, parent=food.id) is None
    assert space.user.collections.move(top.id, parent=None) is None

    assert [c.id for c in space.changes.list()] == before
    assert space.user.collections.get(recipes.id).parent_id == food.id


def test_a_no_op_collection_move_does_not_block_undoing_the_real_one(space: Space) -> None:
    """OD-K44, K-CHG-08: the earlier move still undoes after a move to where the collection already is."""
    food = space.user.collections.create("Food")
    recipes = space.user.collections.create("Recipes")
    moved = space.user.collections.move(recipes.id, parent=food.id)
    assert moved is not None

    space.user.collections.move(recipes.id, parent=food.id)
    space.changes.revert(moved)

    assert space.user.collections.get(recipes.id).parent_id is None


def test_a_no_op_move_is_still_refused_where_a_move_would_be(space: Space) -> None:
    """OD-K56, K-DOC-19: the rules of moving are checked first, so a keyed document is refused as before."""
    keyed = space.user.documents.upsert(collection="keep", key="k", title="T", body="b")

    with pytest.raises(KnowledgeValidationError, match="written with a key cannot be moved"):
        space.user.documents.move(keyed.id, collection="keep")
