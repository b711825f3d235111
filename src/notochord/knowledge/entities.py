"""Entities: people, organisations, places, and the user (``self``).

Rules:

- The user is one entity of kind ``self``, created with the space. It is never resolved, listed or
  returned by ``get`` (OD-K30); facts about the user use subject ``"self"``.
- A merged entity points to the kept one (``merged_into``); every lookup follows the chain, so old ids
  keep working (K-ENT-12). Facts and identifiers stay on the row they were written to and are read
  through the merge closure (:meth:`Entities.members`).
- A deleted entity is marked, never removed; any use of its id is "not found: no entity" (K-ENT-13).
  Relations to it (current facts whose object is the entity or one merged into it) expire with
  it, in the same change, so undoing the deletion brings them back.
- Only the user and the assistant merge or delete (K-ENT-11); the gem facade never exposes them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import entities, facts, identifiers, space_meta
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.knowledge.arguments import as_id, counted, flag, text_or_none
from notochord.knowledge.identifiers import (
    MATCH_ORDER,
    check_kind,
    folded,
    identifier_forms,
    name_key,
    normalize_identifier,
)
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, check_length, refuse_nul
from notochord.knowledge.records import Entity, Identifier, ResolveResult
from notochord.knowledge.writes import (
    Actor,
    Permit,
    Store,
    Writing,
    data_versions,
    entities_changing,
    shares_entity_lookups,
)

__all__ = ["Entities", "listed_identifiers"]

_SELF_KEY = "self_entity_id"

# Built once: the look-ups every fact write makes; building a statement costs more than SQLite
# takes to run it.
_LINK = Prepared(sa.select(entities.c.deleted_at, entities.c.merged_into).where(entities.c.id == sa.bindparam("id")))
_KIND = Prepared(sa.select(entities.c.kind).where(entities.c.id == sa.bindparam("id")))
_LOOKUPS = "entity_lookups"
_LISTED = (entities.c.id, entities.c.kind, entities.c.display_name, entities.c.created_by, entities.c.created_at)
_MERGED_INTO = sa.select(entities.c.id).where(entities.c.merged_into.in_(sa.bindparam("ids", expanding=True)))
_PRIME = sa.select(entities.c.id, entities.c.kind, entities.c.merged_into, entities.c.deleted_at).where(
    entities.c.id.in_(sa.bindparam("ids", expanding=True))
)
_MERGED_INTO_ANY = (
    sa.select(entities.c.merged_into).where(entities.c.merged_into.in_(sa.bindparam("ids", expanding=True))).distinct()
)
# ids per statement: well below every backend's limit of bound parameters
_PRIME_CHUNK = 500
# The same two on SQLite, the ids given as one JSON array: expanding an IN list through SQLAlchemy
# costs more than SQLite takes to answer it (a batch primes hundreds of entities).
_PRIME_SQLITE = Prepared(
    sa.text("SELECT id, kind, merged_into, deleted_at FROM entities WHERE id IN (SELECT value FROM json_each(:ids))")
)
_MERGED_INTO_ANY_SQLITE = Prepared(
    sa.text("SELECT DISTINCT merged_into FROM entities WHERE merged_into IN (SELECT value FROM json_each(:ids))")
)


class Entities:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._self_id: int | None = None
        self._lock = threading.Lock()
        self._shared: tuple[str, dict[Any, Any]] | None = None

    # ------------------------------------------------------------ the user

    def ensure_self(self, conn: sa.Connection, *, now: str) -> int:
        found = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == _SELF_KEY)).scalar()
        if found is not None:
            return int(found)
        self_id = conn.execute(
            sa.insert(entities)
            .values(kind="self", display_name="self", name_folded="self", created_by="system", created_at=now)
            .returning(entities.c.id)
        ).scalar_one()
        conn.execute(sa.insert(space_meta).values(key=_SELF_KEY, value=str(self_id)))
        return int(self_id)

    def self_id(self, conn: sa.Connection) -> int:
        if self._self_id is None:
            value = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == _SELF_KEY)).scalar()
            if value is None:
                raise KnowledgeNotFoundError("entity", "self")
            self._self_id = int(value)
        return self._self_id

    # ------------------------------------------------------------ reading

    def _lookups(self, conn: sa.Connection) -> dict[Any, Any]:
        """Answers of :meth:`canonical`, :meth:`kind_of` and :meth:`members` valid for ``conn``.

        Shared by every transaction that sees the same entity-data version (a token renewed by
        every recorded entity write, :data:`~notochord.knowledge.writes.ENTITY_VERSION_KEY`), so a
        fact write about a known entity asks the database nothing about it; a write that is
        changing merges or deletions keeps its own until it ends.
        """
        memo = self._store.memo(conn)
        if memo is None:
            return {}
        found = memo.get(_LOOKUPS)
        if found is None:
            if shares_entity_lookups(conn):
                version = data_versions(conn).entities
                with self._lock:
                    if self._shared is None or self._shared[0] != version:
                        self._shared = (version, {})
                    found = self._shared[1]
            else:
                found = {}
            memo[_LOOKUPS] = found
        return found

    def canonical(self, conn: sa.Connection, entity_id: int) -> int:
        """Follow merges to the live entity; raise ``no entity`` for missing or deleted ones."""
        if as_id(entity_id) is None:
            raise KnowledgeNotFoundError("entity")
        lookups = self._lookups(conn)
        key = ("canonical", entity_id)
        found = lookups.get(key)
        if found is None:
            found = lookups[key] = self._follow(conn, entity_id)
        return int(found)

    def _follow(self, conn: sa.Connection, entity_id: int) -> int:
        seen: set[int] = set()
        current = entity_id
        while True:
            row = _LINK.first(conn, {"id": current})
            if row is None or row.deleted_at is not None or current in seen:
                raise KnowledgeNotFoundError("entity")
            if row.merged_into is None:
                return current
            seen.add(current)
            current = row.merged_into

    def kind_of(self, conn: sa.Connection, entity_id: int) -> str:
        lookups = self._lookups(conn)
        key = ("kind", entity_id)
        kind = lookups.get(key)
        if kind is None:
            found_kind = _KIND.scalar(conn, {"id": entity_id})
            if found_kind is None:
                raise KnowledgeNotFoundError("entity")
            kind = lookups[key] = str(found_kind)
        return str(kind)

    def members(self, conn: sa.Connection, entity_id: int) -> list[int]:
        """The entity and every entity merged into it, directly or through a chain."""
        lookups = self._lookups(conn)
        key = ("members", entity_id)
        found = lookups.get(key)
        if found is None:
            found = lookups[key] = tuple(self._members(conn, entity_id))
        return list(found)

    def prime(self, conn: sa.Connection, entity_ids: Iterable[int]) -> None:
        """Answer :meth:`canonical`, :meth:`kind_of` and :meth:`members` for many entities at once.

        One statement reads the entities not looked up yet, one more the entities merged into them;
        a live entity that is neither merged nor merged into is answered from these (itself, its
        kind, itself alone). Any other (merged, deleted, missing) is left to the single look-ups,
        which follow chains and raise exactly as before.
        """
        if self._store.memo(conn) is None:
            return  # nothing would remember the answers
        lookups = self._lookups(conn)
        wanted = sorted(
            i
            for i in set(entity_ids)
            if ("members", i) not in lookups or ("kind", i) not in lookups or ("canonical", i) not in lookups
        )
        sqlite = conn.dialect.name == "sqlite"
        for start in range(0, len(wanted), _PRIME_CHUNK):
            chunk = wanted[start : start + _PRIME_CHUNK]
            rows: Iterable[Any] = (
                _PRIME_SQLITE.rows(conn, {"ids": json.dumps(chunk)}) if sqlite else conn.execute(_PRIME, {"ids": chunk})
            )
            roots = {r.id: r.kind for r in rows if r.merged_into is None and r.deleted_at is None}
            if not roots:
                continue
            if sqlite:
                found = _MERGED_INTO_ANY_SQLITE.rows(conn, {"ids": json.dumps(sorted(roots))})
                merged_into = {r.merged_into for r in found}
            else:
                merged_into = set(conn.execute(_MERGED_INTO_ANY, {"ids": sorted(roots)}).scalars())
            for entity_id, kind in roots.items():
                if entity_id in merged_into:
                    continue
                lookups[("canonical", entity_id)] = entity_id
                lookups[("kind", entity_id)] = str(kind)
                lookups[("members", entity_id)] = (entity_id,)

    def known(self, conn: sa.Connection, entity_ids: Iterable[int]) -> dict[int, tuple[int, str, tuple[int, ...]]]:
        """The canonical entity, its kind and its members (:meth:`canonical`, :meth:`kind_of`,
        :meth:`members`) of each of ``entity_ids`` the transaction has looked up or can look up in
        the statements of :meth:`prime`; an id left out (merged, deleted, missing) is for the single
        look-ups, which follow chains and raise as usual.

        Answers come from the same remembered look-ups as the single ones, so they are exactly as
        current: a write that changes entities renews them (:func:`~notochord.knowledge.writes.forget_lookups`).
        """
        wanted = set(entity_ids)
        self.prime(conn, wanted)
        lookups = self._lookups(conn)
        found: dict[int, tuple[int, str, tuple[int, ...]]] = {}
        for entity_id in wanted:
            canonical = lookups.get(("canonical", entity_id))
            if canonical is None:
                continue
            kind = lookups.get(("kind", canonical))
            members = lookups.get(("members", canonical))
            if kind is not None and members is not None:
                found[entity_id] = (int(canonical), str(kind), members)
        return found

    def _members(self, conn: sa.Connection, entity_id: int) -> list[int]:
        found = [entity_id]
        frontier = [entity_id]
        while frontier:
            rows = conn.execute(_MERGED_INTO, {"ids": frontier}).scalars()
            frontier = [r for r in rows if r not in found]
            found.extend(frontier)
        return found

    def load(self, conn: sa.Connection, entity_id: int) -> Entity:
        canonical = self.canonical(conn, entity_id)
        row = conn.execute(sa.select(entities).where(entities.c.id == canonical)).one()
        if row.kind == "self":
            raise KnowledgeNotFoundError("entity")
        idents = conn.execute(
            sa.select(identifiers.c.type, identifiers.c.value, identifiers.c.normalized)
            .where(identifiers.c.entity_id.in_(self.members(conn, canonical)), identifiers.c.removed_at.is_(None))
            .order_by(identifiers.c.id)
        ).all()
        # two records merged into one often share an identifier: it is listed once, in its first spelling
        listed: dict[tuple[str, str], Identifier] = {}
        for id_type, value, normalized in idents:
            listed.setdefault((id_type, normalized), Identifier(type=id_type, value=value))
        return Entity(
            id=row.id,
            kind=row.kind,
            display_name=row.display_name,
            identifiers=tuple(listed.values()),
            created_by=row.created_by,
            created_at=row.created_at,
        )

    def get(self, entity_id: int) -> Entity:
        with self._store.read() as conn:
            return self.load(conn, entity_id)

    def find(self, conn: sa.Connection, given: Mapping[str, str], *, kind: str) -> int | None:
        """The oldest live entity of ``kind`` matching the first identifier type that matches."""
        for id_type in MATCH_ORDER:
            if id_type not in given:
                continue
            forms = identifier_forms(id_type, given[id_type])
            candidates = set(
                conn.execute(
                    sa.select(identifiers.c.entity_id).where(
                        identifiers.c.type == id_type,
                        identifiers.c.normalized.in_(forms),
                        identifiers.c.removed_at.is_(None),
                    )
                ).scalars()
            )
            if id_type == "name":
                norm = forms[0]
                by_display = conn.execute(
                    sa.select(entities.c.id, entities.c.display_name).where(entities.c.kind == kind)
                ).all()
                candidates.update(i for i, name in by_display if name_key(name) == norm)
            live: set[int] = set()
            for candidate in candidates:
                try:
                    live.add(self.canonical(conn, candidate))
                except KnowledgeNotFoundError:
                    continue
            hits = sorted(i for i in live if self.kind_of(conn, i) == kind)
            if hits:
                return hits[0]
        return None

    def list(self, *, kind: str, query: str | None = None) -> list[Entity]:
        """Live entities of ``kind`` by display name; ``query`` matches name or any identifier.

        The store filters and orders on the folded columns, so only the entities listed are read.
        An identifier matches as it is listed (in its first spelling), as :meth:`load` lists it.
        """
        check_kind(kind)
        text_or_none("query", query)
        live = [entities.c.kind == kind, entities.c.deleted_at.is_(None), entities.c.merged_into.is_(None)]
        needle = folded(query) if query else None
        if needle is not None:
            if _unstorable(needle):
                # no stored name or identifier can hold it: nothing matches
                return []
            pattern = _contains(needle)
            members = _closure(sa.select(entities.c.id).where(*live), "query_members")
            by_identifier = (
                sa.select(members.c.root)
                .join(identifiers, identifiers.c.entity_id == members.c.member)
                .where(identifiers.c.removed_at.is_(None), identifiers.c.value_folded.like(pattern, escape="\\"))
            )
            live.append(sa.or_(entities.c.name_folded.like(pattern, escape="\\"), entities.c.id.in_(by_identifier)))
        with self._store.read() as conn:
            # the order of the host's pages (browse.entity_page): the stored folded names, byte by byte
            rows = conn.execute(sa.select(*_LISTED).where(*live).order_by(entities.c.name_folded, entities.c.id)).all()
            listed = listed_identifiers(conn, sa.select(entities.c.id).where(*live)) if rows else {}
        found = [Entity(**r._asdict(), identifiers=tuple(listed.get(r.id, ()))) for r in rows]
        if needle is None:
            return found
        # the store matched every identifier spelling; an entity lists a shared one once, in its first
        return [
            e
            for e in found
            if needle in folded(e.display_name) or any(needle in folded(i.value) for i in e.identifiers)
        ]

    # ------------------------------------------------------------ writing

    def resolve(
        self,
        *,
        actor: Actor,
        given: Mapping[str, str],
        kind: str = "person",
        create: bool = False,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> ResolveResult | None:
        """Find an entity by identifiers; with ``create``, make one when none matches (OD-K26).
        ``permit`` is asked inside the write transaction that creates it."""
        check_kind(kind)
        # only true creates: bool("no") is true, and a caller passing the text would create one
        create = flag("create", create)
        cleaned = _check_identifiers(given)
        with self._store.read() as conn:
            found = self.find(conn, cleaned, kind=kind)
            if found is not None:
                return ResolveResult(entity=self.load(conn, found), created=False)
        if not create:
            return None
        display = cleaned.get("name") or next(iter(cleaned.values()))
        check_length("displayName", display)
        chars = len(display) + sum(len(v) for v in cleaned.values())
        with self._store.write(actor=actor, run_id=run_id, chars=chars, limits=limits, permit=permit) as tx:
            tx.allow(Writing("entity", kind=kind))
            # Someone may have created it between our read and the write lock.
            again = self.find(tx.conn, cleaned, kind=kind)
            if again is not None:
                return ResolveResult(entity=self.load(tx.conn, again), created=False)
            entity_id = tx.conn.execute(
                sa.insert(entities)
                .values(
                    kind=kind,
                    display_name=display,
                    name_folded=folded(display),
                    created_by=str(actor),
                    created_at=tx.now,
                )
                .returning(entities.c.id)
            ).scalar_one()
            for id_type, value in cleaned.items():
                self._insert_identifier(tx.conn, entity_id, id_type, value, actor=actor, now=tx.now)
            tx.record(
                op="entities.create",
                target_type="entity",
                target_id=entity_id,
                summary=f"created {kind} {display}",
                after={"kind": kind, "displayName": display, "identifiers": cleaned},
            )
            return ResolveResult(entity=self.load(tx.conn, entity_id), created=True)

    def add_identifier(
        self,
        *,
        actor: Actor,
        entity_id: int,
        id_type: str,
        value: str,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> tuple[str, int | None]:
        """Attach an identifier; returns ``("added", change_id)`` or ``("exists", None)``. ``permit``
        is asked inside the write transaction, about the entity's kind."""
        forms = identifier_forms(id_type, value)
        _refuse_nul(id_type, value)
        with self._store.write(actor=actor, run_id=run_id, chars=len(value), limits=limits, permit=permit) as tx:
            canonical = self.canonical(tx.conn, entity_id)
            kind = self.kind_of(tx.conn, canonical)
            if kind == "self":
                raise KnowledgeNotFoundError("entity")
            tx.allow(Writing("entity", kind=kind))
            existing = tx.conn.execute(
                sa.select(identifiers.c.id).where(
                    identifiers.c.entity_id.in_(self.members(tx.conn, canonical)),
                    identifiers.c.type == id_type,
                    identifiers.c.normalized.in_(forms),
                    identifiers.c.removed_at.is_(None),
                )
            ).first()
            if existing is not None:
                return "exists", None
            ident_id = self._insert_identifier(tx.conn, canonical, id_type, value, actor=actor, now=tx.now)
            change_id = tx.record(
                op="entities.addIdentifier",
                target_type="identifier",
                target_id=ident_id,
                touched=[("entity", canonical)],
                summary=f"added {id_type} {value.strip()} to {_display_name(tx.conn, canonical)}",
                after={"type": id_type, "value": value.strip()},
            )
            return "added", change_id

    def merge(self, *, actor: Actor, keep: int, merge: int, run_id: str | None = None) -> int:
        """Merge entity ``merge`` into ``keep``; returns the change id."""
        _host_only(actor, "merge")
        with self._store.write(actor=actor, run_id=run_id) as tx:
            kept = self.canonical(tx.conn, keep)
            merged = self.canonical(tx.conn, merge)
            if kept == merged:
                raise KnowledgeValidationError("cannot merge an entity into itself", reason="merge_itself")
            kept_kind, merged_kind = self.kind_of(tx.conn, kept), self.kind_of(tx.conn, merged)
            if "self" in {kept_kind, merged_kind}:
                raise KnowledgeValidationError("the user (self) cannot be merged", reason="merge_self")
            if kept_kind != merged_kind:
                # the kept kind would decide which gems' switches reach the other's facts
                merged_name, kept_name = _display_name(tx.conn, merged), _display_name(tx.conn, kept)
                raise KnowledgeValidationError(
                    f"{merged_name} is {_article(merged_kind)} and "
                    f"{kept_name} {_article(kept_kind)}: only entities of the same kind can "
                    "be merged",
                    reason="merge_kinds",
                    values={
                        "merged": merged_name,
                        "merged_kind": merged_kind,
                        "kept": kept_name,
                        "kept_kind": kept_kind,
                    },
                )
            entities_changing(tx.conn)
            tx.conn.execute(sa.update(entities).where(entities.c.id == merged).values(merged_into=kept))
            return tx.record(
                op="entities.merge",
                target_type="entity",
                target_id=merged,
                touched=[("entity", kept)],
                summary=f"merged {_display_name(tx.conn, merged)} into {_display_name(tx.conn, kept)}",
                before={"mergedInto": None},
                after={"mergedInto": kept},
            )

    def delete(self, *, actor: Actor, entity_id: int, run_id: str | None = None) -> int:
        """Mark an entity deleted; returns the change id. Revertible."""
        _host_only(actor, "delete")
        with self._store.write(actor=actor, run_id=run_id) as tx:
            canonical = self.canonical(tx.conn, entity_id)
            if self.kind_of(tx.conn, canonical) == "self":
                raise KnowledgeValidationError("the user (self) cannot be deleted", reason="delete_self")
            entities_changing(tx.conn)
            tx.conn.execute(sa.update(entities).where(entities.c.id == canonical).values(deleted_at=tx.now))
            relations = (
                tx.conn.execute(
                    sa.select(facts.c.id).where(
                        facts.c.object_id.in_(self.members(tx.conn, canonical)), facts.c.valid_to.is_(None)
                    )
                )
                .scalars()
                .all()
            )
            change_id = tx.record(
                op="entities.delete",
                target_type="entity",
                target_id=canonical,
                touched=[("fact", f) for f in relations],
                summary=f"deleted {_display_name(tx.conn, canonical)}"
                + (f" and {counted(len(relations), 'relation')} to it" if relations else ""),
            )
            if relations:
                tx.conn.execute(
                    sa.update(facts).where(facts.c.id.in_(relations)).values(valid_to=tx.now, expired_by=change_id)
                )
            return change_id

    def _insert_identifier(
        self, conn: sa.Connection, entity_id: int, id_type: str, value: str, *, actor: Actor, now: str
    ) -> int:
        return int(
            conn.execute(
                sa.insert(identifiers)
                .values(
                    entity_id=entity_id,
                    type=id_type,
                    value=value.strip(),
                    normalized=normalize_identifier(id_type, value),
                    value_folded=folded(value.strip()),
                    created_by=str(actor),
                    created_at=now,
                )
                .returning(identifiers.c.id)
            ).scalar_one()
        )


