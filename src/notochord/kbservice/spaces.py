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
- What a request needs to ask the permission question (the resource row and the caller's grant on
  it, an agent's links) is remembered per space under the space's *access version*, a random token
  in ``space_meta`` that every write transaction of the service replaces (:meth:`OrgSpace.write`).
  A request reads the token in its own read transaction, one indexed row, and uses what was
  remembered only under the token it sees; any grant, rename, deletion or link committed since, by
  this process or another on the same store, replaced the token, so the next request reads the rows
  again. The question itself is still asked on every request (:func:`~.policy.decide`).
- A request that keeps its read transaction open for what it reads next (:meth:`Directory.reading`:
  searches, retrievals, document lists) reads, on SQLite, the space's data version (what the search
  caches are keyed by, :mod:`notochord.knowledge.candidates`) in the same statement as the access
  version, so both come from the snapshot the permission question is answered in.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa

from notochord.db.migrate import migrate
from notochord.db.schema import kb_agents, kb_grants, kb_knowledge_bases, space_meta
from notochord.errors import SpaceNotFoundError
from notochord.kbservice.actors import ORG_ID, Actor
from notochord.kbservice.errors import KbNotFoundError
from notochord.kbservice.policy import ResourceType
from notochord.knowledge.candidates import DATA_VERSION_COLUMNS, DataVersion, data_version_of
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.writes import USER

__all__ = [
    "ACCESS_VERSION_KEY",
    "Directory",
    "Found",
    "OrgSpace",
    "SpaceLike",
    "Spaces",
    "access_version",
    "require_live",
]

ACCESS_VERSION_KEY = "kb_access_version"
"""``space_meta`` key of the token that every write transaction of the service replaces."""
_READ_ACCESS_VERSION = Prepared(sa.select(space_meta.c.value).where(space_meta.c.key == ACCESS_VERSION_KEY))
_UPDATE_ACCESS_VERSION = Prepared(
    sa.update(space_meta).where(space_meta.c.key == ACCESS_VERSION_KEY).values(value=sa.bindparam("token"))
)
_INSERT_ACCESS_VERSION = Prepared(sa.insert(space_meta).values(key=ACCESS_VERSION_KEY, value=sa.bindparam("token")))
_REMEMBERED = 4096
"""Entries of the access cache before it starts again (it holds rows of live requests only)."""


_READ_VERSIONS = Prepared(
    sa.text(
        f"SELECT (SELECT value FROM space_meta WHERE key = '{ACCESS_VERSION_KEY}') AS access, {DATA_VERSION_COLUMNS}"
    )
)


def access_version(conn: sa.Connection) -> str | None:
    """The access version ``conn``'s transaction sees (``None`` before the service's first write)."""
    value = _READ_ACCESS_VERSION.scalar(conn, {})
    return None if value is None else str(value)


def _versions(conn: sa.Connection) -> tuple[str | None, DataVersion | None]:
    """The access version and, on SQLite, the data version searches are keyed by, in one statement
    of ``conn``'s transaction: a search then asks the store one statement fewer."""
    if conn.dialect.name != "sqlite":
        return access_version(conn), None
    row = _READ_VERSIONS.first(conn, {})
    return (None if row[0] is None else str(row[0])), data_version_of(row[1], row[2])


def _bump_access_version(conn: sa.Connection) -> None:
    """Replace the access version, inside the write transaction that changes what it covers.

    The write holds the space's write lock, so the update-then-insert cannot race another writer.
    """
    token = uuid.uuid4().hex
    if not _UPDATE_ACCESS_VERSION.run(conn, {"token": token}):
        _INSERT_ACCESS_VERSION.run(conn, {"token": token})


class SpaceLike(Protocol):
    """What the service needs of a space: its knowledge core (store and clock)."""

    @property
    def core(self) -> KnowledgeCore: ...


class Spaces(Protocol):
    """What the service needs of an open data directory (``notochord.Notochord`` satisfies it)."""

    def org(self, org_id: str, *, create: bool = False) -> SpaceLike: ...

    def spaces(self) -> list[str]: ...


