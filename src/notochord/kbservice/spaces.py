"""Where the service's data lives: every organization's records in that organization's own space.

Rules:

- A knowledge base, an agent, their grants, links, audit entries and cost records are stored in the
  space of the organization that owns them (``nc.org(org_id)``); nothing is shared between spaces.
- A non-superadmin is only ever looked up in their own organization's space, so another
  organization's resource is never even read for them: it is "not found" exactly like an id that
  never existed (KB-GEN-11, OD-B13).
- A superadmin may address any organization's resource by id (OD-B13). The directory answers "which
  organization holds this id": the caller's own space first, then the organization remembered for
  the id, then every organization space on disk. Ids are random UUIDs, so an id is found in at most
  one space.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa

from notochord.db.engine import write_tx
from notochord.db.schema import kb_agents, kb_knowledge_bases
from notochord.kbservice.actors import ORG_ID, Actor
from notochord.kbservice.errors import KbNotFoundError
from notochord.kbservice.policy import ResourceType
from notochord.knowledge.core import KnowledgeCore

__all__ = ["Directory", "Found", "OrgStore", "SpaceLike", "Spaces", "require_live"]


class SpaceLike(Protocol):
    """What the service needs of a space: its knowledge core (store and clock)."""

    @property
    def core(self) -> KnowledgeCore: ...


class Spaces(Protocol):
    """What the service needs of an open data directory (``notochord.Notochord`` satisfies it)."""

    def org(self, org_id: str, *, create: bool = False) -> SpaceLike: ...

    def spaces(self) -> list[str]: ...


@dataclass(frozen=True)
class OrgStore:
    """The service's handle on one organization's space."""

    organization_id: str
    core: KnowledgeCore

    def now(self) -> str:
        return self.core.store.now()

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with self.core.store.read() as conn:
            yield conn

    @contextlib.contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """A write transaction holding the space's write lock from its first statement."""
        with write_tx(self.core.store.engine) as conn:
            yield conn


@dataclass(frozen=True)
class Found:
    """A resource row and the organization store it was found in."""

    store: OrgStore
    row: Any


_TABLES = {ResourceType.KB: kb_knowledge_bases, ResourceType.AGENT: kb_agents}


def _live(type: ResourceType, resource_id: str) -> sa.Select[Any]:
    table = _TABLES[type]
    query = sa.select(table).where(table.c.id == resource_id)
    if type is ResourceType.AGENT:
        query = query.where(table.c.deleted_at.is_(None))
    return query


def require_live(conn: sa.Connection, *, type: ResourceType, resource_id: str) -> Any:
    """The resource's row, re-read inside a write transaction (it may have gone since the checks).

    Raises:
        KbNotFoundError: it was deleted in the meantime.
    """
    row = conn.execute(_live(type, resource_id)).first()
    if row is None:
        raise KbNotFoundError(type.noun)
    return row


class Directory:
    """Finds organization stores, and resources by id across them."""

    def __init__(self, spaces: Spaces) -> None:
        self._spaces = spaces
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def store(self, organization_id: str) -> OrgStore:
        # Organizations come from verified tokens, not from a typed option: their space is made on first use.
        return OrgStore(organization_id, self._spaces.org(organization_id, create=True).core)

    def organizations(self) -> list[str]:
        """Every organization with a space on disk."""
        found = []
        for name in self._spaces.spaces():
            org = name.removeprefix("org:")
            if name.startswith("org:") and ORG_ID.match(org):
                found.append(org)
        return found

    def _candidates(self, actor: Actor, resource_id: str) -> Iterator[str]:
        yield actor.organization_id
        if not actor.is_superadmin:
            return
        with self._lock:
            remembered = self._known.get(resource_id)
        if remembered is not None and remembered != actor.organization_id:
            yield remembered
        for org in self.organizations():
            if org not in {actor.organization_id, remembered}:
                yield org

    def find(self, *, actor: Actor, type: ResourceType, resource_id: str) -> Found | None:
        """The live resource ``resource_id`` of ``type`` that ``actor`` may address, if any.

        Soft-deleted agents count as missing (OD-B18).
        """
        query = _live(type, resource_id)
        for org in self._candidates(actor, resource_id):
            store = self.store(org)
            with store.read() as conn:
                row = conn.execute(query).first()
            if row is not None:
                self.remember(resource_id, org)
                return Found(store, row)
        return None

    def remember(self, resource_id: str, organization_id: str) -> None:
        with self._lock:
            self._known[resource_id] = organization_id

    def forget(self, resource_id: str) -> None:
        with self._lock:
            self._known.pop(resource_id, None)
