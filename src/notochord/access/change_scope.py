"""How far a gem may see or undo another writer's changes (K-PERM-17, EX-13).

``changes.manage`` lets a gem see and undo what others wrote, but only inside the reach of its other
permissions: a fact's change needs the facts permission of its subject kind and predicate, an
entity's or identifier's the entities permission of the kind, a document's or collection's the
collections permission of where it sits now. One :class:`ScopeRule` per target type answers both
questions; the rows they look at are read by :mod:`notochord.knowledge.reach` on the caller's
connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from notochord.access.decisions import ALLOWED, Decision, FactSlot, InCollection, Kind, decide
from notochord.access.permissions import PermissionSet
from notochord.access.scope import CollectionAccess, collection_access
from notochord.knowledge import reach as rows
from notochord.knowledge.collections import CollectionTree
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.records import Change

__all__ = ["Scope", "ScopeRule", "collection_reach"]

# Something this scope cannot place (a target type it does not know, a row gone) is undone only
# with changes.manage, which the caller has already been asked for.
_UNPLACED: Decision = Decision("changes.manage")


def collection_reach(
    conn: sa.Connection, core: KnowledgeCore, grants: PermissionSet, *, gem_id: str, created_after: int
) -> tuple[CollectionTree, CollectionAccess]:
    """The collection tree now, and what the gem may read and write in it."""
    tree = core.collections.tree(conn)
    ticked = core.collections.ticked(conn, gem_id)
    return tree, collection_access(tree, grants, gem_id=gem_id, ticked=ticked, created_after=created_after)


class ScopeRule:
    """How far a gem may see or undo another writer's change of one target type."""

    def __init__(
        self,
        *,
        readable: Callable[[sa.Connection, int, PermissionSet, str], bool],
        write_permission: Callable[[sa.Connection, int, PermissionSet, str], Decision],
    ) -> None:
        self.readable = readable
        self.write_permission = write_permission
        """Whether the gem may undo changes of the object, and if not, the permission it lacks."""