class OrgSpace:
    """The service's handle on one organization's space.

    An organization that has no space yet reads as empty and gets its space on its first write
    (or first use of :attr:`core`): a request that only reads never creates a database file.
    """

    def __init__(
        self,
        organization_id: str,
        core: KnowledgeCore | None = None,
        *,
        find: Callable[[], KnowledgeCore | None] | None = None,
        create: Callable[[], KnowledgeCore] | None = None,
        empty: Callable[[], sa.Engine] | None = None,
    ) -> None:
        self.organization_id = organization_id
        self._core = core
        self._find = find
        self._create = create
        self._empty = empty

    @property
    def core(self) -> KnowledgeCore:
        if self._core is None:
            assert self._create is not None, "an OrgSpace without a core needs a way to create it"
            self._core = self._create()
        return self._core

    def now(self) -> str:
        return self.core.store.now()

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        if self._core is None and self._find is not None:
            self._core = self._find()  # another request may have created the space meanwhile
        if self._core is None and self._empty is not None:
            with self._empty().connect() as conn:
                yield conn
            return
        with self.core.store.read() as conn:
            yield conn

    @contextlib.contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """A write transaction holding the space's write lock from its first statement.

        It is the knowledge store's unit of work (``Store.write``), opened as the vault's user: the
        service's own tables are written here, and knowledge rows only through ``knowledge/`` calls.
        Every such transaction replaces the space's access version as its last statement, so what
        requests remembered of the rows it wrote is never used again once it commits.
        """
        with self.core.store.write(actor=USER, run_id=None) as tx:
            yield tx.conn
            _bump_access_version(tx.conn)


@dataclass(frozen=True)
class Found:
    """A resource row and the organization store it was found in."""

    store: OrgSpace
    row: Any
    grant: tuple[str, str | None] | None = None
    """``(user id, permission granted to that user or None)``, read in the same snapshot as the row
    when :meth:`Directory.find` was asked for it, so the permission question needs no second read."""
    version: str | None = None
    """The space's access version in the snapshot the row was read in (``None``: nothing may be
    remembered under it), for what else a request remembers about the resource."""
    data_version: DataVersion | None = None
    """The space's data version in that snapshot, when :meth:`Directory.reading` read it with the
    access version (``None``: a search reads it itself)."""


_TABLES = {ResourceType.KB: kb_knowledge_bases, ResourceType.AGENT: kb_agents}


