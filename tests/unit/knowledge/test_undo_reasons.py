"""Each refused undo carries a stable reason code and the values its words need, beside the English
sentence the CLI, REST and MCP show unchanged (K-CHG-03, OD-K44).

A reader in another language (the console) words the code itself; the sentence stays what every
other edge has always shown, word for word.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from notochord import RevertError, Space


def _creation(space: Space, collection_id: int) -> int:
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == collection_id]
    return created.id


def _superseded(space: Space) -> tuple[int, str, dict[str, str]]:
    first = space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    later = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert first.change_id is not None and later.change_id is not None
    summary = space.changes.get(later.change_id).summary
    message = (
        f"cannot revert change {first.change_id}: superseded by the later change {later.change_id} of user "
        f"({summary}); revert that one first (or the whole run), or edit the value directly"
    )
    values = {"change": str(first.change_id), "later": str(later.change_id), "actor": "user", "summary": summary}
    return first.change_id, message, values


def _entity_deleted(space: Space) -> tuple[int, str, dict[str, str]]:
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert cat
    relation = space.user.facts.put(predicate="relation.colleague", object=cat.id)
    retraction = space.user.facts.retract(relation.id)
    space.user.entities.delete(cat.id)
    change = retraction.change_id
    assert change is not None
    message = (
        f"cannot revert change {change}: superseded, the entity relation.colleague points at was deleted since; "
        "undo that deletion first"
    )
    return change, message, {"change": str(change), "predicate": "relation.colleague"}


def _key_taken(space: Space) -> tuple[int, str, dict[str, str]]:
    old = space.user.documents.upsert(collection="keep", key="menu", title="Old menu", body="soup")
    deletion = space.user.documents.delete(old.id)
    space.user.documents.upsert(collection="keep", key="menu", title="New menu", body="stew")
    message = f"cannot revert change {deletion}: superseded, another document now has the key menu"
    return deletion, message, {"change": str(deletion), "key": "menu"}


def _collection_not_empty(space: Space) -> tuple[int, str, dict[str, str]]:
    recipes = space.user.collections.create("Recipes")
    space.user.documents.upsert(collection=recipes.id, title="Stew", body="Tomato beef stew")
    change = _creation(space, recipes.id)
    message = f"cannot revert change {change}: the collection is not empty; move or delete what is inside first"
    return change, message, {"change": str(change)}


def _document_place_removed(space: Space) -> tuple[int, str, dict[str, str]]:
    drafts = space.user.collections.create("Drafts")
    doc = space.user.documents.upsert(collection=drafts.id, title="Stew", body="Tomato beef stew")
    moved = space.user.documents.move(doc.id, collection="keep")
    space.changes.revert(_creation(space, drafts.id))
    message = (
        f"cannot revert change {moved}: superseded, the collection the document was in was removed since; "
        "undo that removal first"
    )
    return moved, message, {"change": str(moved)}


def _collection_place_removed(space: Space) -> tuple[int, str, dict[str, str]]:
    parent = space.user.collections.create("Parent")
    child = space.user.collections.create("Child", parent=parent.id)
    out = space.user.collections.move(child.id, parent=None)
    space.changes.revert(_creation(space, parent.id))
    message = (
        f"cannot revert change {out}: superseded, the collection the collection was in was removed since; "
        "undo that removal first"
    )
    return out, message, {"change": str(out)}


def _old_parent_inside(space: Space) -> tuple[int, str, dict[str, str]]:
    k = space.user.collections.create("k")
    ell = space.user.collections.create("l")
    space.user.collections.move(k.id, parent=ell.id)
    out = space.user.collections.move(k.id, parent=None)
    space.user.collections.move(ell.id, parent=k.id)
    message = (
        f"cannot revert change {out}: superseded, its old parent l now sits inside the collection; "
        "move that one out first"
    )
    return out, message, {"change": str(out), "parent": "l"}


def _too_deep(space: Space) -> tuple[int, str, dict[str, str]]:
    x = space.user.collections.create("x")
    y = space.user.collections.create("y", parent=x.id)
    out = space.user.collections.move(y.id, parent=None)
    below = y.id
    for name in ("y1", "y2", "y3", "y4"):
        below = space.user.collections.create(name, parent=below).id
    message = (
        f"cannot revert change {out}: superseded, moving it back would nest collections more than 5 levels deep "
        "(the depth limit); move some of what is inside it first"
    )
    return out, message, {"change": str(out), "depth": "5"}


REFUSALS: dict[str, Callable[[Space], tuple[int, str, dict[str, str]]]] = {
    "superseded": _superseded,
    "entity_deleted": _entity_deleted,
    "key_taken": _key_taken,
    "collection_not_empty": _collection_not_empty,
    "document_place_removed": _document_place_removed,
    "collection_place_removed": _collection_place_removed,
    "old_parent_inside": _old_parent_inside,
    "too_deep": _too_deep,
}


def test_every_reason_but_other_is_one_a_refusal_below_carries() -> None:
    assert sorted(REFUSALS) == sorted(set(RevertError.REASONS) - {"other"})


@pytest.mark.parametrize("reason", sorted(REFUSALS))
def test_a_refused_undo_names_its_reason_and_values_and_keeps_its_english_sentence(space: Space, reason: str) -> None:
    """OD-K44: the refusal changes nothing; its message is the sentence every edge has shown."""
    change, message, values = REFUSALS[reason](space)

    with pytest.raises(RevertError) as refused:
        space.changes.revert(change)

    assert (refused.value.reason, refused.value.values) == (reason, values)
    assert str(refused.value) == refused.value.message == message
    assert refused.value.code == "E_REVERT"
    assert space.changes.get(change).status == "applied"


def test_a_refusal_made_without_a_reason_is_other_with_no_values() -> None:
    refused = RevertError("superseded")
    assert (refused.reason, refused.values, str(refused)) == ("other", {}, "superseded")
