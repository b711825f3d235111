"""One gem write, one decision: the :class:`GemPermit` every gem write hands to the knowledge store.

The knowledge store opens the write transaction, resolves what the write touches (a fact's subject
kind and predicate, an entity's kind, a document's collection and writer, a new collection's
parent) and asks the permit once, on that transaction's connection, with a
:class:`~notochord.knowledge.writes.Writing`. The permit reads the gem's switches there, asks
:mod:`notochord.access.decisions` the questions that kind of write needs, and answers with the
gem's daily quota from the same switches. So a revoke can never slip in between the check and the
write (P-KVAL-09), and the switches are read once per write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import sqlalchemy as sa

from notochord.access.change_scope import collection_reach
from notochord.access.decisions import Action, FactSlot, InCollection, Kind, Target, daily_limits, decide
from notochord.access.permissions import PermissionSet
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.quotas import DailyLimits
from notochord.knowledge.writes import Writing

__all__ = ["GemPermit"]


@dataclass(frozen=True, slots=True)
class GemPermit:
    """The permission of one gem's writes; see the module."""

    gem_id: str
    grants_in: Callable[[sa.Connection], PermissionSet]
    """The gem's switches, read on the given connection."""
    core: KnowledgeCore
    created_after: int
    """Collections with a larger id that the gem created belong to this installation (creator rights)."""

    def __call__(self, conn: sa.Connection, writing: Writing) -> DailyLimits:
        grants = self.grants_in(conn)
        for action, target in self._questions(conn, grants, writing):
            decide(grants, action=action, target=target).require()
        return daily_limits(grants)

    def _questions(
        self, conn: sa.Connection, grants: PermissionSet, writing: Writing
    ) -> Iterator[tuple[Action, Target]]:
        """The questions in the order they are asked: the first refusal names what is missing."""
        if writing.what == "fact":
            assert writing.subject_kind is not None
            assert writing.predicate is not None
            yield "facts.write", FactSlot(writing.subject_kind, writing.predicate)
            if writing.sets_origin:
                yield "origin.override", None
        elif writing.what == "entity":
            assert writing.kind is not None
            yield "entities.write", Kind(writing.kind)
        elif writing.what == "collection":
            yield "collections.create", None
            if writing.collection_id is not None:
                yield "collections.write", self._in(conn, grants, writing.collection_id)
        else:
            assert writing.collection_id is not None
            yield "collections.write", self._in(conn, grants, writing.collection_id)
        # acting on what another writer wrote also needs changes.manage (K-PERM-17)
        if writing.writer is not None and writing.writer != f"gem:{self.gem_id}":
            yield "changes.manage", None

    def _in(self, conn: sa.Connection, grants: PermissionSet, collection_id: int) -> InCollection:
        tree, reach = collection_reach(conn, self.core, grants, gem_id=self.gem_id, created_after=self.created_after)
        return InCollection(tree, reach, collection_id)
