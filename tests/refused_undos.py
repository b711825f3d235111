"""Undos the store refuses, one for each reason a refusal can carry (K-CHG-03, OD-K44).

Each setup writes into a space until undoing one of its changes would overwrite later work, and
returns that change with the store's English sentence, the reason's values and a reading of what
the refusal must leave untouched. The store's own tests check the sentence and the values; the
console's tests check the words each reader sees; both drive the same situations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from notochord import Space


@dataclass(frozen=True)
class RefusedUndo:
    """A change whose undo the store refuses, and why."""

    change_id: int
    message: str
    values: dict[str, str]
    state: Callable[[], object]


def top_collections(space: Space) -> dict[str, int | None]:
    """Each of the user's collections with its parent."""
    return {c.name: c.parent_id for c in space.user.collections.list() if c.builtin is None}


def creation(space: Space, collection_id: int) -> int:
    """The change that created the collection."""
    [created] = [c for c in space.changes.list() if c.op == "collections.create" and c.target_id == collection_id]
    return created.id


def _superseded(space: Space) -> RefusedUndo:
    first = space.as_assistant.facts.put(predicate="location.home.city", value="Paris")
    later = space.user.facts.put(predicate="location.home.city", value="Leiden")
    assert first.change_id is not None and later.change_id is not None
    summary = space.changes.get(later.change_id).summary
    return RefusedUndo(
        first.change_id,
        f"cannot revert change {first.change_id}: superseded by the later change {later.change_id} of user "
        f"({summary}); revert that one first (or the whole run), or edit the value directly",
        {"change": str(first.change_id), "later": str(later.change_id), "actor": "user", "summary": summary},
        lambda: [f.value for f in space.user.facts.lookup("self", "location.home.city")],
    )


def _entity_deleted(space: Space) -> RefusedUndo:
    cat = space.user.entities.resolve(name="Cat", create=True)
    assert cat
    relation = space.user.facts.put(predicate="relation.colleague", object=cat.id)
    retraction = space.user.facts.retract(relation.id)
    space.user.entities.delete(cat.id)
    change = retraction.change_id
    assert change is not None
    return RefusedUndo(
        change,
        f"cannot revert change {change}: superseded, the entity relation.colleague points at was deleted since; "
        "undo that deletion first",
        {"change": str(change), "predicate": "relation.colleague"},
        lambda: space.user.facts.lookup("self", "relation"),
    )


def _key_taken(space: Space) -> RefusedUndo:
    old = space.user.documents.upsert(collection="keep", key="menu", title="Old menu", body="soup")
    deletion = space.user.documents.delete(old.id)
    space.user.documents.upsert(collection="keep", key="menu", title="New menu", body="stew")
    return RefusedUndo(
        deletion,
        f"cannot revert change {deletion}: superseded, another document now has the key menu",
        {"change": str(deletion), "key": "menu"},
        lambda: sorted(d.title for d in space.user.documents.list("keep")),
    )


def _collection_not_empty(space: Space) -> RefusedUndo:
    recipes = space.user.collections.create("Recipes")
    space.user.documents.upsert(collection=recipes.id, title="Stew", body="Tomato beef stew")
    change = creation(space, recipes.id)
    return RefusedUndo(
        change,
        f"cannot revert change {change}: the collection is not empty; move or delete what is inside first",
        {"change": str(change)},
        lambda: (top_collections(space), [d.title for d in space.user.documents.list(recipes.id)]),
    )


def _changed(change_id: int | None) -> int:
    """The change a move recorded (each move here goes somewhere else, so it records one)."""
    assert change_id is not None, "the move changed nothing"
    return change_id


def _document_place_removed(space: Space) -> RefusedUndo:
    drafts = space.user.collections.create("Drafts")
    doc = space.user.documents.upsert(collection=drafts.id, title="Stew", body="Tomato beef stew")
    moved = _changed(space.user.documents.move(doc.id, collection="keep"))
    space.changes.revert(creation(space, drafts.id))
    return RefusedUndo(
        moved,
        f"cannot revert change {moved}: superseded, the collection the document was in was removed since; "
        "undo that removal first",
        {"change": str(moved)},
        lambda: [d.id for d in space.user.documents.list("keep")],
    )


def _collection_place_removed(space: Space) -> RefusedUndo:
    parent = space.user.collections.create("Parent")
    child = space.user.collections.create("Child", parent=parent.id)
    out = _changed(space.user.collections.move(child.id, parent=None))
    space.changes.revert(creation(space, parent.id))
    return RefusedUndo(
        out,
        f"cannot revert change {out}: superseded, the collection the collection was in was removed since; "
        "undo that removal first",
        {"change": str(out)},
        lambda: top_collections(space),
    )


def _old_parent_inside(space: Space) -> RefusedUndo:
    k = space.user.collections.create("k")
    lentils = space.user.collections.create("Lentils")
    space.user.collections.move(k.id, parent=lentils.id)
    out = _changed(space.user.collections.move(k.id, parent=None))
    space.user.collections.move(lentils.id, parent=k.id)
    return RefusedUndo(
        out,
        f"cannot revert change {out}: superseded, its old parent Lentils now sits inside the collection; "
        "move that one out first",
        {"change": str(out), "parent": "Lentils"},
        lambda: top_collections(space),
    )


def _too_deep(space: Space) -> RefusedUndo:
    x = space.user.collections.create("x")
    y = space.user.collections.create("y", parent=x.id)
    out = _changed(space.user.collections.move(y.id, parent=None))
    below = y.id
    for name in ("y1", "y2", "y3", "y4"):
        below = space.user.collections.create(name, parent=below).id
    return RefusedUndo(
        out,
        f"cannot revert change {out}: superseded, moving it back would nest collections more than 5 levels deep "
        "(the depth limit); move some of what is inside it first",
        {"change": str(out), "depth": "5"},
        lambda: top_collections(space),
    )


REFUSED_UNDOS: dict[str, Callable[[Space], RefusedUndo]] = {
    "superseded": _superseded,
    "entity_deleted": _entity_deleted,
    "key_taken": _key_taken,
    "collection_not_empty": _collection_not_empty,
    "document_place_removed": _document_place_removed,
    "collection_place_removed": _collection_place_removed,
    "old_parent_inside": _old_parent_inside,
    "too_deep": _too_deep,
}
