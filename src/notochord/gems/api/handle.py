"""The state and helpers every part of ``ctx.knowledge`` shares: one gem, one run, one space.

:class:`KnowledgeHandle` is what a part (``ctx.knowledge.facts``, ``.documents``, …) holds; the
parts import it from here, and :class:`~notochord.gems.api.knowledge.KnowledgeApi` (the facade
that assembles them) is one. So the part modules import this one and never each other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

import anyio.lowlevel
import anyio.to_thread
import sqlalchemy as sa

from notochord.access.change_scope import Scope
from notochord.access.decisions import daily_limits, readable_ranges
from notochord.access.permissions import PermissionSet
from notochord.access.permit import GemPermit
from notochord.errors import KnowledgeNotFoundError, KnowledgePermissionError
from notochord.gems.refs import RefCodec
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.predicates import PredicateRange
from notochord.knowledge.quotas import DailyLimits, check_run_id
from notochord.knowledge.writes import Actor
from notochord.net.hosts import NetworkPermission

__all__ = ["KnowledgeHandle"]

T = TypeVar("T")

_RANGES_KEPT = 64


class KnowledgeHandle:
    """One gem's and one run's way into the knowledge store, shared by every part of ``ctx.knowledge``."""

    def __init__(
        self,
        *,
        core: KnowledgeCore,
        gem_id: str,
        run_id: str,
        refs: RefCodec,
        grants: Callable[[], PermissionSet],
        scope: Scope,
        grants_in: Callable[[sa.Connection], PermissionSet] | None = None,
        manifest_network: NetworkPermission | None = None,
        created_after: int = 2**62,
        permission_hint: Callable[[str], str | None] | None = None,
    ) -> None:
        self.core = core
        self.gem_id = gem_id
        self.actor = Actor.gem(gem_id)
        self.run_id = run_id
        self.refs = refs
        self.grants = grants
        self.grants_in: Callable[[sa.Connection], PermissionSet] = grants_in or (lambda _conn: grants())
        """The grants read on the caller's connection (inside a write transaction: stable until it commits)."""
        self.scope = scope
        self.manifest_network = manifest_network
        self.created_after = created_after
        """Collections with a larger id that the gem created belong to this installation (creator rights)."""
        self.permission_hint = permission_hint
        """Turns a missing permission into what the person can do about it (``None``: the default words)."""
        self._ranges: dict[tuple[PermissionSet, str], list[PredicateRange]] = {}
        self._attach_parts()

    def _attach_parts(self) -> None:
        """Where a facade built on this handle adds its parts (``ctx.knowledge.facts``, …)."""

    async def run(self, work: Callable[[], T], *, short_read: bool = False) -> T:
        """Run ``work`` (the synchronous core) in a worker thread.

        ``short_read``: ``work`` is one short indexed read (a fact lookup). On SQLite it then runs in
        this thread: a read in WAL mode never waits for a writer and takes well under a millisecond,
        less than the hop to a worker thread, and the event loop is given its turn right after, as
        the hop would give it. Other backends answer over a connection, so they keep the hop.
        """
        try:
            if short_read and self.core.store.engine.dialect.name == "sqlite":
                result = work()
                await anyio.lowlevel.checkpoint()
                return result
            return await anyio.to_thread.run_sync(work)
        except KnowledgePermissionError as error:
            raise self._hinted(error) from None

    def _hinted(self, error: KnowledgePermissionError) -> KnowledgePermissionError:
        hint = self.permission_hint(error.permission) if self.permission_hint is not None else None
        return error if hint is None else KnowledgePermissionError(error.permission, hint=hint)

    # ---------------------------------------------------------------- helpers for the parts

    def limits(self, grants: PermissionSet) -> DailyLimits:
        return daily_limits(grants)

    def permit(self) -> GemPermit:
        """The one decision of this gem's writes, asked by the knowledge store inside each write
        transaction (reads :attr:`grants_in` there, so a revoke before the write always holds)."""
        return GemPermit(gem_id=self.gem_id, grants_in=self.grants_in, core=self.core, created_after=self.created_after)

    def run_id_of(self, given: object) -> str:
        if given is None:
            return self.run_id
        return check_run_id(given)

    def readable_ranges(self, conn: sa.Connection, kind: str) -> list[PredicateRange]:
        """The predicate ranges of ``kind`` this gem may read, its switches read on ``conn``.

        The switches are checked every time (against their grants version); the ranges derived from
        the same switches are reused.
        """
        grants = self.grants_in(conn)
        key = (grants, kind)
        found = self._ranges.get(key)
        if found is None:
            if len(self._ranges) > _RANGES_KEPT:
                self._ranges.clear()
            found = self._ranges[key] = readable_ranges(grants, subject_kind=kind)
        return list(found)

    def entity_id(self, ref: object, *, within: sa.Connection | None = None) -> int:
        """The canonical id of an entity ref (the user is never reachable by ref); read on ``within``
        when the caller holds a read transaction."""
        return self.subject(ref, allow_self=False, within=within)[0]

    def subject(
        self, subject: object, *, allow_self: bool = True, within: sa.Connection | None = None
    ) -> tuple[int, str]:
        """The canonical id and kind of ``'self'`` or an entity ref."""
        with self.core.store.read() if within is None else contextlib.nullcontext(within) as conn:
            if allow_self and subject == "self":
                return self.core.entities.self_id(conn), "self"
            entity_id = self.core.entities.canonical(conn, self.refs.decode("ent", subject))
            kind = self.core.entities.kind_of(conn, entity_id)
            if kind == "self":
                raise KnowledgeNotFoundError("entity")
            return entity_id, kind
