"""Collections: nested containers of documents and the unit of authorization (K-COL).

Rules:

- ``diary`` and ``keep`` are built in, top level, and can be neither moved nor deleted. Nothing is
  created or moved inside ``diary`` (OD-K33, OD-K56).
- Nesting is at most 5 levels, a top-level collection being level 1 (K-COL-09).
- Every collection belongs to a *class* by its top-level ancestor: inside ``diary`` → ``diary``,
  inside ``keep`` → ``keep``, anything else → ``user-selected`` (OD-K06). Grants name classes; a grant
  on a collection covers all its subfolders, including ones made later (K-PERM-14), because access is
  computed from the tree at the moment of each call.
- Only the user moves things (K-COL-13); refs do not change when something moves (K-COL-15).
- Names are trimmed, composed to Unicode NFC, non-empty, at most 1000 characters (as stored), and
  need not be unique (OD-K32). Two spellings of one name ("é" as one code point or as "e" and a
  combining accent) look alike and mean the same, so they are one name: renaming to the other
  spelling writes nothing, and :meth:`CollectionTree.named` finds a name by either.
- Collections are never physically deleted: ``deleted_at`` marks them, so undo can bring them back.
- A collection marked ``builtin = 'kb'`` is the store of one knowledge base of the REST service.
  Knowledge bases share no ids, permissions or API with ``ctx.knowledge`` (OD-B24): such a subtree is
  in class ``kb``, which no grant, tick or gem ever reaches.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa

from notochord.db.schema import collection_ticks, collections, documents
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError, RevertError
from notochord.knowledge.arguments import as_id
from notochord.knowledge.changes import REVERTERS
from notochord.knowledge.quotas import DailyLimits, check_length
from notochord.knowledge.writes import Actor, Permit, Store, WriteTx, Writing

__all__ = [
    "BUILTINS",
    "KB_MARKER",
    "MAX_DEPTH",
    "CollectionClass",
    "CollectionRow",
    "CollectionTree",
    "Collections",
    "require_live_place",
]

BUILTINS = ("diary", "keep")
MAX_DEPTH = 5

CollectionClass = Literal["diary", "keep", "user-selected", "kb"]
KB_MARKER = "kb"


@dataclass(frozen=True)
class CollectionRow:
    id: int
    name: str
    parent_id: int | None
    builtin: str | None
    created_by: str
    created_at: str

    @property
    def kind(self) -> str:
        """``builtin``, ``gem`` or ``user`` (OD-K31)."""
        if self.builtin:
            return "builtin"
        return "gem" if self.created_by.startswith("gem:") else "user"


@dataclass
class CollectionTree:
    """The live collections of a space at one moment, with the questions access asks of them."""

    by_id: dict[int, CollectionRow]
    children: dict[int | None, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[CollectionRow]) -> CollectionTree:
        tree = cls({r.id: r for r in rows})
        for row in tree.by_id.values():
            tree.children.setdefault(row.parent_id, []).append(row.id)
        return tree

    def get(self, collection_id: int) -> CollectionRow:
        found = as_id(collection_id)
        row = None if found is None else self.by_id.get(found)
        if row is None:
            raise KnowledgeNotFoundError("collection")
        return row

    def builtin(self, name: str) -> CollectionRow:
        if not isinstance(name, str) or name not in BUILTINS:
            raise KnowledgeNotFoundError("collection")
        for row in self.by_id.values():
            if row.builtin == name:
                return row
        raise KnowledgeNotFoundError("collection")

    def named(self, name: str) -> list[CollectionRow]:
        """The collections whose name is ``name`` as a name is stored (trimmed, composed to NFC),
        oldest first; a name stored before names were composed is matched by its composed form."""
        wanted = _composed(name.strip())
        return [row for _, row in sorted(self.by_id.items()) if _composed(row.name) == wanted]

    def ancestors(self, collection_id: int) -> list[int]:
        """The collection and its ancestors, nearest first."""
        chain: list[int] = []
        current: int | None = collection_id
        while current is not None and current in self.by_id and current not in chain:
            chain.append(current)
            current = self.by_id[current].parent_id
        return chain

    def depth(self, collection_id: int) -> int:
        return len(self.ancestors(collection_id))

    def subtree(self, collection_id: int) -> set[int]:
        """The collection and everything below it."""
        found = {collection_id}
        stack = [collection_id]
        while stack:
            for child in self.children.get(stack.pop(), []):
                if child not in found:
                    found.add(child)
                    stack.append(child)
        return found

    def subtree_height(self, collection_id: int) -> int:
        """Levels in the subtree, the collection itself being 1."""
        below = [self.subtree_height(c) for c in self.children.get(collection_id, [])]
        return 1 + max(below, default=0)

    def class_of(self, collection_id: int) -> CollectionClass:
        top = self.by_id[self.ancestors(collection_id)[-1]]
        if top.builtin == "diary":
            return "diary"
        if top.builtin == "keep":
            return "keep"
        if top.builtin == KB_MARKER:
            return "kb"
        return "user-selected"


def _row(r: Any) -> CollectionRow:
    return CollectionRow(
        id=r.id,
        name=r.name,
        parent_id=r.parent_id,
        builtin=r.builtin,
        created_by=r.created_by,
        created_at=r.created_at,
    )


def _live_tree(conn: sa.Connection) -> CollectionTree:
    rows = conn.execute(sa.select(collections).where(collections.c.deleted_at.is_(None))).all()
    return CollectionTree.of(_row(r) for r in rows)


def _composed(text: str) -> str:
    # one stored form for every spelling of the same characters, so that names that look the same
    # are equal; NFC, not NFKC: "ﬁ" and "fi" look different and stay different names
    return unicodedata.normalize("NFC", text)


def clean_name(name: object) -> str:
    """``name`` as it is stored: trimmed and composed (NFC); the length limit counts that form."""
    if not isinstance(name, str) or not name.strip():
        raise KnowledgeValidationError("a collection name must be a non-empty string")
    cleaned = _composed(name.strip())
    check_length("collection name", cleaned)
    return cleaned


class Collections:
    def __init__(self, store: Store) -> None:
        self._store = store

    def seed_builtins(self, conn: sa.Connection, *, now: str) -> None:
        present = set(
            conn.execute(sa.select(collections.c.builtin).where(collections.c.builtin.is_not(None))).scalars()
        )
        for name in BUILTINS:
            if name not in present:
                conn.execute(
                    sa.insert(collections).values(
                        name=name, parent_id=None, builtin=name, created_by="system", created_at=now
                    )
                )

    def create_kb_root(self, conn: sa.Connection, *, name: str, now: str) -> int:
        """The ``builtin = 'kb'`` collection of a REST knowledge base, inside the caller's transaction.

        It records no change: the service's content store is not part of the user's undo history
        (its deletion is physical, :mod:`notochord.knowledge.purge`).
        """
        return int(
            conn.execute(
                sa.insert(collections)
                .values(name=name, parent_id=None, builtin=KB_MARKER, created_by="system", created_at=now)
                .returning(collections.c.id)
            ).scalar_one()
        )

    def tree(self, conn: sa.Connection) -> CollectionTree:
        return _live_tree(conn)

    def read_tree(self) -> CollectionTree:
        with self._store.read() as conn:
            return self.tree(conn)

    # ------------------------------------------------------------------ writing

    def create(
        self,
        *,
        actor: Actor,
        name: str,
        parent_id: int | None = None,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> CollectionRow:
        """Create a collection, optionally inside ``parent_id``; ``permit`` is asked after validation,
        inside the write transaction, before the quota."""
        cleaned = clean_name(name)
        with self._store.read() as conn:
            tree = self.tree(conn)
        self._check_place(tree, parent_id, height=1)
        with self._store.write(actor=actor, run_id=run_id, chars=len(cleaned), limits=limits, permit=permit) as tx:
            tx.allow(Writing("collection", collection_id=parent_id))
            tree = self.tree(tx.conn)
            self._check_place(tree, parent_id, height=1)
            new_id = tx.conn.execute(
                sa.insert(collections)
                .values(name=cleaned, parent_id=parent_id, builtin=None, created_by=str(actor), created_at=tx.now)
                .returning(collections.c.id)
            ).scalar_one()
            where = f" in {tree.get(parent_id).name}" if parent_id is not None else ""
            tx.record(
                op="collections.create",
                target_type="collection",
                target_id=new_id,
                touched=[("collection", parent_id)] if parent_id is not None else [],
                summary=f"created collection {cleaned}{where}",
                after={"name": cleaned},
            )
            return _row(tx.conn.execute(sa.select(collections).where(collections.c.id == new_id)).one())

    def move(self, *, actor: Actor, collection_id: int, parent_id: int | None, run_id: str | None = None) -> int | None:
        """Move a collection under ``parent_id`` (``None``: top level). The user's act (OD-K56).
        Returns the change id, or ``None`` when the collection is there already (nothing is
        written, as for a rename to the same name)."""
        if not actor.is_user:
            raise KnowledgeValidationError("only the user moves collections")
        with self._store.write(actor=actor, run_id=run_id) as tx:
            tree = self.tree(tx.conn)
            row = tree.get(collection_id)
            if row.builtin:
                raise KnowledgeValidationError(
                    f"the built-in collection {row.builtin} cannot be moved",
                    reason="builtin_move",
                    values={"collection": str(row.builtin)},
                )
            if parent_id is not None and parent_id in tree.subtree(collection_id):
                raise KnowledgeValidationError(
                    "a collection cannot be moved into itself or one of its subfolders", reason="into_itself"
                )
            if row.parent_id == parent_id:
                return None
            self._check_place(tree, parent_id, height=tree.subtree_height(collection_id))
            tx.conn.execute(sa.update(collections).where(collections.c.id == collection_id).values(parent_id=parent_id))
            return tx.record(
                op="collections.move",
                target_type="collection",
                target_id=collection_id,
                summary=f"moved collection {row.name}",
                before={"parent": row.parent_id},
                after={"parent": parent_id},
            )

    def rename(self, *, actor: Actor, collection_id: int, name: str, run_id: str | None = None) -> int | None:
        """Rename a collection: the user's act, like moving (K-COL-13). Returns the change id, or
        ``None`` when the name is already that (nothing is written)."""
        if not actor.is_user:
            raise KnowledgeValidationError("only the user renames collections")
        cleaned = clean_name(name)
        with self._store.write(actor=actor, run_id=run_id, chars=len(cleaned)) as tx:
            row = self.tree(tx.conn).get(collection_id)
            if row.builtin:
                raise KnowledgeValidationError(
                    f"the built-in collection {row.builtin} cannot be renamed",
                    reason="builtin_rename",
                    values={"collection": str(row.builtin)},
                )
            # a name stored before names were composed is the same name as its composed spelling
            if _composed(row.name) == cleaned:
                return None
            tx.conn.execute(sa.update(collections).where(collections.c.id == collection_id).values(name=cleaned))
            return tx.record(
                op="collections.rename",
                target_type="collection",
                target_id=collection_id,
                summary=f"renamed collection {row.name} to {cleaned}",
                before={"name": row.name},
                after={"name": cleaned},
            )

    def remove(self, tx: WriteTx, collection_id: int, *, summary: str) -> int:
        """Soft-delete one collection inside ``tx`` (uninstall removal, revertible); the change id."""
        tx.conn.execute(sa.update(collections).where(collections.c.id == collection_id).values(deleted_at=tx.now))
        return tx.record(op="uninstall.delete", target_type="collection", target_id=collection_id, summary=summary)

    def _check_place(self, tree: CollectionTree, parent_id: int | None, *, height: int) -> None:
        if parent_id is None:
            return
        parent = tree.get(parent_id)
        if tree.class_of(parent_id) == "diary":
            raise KnowledgeValidationError(
                "nothing can be created or moved inside the diary collection", reason="inside_diary"
            )
        if tree.depth(parent.id) + height > MAX_DEPTH:
            raise KnowledgeValidationError(
                f"collections nest at most {MAX_DEPTH} levels deep; this would exceed the depth limit",
                reason="too_deep",
                values={"depth": str(MAX_DEPTH)},
            )

    # ------------------------------------------------------------------ user-selected ticks

    def ticked(self, conn: sa.Connection, gem_id: str) -> set[int]:
        return set(
            conn.execute(
                sa.select(collection_ticks.c.collection_id).where(collection_ticks.c.gem_id == gem_id)
            ).scalars()
        )

    def ticked_now(self, gem_id: str) -> set[int]:
        """The collections the user ticked for the gem's ``user-selected`` permissions."""
        with self._store.read() as conn:
            return self.ticked(conn, gem_id)

    def set_tick(self, *, gem_id: str, collection_id: int, on: bool) -> None:
        with self._store.write(actor=Actor("user"), run_id=None) as tx:
            tree = self.tree(tx.conn)
            tree.get(collection_id)
            if tree.class_of(collection_id) != "user-selected":
                raise KnowledgeValidationError(
                    "only collections outside diary and keep can be ticked; "
                    "diary and keep are granted by their own permissions"
                )
            tx.conn.execute(
                sa.delete(collection_ticks).where(
                    collection_ticks.c.gem_id == gem_id, collection_ticks.c.collection_id == collection_id
                )
            )
            if on:
                tx.conn.execute(
                    sa.insert(collection_ticks).values(gem_id=gem_id, collection_id=collection_id, ticked_at=tx.now)
                )