class Scope:
    """Target type → rule, for facts, entities, identifiers, collections and documents.

    ``watermark(conn, gem_id)`` is the highest collection id that existed when the gem's current
    installation began (collections it created after that are its own, K-PERM-15).
    """

    def __init__(self, core: KnowledgeCore, *, watermark: Callable[[sa.Connection, str], int]) -> None:
        self._core = core
        self._watermark = watermark
        self.rules: dict[str, ScopeRule] = {
            "fact": ScopeRule(readable=self._fact_readable, write_permission=self._fact_write),
            "entity": ScopeRule(readable=self._entity_readable, write_permission=self._entity_write),
            "identifier": ScopeRule(readable=self._identifier_readable, write_permission=self._identifier_write),
            "collection": ScopeRule(readable=self._collection_readable, write_permission=self._collection_write),
            "document": ScopeRule(readable=self._document_readable, write_permission=self._document_write),
        }

    # ------------------------------------------------------------ facts, entities, identifiers

    def _fact_readable(self, conn: sa.Connection, fact_id: int, grants: PermissionSet, _gem_id: str) -> bool:
        found = rows.fact_slot(conn, fact_id)
        return found is not None and decide(grants, action="facts.read", target=FactSlot(*found)).allowed

    def _fact_write(self, conn: sa.Connection, fact_id: int, grants: PermissionSet, _gem_id: str) -> Decision:
        found = rows.fact_slot(conn, fact_id)
        return _UNPLACED if found is None else decide(grants, action="facts.write", target=FactSlot(*found))

    def _entity_readable(self, conn: sa.Connection, entity_id: int, grants: PermissionSet, _gem_id: str) -> bool:
        kind = rows.entity_kind(conn, entity_id)
        return kind != "self" and decide(grants, action="entities.read", target=Kind(kind)).allowed

    def _entity_write(self, conn: sa.Connection, entity_id: int, grants: PermissionSet, _gem_id: str) -> Decision:
        return decide(grants, action="entities.write", target=Kind(rows.entity_kind(conn, entity_id)))

    def _identifier_readable(self, conn: sa.Connection, identifier_id: int, grants: PermissionSet, gem_id: str) -> bool:
        return self._entity_readable(conn, rows.identifier_entity(conn, identifier_id), grants, gem_id)

    def _identifier_write(
        self, conn: sa.Connection, identifier_id: int, grants: PermissionSet, gem_id: str
    ) -> Decision:
        return self._entity_write(conn, rows.identifier_entity(conn, identifier_id), grants, gem_id)

    # ------------------------------------------------------------ collections, documents

    def _reach(
        self, conn: sa.Connection, grants: PermissionSet, gem_id: str
    ) -> tuple[CollectionTree, CollectionAccess]:
        return collection_reach(conn, self._core, grants, gem_id=gem_id, created_after=self._watermark(conn, gem_id))

    def _collection_readable(self, conn: sa.Connection, collection_id: int, grants: PermissionSet, gem_id: str) -> bool:
        return collection_id in self._reach(conn, grants, gem_id)[1].readable

    def _collection_write(
        self, conn: sa.Connection, collection_id: int, grants: PermissionSet, gem_id: str
    ) -> Decision:
        tree, access = self._reach(conn, grants, gem_id)
        if collection_id not in tree.by_id:
            return ALLOWED if collection_id in access.writable else _UNPLACED
        return decide(grants, action="collections.write", target=InCollection(tree, access, collection_id))

    def _document_readable(self, conn: sa.Connection, document_id: int, grants: PermissionSet, gem_id: str) -> bool:
        return self._collection_readable(conn, rows.document_collection(conn, document_id), grants, gem_id)

    def _document_write(self, conn: sa.Connection, document_id: int, grants: PermissionSet, gem_id: str) -> Decision:
        return self._collection_write(conn, rows.document_collection(conn, document_id), grants, gem_id)

    # ------------------------------------------------------------ the questions

    def readable(self, conn: sa.Connection, row: sa.Row[Any] | Change, grants: PermissionSet, gem_id: str) -> bool:
        """Whether the gem may see another writer's change ``row`` (a ``changes`` row or record)."""
        if row.target_id is None:
            return False
        if row.target_type == "change":
            target = rows.change_row(conn, row.target_id)
            return target is not None and self.readable(conn, target, grants, gem_id)
        rule = self.rules.get(row.target_type)
        return rule is not None and rule.readable(conn, row.target_id, grants, gem_id)

    def write_permission(self, conn: sa.Connection, row: sa.Row[Any], grants: PermissionSet, gem_id: str) -> Decision:
        """Whether the gem may undo another writer's change ``row``, beyond ``changes.manage``."""
        rule = self.rules.get(row.target_type)
        if rule is None or row.target_id is None:
            return _UNPLACED
        return rule.write_permission(conn, row.target_id, grants, gem_id)

    def own_write_permission(
        self, conn: sa.Connection, row: sa.Row[Any] | Change, grants: PermissionSet, gem_id: str
    ) -> Decision:
        """Whether the gem may undo its own change ``row``: the write permission that covers the object now.

        Undoing is writing: a gem whose switches the user turned off may not take back, through its
        own change, what it may no longer write (K-CON-03). A revert of a revert is asked of the
        change it would apply again. What the scope cannot place (a row gone) stays the gem's own
        to undo, as K-CHG-04 grants.
        """
        if row.target_type == "change" and row.target_id is not None:
            target = rows.change_row(conn, row.target_id)
            return ALLOWED if target is None else self.own_write_permission(conn, target, grants, gem_id)
        rule = self.rules.get(row.target_type)
        if rule is None or row.target_id is None:
            return ALLOWED
        decision = rule.write_permission(conn, row.target_id, grants, gem_id)
        return ALLOWED if decision is _UNPLACED else decision