def _refuse_nul(id_type: str, value: str) -> None:
    # refused before the look-up: PostgreSQL cannot even compare such a text
    refuse_nul("the entity name" if id_type == "name" else f"the {id_type} identifier", value)


def _check_identifiers(given: Mapping[str, str]) -> dict[str, str]:
    if not given:
        raise KnowledgeValidationError(
            "resolve needs at least one identifier: email, phone, domain, url, handle or name"
        )
    cleaned: dict[str, str] = {}
    for id_type, value in given.items():
        normalize_identifier(id_type, value)  # validates type, length and form
        _refuse_nul(id_type, value)
        cleaned[id_type] = value.strip()
    return cleaned


def _article(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _display_name(conn: sa.Connection, entity_id: int) -> str:
    return str(conn.execute(sa.select(entities.c.display_name).where(entities.c.id == entity_id)).scalar_one())


def _host_only(actor: Actor, what: str) -> None:
    if actor.kind == "gem":
        raise KnowledgeValidationError(f"only the user or the assistant can {what} entities")


def _unstorable(text: str) -> bool:
    """Whether ``text`` holds what no stored text holds (U+0000, a lone surrogate): the write path
    refuses both, and PostgreSQL cannot even compare a NUL."""
    return "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text)


def _contains(needle: str) -> str:
    """A LIKE pattern matching text that contains ``needle`` (already folded)."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _closure(roots: sa.Select[tuple[int]] | Sequence[int], name: str) -> sa.CTE:
    """``(root, member)``: each of ``roots`` with itself and every entity merged into it, through chains."""
    seed = sa.select(entities.c.id.label("root"), entities.c.id.label("member")).where(entities.c.id.in_(roots))
    closure = seed.cte(name, recursive=True)
    step = sa.select(closure.c.root, entities.c.id).join(entities, entities.c.merged_into == closure.c.member)
    return closure.union(step)


def listed_identifiers(
    conn: sa.Connection, roots: sa.Select[tuple[int]] | Sequence[int]
) -> dict[int, list[Identifier]]:
    """The identifiers of each of ``roots`` (live entities) as :meth:`Entities.load` lists them, read
    in one statement: their own and those of every entity merged into them."""
    members = _closure(roots, "listed_members")
    rows = conn.execute(
        sa.select(members.c.root, identifiers.c.type, identifiers.c.value, identifiers.c.normalized)
        .join(identifiers, identifiers.c.entity_id == members.c.member)
        .where(identifiers.c.removed_at.is_(None))
        .order_by(identifiers.c.id)
    ).all()
    found: dict[int, list[Identifier]] = {}
    # two records merged into one often share an identifier: it is listed once, in its first spelling
    seen: set[tuple[int, str, str]] = set()
    for root, id_type, value, normalized in rows:
        if (root, id_type, normalized) not in seen:
            seen.add((root, id_type, normalized))
            found.setdefault(int(root), []).append(Identifier(type=id_type, value=value))
    return found