def _live(type: ResourceType, resource_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    table = _TABLES[type]
    query = sa.select(table).where(table.c.id == resource_id)
    if type is ResourceType.AGENT:
        query = query.where(table.c.deleted_at.is_(None))
    return query


def _found_query(type: ResourceType, *, with_grant: bool) -> sa.Select[Any]:
    """The live resource by id; with the grant of one user on it, in the same statement.

    Built once: the statement is the same for every request, only its parameters change.
    """
    table = _TABLES[type]
    query = _live(type, sa.bindparam("resource_id", type_=sa.String))
    if not with_grant:
        return query
    grant = sa.and_(
        kb_grants.c.resource_type == str(type),
        kb_grants.c.resource_id == table.c.id,
        kb_grants.c.user_id == sa.bindparam("user_id", type_=sa.String),
    )
    return query.add_columns(kb_grants.c.permission.label("granted")).outerjoin(kb_grants, grant)


_WITH_GRANT = {type: _found_query(type, with_grant=True) for type in ResourceType}


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
        self._empty_engine: sa.Engine | None = None
        # key → (access version, value); each entry is replaced whole, so a reader on another thread
        # sees the old pair or the new one
        self._access: dict[tuple[Any, ...], tuple[str, Any]] = {}

    def store(self, organization_id: str) -> OrgSpace:
        """The organization's store; one without a space yet reads as empty until its first write.

        Organizations come from verified tokens, not from a typed option, so a write makes the space.
        """
        core = self._existing(organization_id)
        if core is not None:
            return OrgSpace(organization_id, core)
        return OrgSpace(
            organization_id,
            find=lambda: self._existing(organization_id),
            create=lambda: self._spaces.org(organization_id, create=True).core,
            empty=self._empty,
        )

    def _existing(self, organization_id: str) -> KnowledgeCore | None:
        try:
            return self._spaces.org(organization_id).core
        except SpaceNotFoundError:
            return None

    def _empty(self) -> sa.Engine:
        """One in-memory database with the schema and no rows: what a space without data reads as."""
        with self._lock:
            if self._empty_engine is None:
                name = f"file:notochord-empty-{uuid.uuid4().hex}?mode=memory&cache=shared"
                engine = sa.create_engine(
                    "sqlite+pysqlite://",
                    creator=lambda: sqlite3.connect(name, uri=True, check_same_thread=False),
                    poolclass=sa.pool.StaticPool,
                )
                migrate(engine)
                self._empty_engine = engine
            return self._empty_engine

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

    def find(self, *, actor: Actor, type: ResourceType, resource_id: str, with_grant: bool = False) -> Found | None:
        """The live resource ``resource_id`` of ``type`` that ``actor`` may address, if any.

        Soft-deleted agents count as missing (OD-B18). With ``with_grant``, the actor's grant on it is
        read in the same transaction (:attr:`Found.grant`): one read per request instead of two.
        """
        for org in self._candidates(actor, resource_id):
            store = self.store(org)
            with store.read() as conn:
                found = self._found(store, conn, actor=actor, type=type, resource_id=resource_id)
            if found is not None:
                self.remember(resource_id, org)
                return found if with_grant else Found(store, found.row, version=found.version)
        return None

    @contextlib.contextmanager
    def reading(self, *, actor: Actor, type: ResourceType, resource_id: str) -> Iterator[tuple[Found, sa.Connection]]:
        """Like :meth:`find` with the grant, but the read transaction the resource was found in stays
        open for the ``with`` block, so the caller reads everything else in the same snapshot.

        Raises:
            KbNotFoundError: no live resource ``actor`` may address.
        """
        for org in self._candidates(actor, resource_id):
            store = self.store(org)
            with store.read() as conn:
                found = self._found(store, conn, actor=actor, type=type, resource_id=resource_id, data=True)
                if found is not None:
                    self.remember(resource_id, org)
                    yield found, conn
                    return
        raise KbNotFoundError(type.noun)

    def _found(
        self,
        store: OrgSpace,
        conn: sa.Connection,
        *,
        actor: Actor,
        type: ResourceType,
        resource_id: str,
        data: bool = False,
    ) -> Found | None:
        """The live resource with ``actor``'s grant, in ``conn``'s snapshot: remembered under the access
        version that snapshot sees, or read (and remembered) when the version moved. With ``data``
        the data version is read with the access version (:attr:`Found.data_version`).

        Only a caller's own organization is remembered: a superadmin's look-ups across spaces are
        read every time."""
        version: str | None = None
        data_version: DataVersion | None = None
        if not actor.is_superadmin:
            version, data_version = _versions(conn) if data else (access_version(conn), None)
        key = (store.organization_id, type, resource_id, actor.user_id)
        if version is not None:
            known = self.recall(key, version)
            if known is not None:
                row, granted = known
                return Found(store, row, (actor.user_id, granted), version, data_version)
        row = conn.execute(_WITH_GRANT[type], {"resource_id": resource_id, "user_id": actor.user_id}).first()
        if row is None:
            return None
        if version is not None:
            self.keep(key, version, (row, row.granted))
        return Found(store, row, (actor.user_id, row.granted), version, data_version)

    def recall(self, key: tuple[Any, ...], version: str) -> Any:
        """What was kept under ``key`` while the access version was ``version`` (``None``: nothing)."""
        known = self._access.get(key)
        if known is None or known[0] != version:
            return None
        return known[1]

    def keep(self, key: tuple[Any, ...], version: str, value: Any) -> None:
        """Keep ``value`` for ``key`` as read under the access version ``version``.

        ``key`` starts with the organization whose space it was read from and names the caller, so
        nothing kept for one caller or one space answers another."""
        with self._lock:
            if len(self._access) >= _REMEMBERED:
                self._access.clear()
            self._access[key] = (version, value)

    def remember(self, resource_id: str, organization_id: str) -> None:
        with self._lock:
            self._known[resource_id] = organization_id

    def forget(self, resource_id: str) -> None:
        with self._lock:
            self._known.pop(resource_id, None)