def _is_empty(conn: sa.Connection, collection_id: int) -> bool:
    child = conn.execute(
        sa.select(collections.c.id).where(collections.c.parent_id == collection_id, collections.c.deleted_at.is_(None))
    ).first()
    doc = conn.execute(
        sa.select(documents.c.id).where(documents.c.collection_id == collection_id, documents.c.deleted_at.is_(None))
    ).first()
    return child is None and doc is None


def _revert_create(tx: WriteTx, row: Any) -> None:
    if not _is_empty(tx.conn, row.target_id):
        raise RevertError(
            f"cannot revert change {row.id}: the collection is not empty; move or delete what is inside first",
            reason="collection_not_empty",
            values={"change": str(row.id)},
        )
    tx.conn.execute(sa.update(collections).where(collections.c.id == row.target_id).values(deleted_at=tx.now))


def require_live_place(conn: sa.Connection, change_id: int, collection_id: int | None, *, what: str) -> None:
    """Refuse undoing change ``change_id`` when it would put ``what`` back into a collection that was
    removed since: it would live where no tree, list or search reaches it."""
    if collection_id is None:
        return
    gone = conn.execute(sa.select(collections.c.deleted_at).where(collections.c.id == collection_id)).first()
    if gone is None or gone.deleted_at is not None:
        raise RevertError(
            f"cannot revert change {change_id}: superseded, the collection {what} was in was removed since; "
            "undo that removal first",
            reason="document_place_removed" if what == "the document" else "collection_place_removed",
            values={"change": str(change_id)},
        )


def _revert_move(tx: WriteTx, row: Any) -> None:
    before = json.loads(row.before_json)
    parent_id = before["parent"]
    # later moves of other collections are not recorded on this one, so the place it goes back to
    # is checked as a new move would be: it must exist, lie outside the collection, and keep the depth
    require_live_place(tx.conn, row.id, parent_id, what="the collection")
    if parent_id is not None:
        tree = _live_tree(tx.conn)
        if parent_id in tree.subtree(row.target_id):
            raise RevertError(
                f"cannot revert change {row.id}: superseded, its old parent {tree.get(parent_id).name} now sits "
                "inside the collection; move that one out first",
                reason="old_parent_inside",
                values={"change": str(row.id), "parent": tree.get(parent_id).name},
            )
        if tree.depth(parent_id) + tree.subtree_height(row.target_id) > MAX_DEPTH:
            raise RevertError(
                f"cannot revert change {row.id}: superseded, moving it back would nest collections more than "
                f"{MAX_DEPTH} levels deep (the depth limit); move some of what is inside it first",
                reason="too_deep",
                values={"change": str(row.id), "depth": str(MAX_DEPTH)},
            )
    tx.conn.execute(sa.update(collections).where(collections.c.id == row.target_id).values(parent_id=parent_id))


def _revert_rename(tx: WriteTx, row: Any) -> None:
    before = json.loads(row.before_json)
    tx.conn.execute(sa.update(collections).where(collections.c.id == row.target_id).values(name=before["name"]))


def _revert_removal(tx: WriteTx, row: Any) -> None:
    parent_id = tx.conn.execute(sa.select(collections.c.parent_id).where(collections.c.id == row.target_id)).scalar()
    require_live_place(tx.conn, row.id, parent_id, what="the collection")
    tx.conn.execute(sa.update(collections).where(collections.c.id == row.target_id).values(deleted_at=None))


REVERTERS.update(
    {
        "collections.create": _revert_create,
        "collections.move": _revert_move,
        "collections.rename": _revert_rename,
        "uninstall.delete:collection": _revert_removal,
    }
)
