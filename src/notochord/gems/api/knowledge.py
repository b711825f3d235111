"""``ctx.knowledge``: the only way a gem reaches the user's knowledge (K-CON-02).

Every method is a coroutine; the synchronous core runs in a worker thread. Each call:

- takes the gem's switches as they are now (checked against their grants version, so a switch moved
  anywhere holds from the next call, K-PERM-04, P-KVAL-08); a write hands the knowledge store its
  :class:`~notochord.access.permit.GemPermit`, which reads them once, inside the write transaction,
  for the permission and the quota together (P-KVAL-09),
- speaks only in this gem's refs, never internal ids (K-CON-05/06),
- follows the order of OD-K07: validation, refs, predicate resolution, permission, quota, write
  (validation is the knowledge store's; the parts here parse options and decode refs).

Query methods (``profile.get``, ``facts.lookup``, ``changes.list``) leave out what the gem may not
see, with the permission ranges compiled into the SQL; they never raise for permissions. Methods on
one object raise ``lacks knowledge permission <the narrowest permission that would allow it>``.

Object arguments are accepted as a ``dict`` in the seed's camelCase or as snake_case keyword
arguments: ``facts.put({"predicateHint": "pref.food.rated", "value": "Stew"})`` and
``facts.put(predicate_hint="pref.food.rated", value="Stew")`` are the same call.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.access.decisions import Kind, decide, require
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.gems.api.documents import CollectionsApi, DocumentsApi, SearchHit
from notochord.gems.api.documents import search as search_documents
from notochord.gems.api.handle import KnowledgeHandle
from notochord.gems.api.options import names as _names
from notochord.gems.api.options import options as _options
from notochord.gems.api.results import (
    AddIdentifierResult,
    ChangeView,
    EntityView,
    FactView,
    IdentifierView,
    ProfileFact,
    PutResult,
    ResolvedEntity,
    RetractResult,
    RevertResult,
)
from notochord.knowledge.arguments import flag
from notochord.knowledge.facts import MISSING
from notochord.knowledge.identifiers import check_kind
from notochord.knowledge.quotas import DailyLimits
from notochord.knowledge.records import Entity, Fact

__all__ = ["KnowledgeApi"]


class _Part:
    def __init__(self, api: KnowledgeApi) -> None:
        self._api = api


class ProfileApi(_Part):
    async def get(self, prefix: str | None = None) -> list[ProfileFact]:
        """The user's pinned facts this gem may read, optionally under ``prefix`` (EX-03)."""
        api = self._api

        def work() -> list[ProfileFact]:
            found = api.core.facts.lookup("self", prefix, rules=api.readable_ranges, pinned_only=True)
            return [ProfileFact(predicate=f.predicate, value=f.value) for f in found]

        return await api.run(work, short_read=True)


class FactsApi(_Part):
    async def lookup(self, subject: str = "self", prefix: str | None = None) -> list[FactView]:
        """Current facts of ``'self'`` or an entity ref under ``prefix`` that this gem may read (EX-04)."""
        api = self._api

        def work() -> list[FactView]:
            # one read: the subject resolved once, the switches read in the snapshot of the facts
            given: int | str = "self" if subject == "self" else api.refs.decode("ent", subject)
            found = api.core.facts.lookup(given, prefix, rules=api.readable_ranges, by_ref=True)
            return api.fact_views(found)

        return await api.run(work, short_read=True)

    async def put(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> PutResult:
        """Write a fact (EX-05): ``subject``, ``predicateHint``, ``value``/``object``, ``description``,
        ``sourceRef``, ``runId``, and with ``origin.override`` also ``origin`` and ``source``."""
        api = self._api
        o = _options(
            args,
            kwargs,
            _names(
                "subject",
                "predicate_hint",
                "description",
                "value",
                "object",
                "source_ref",
                "run_id",
                "origin",
                "source",
            ),
        )

        def work() -> PutResult:
            # Validation is the knowledge store's (once); here only what belongs to the gem's run and refs.
            run_id = api.run_id_of(o.get("run_id"))
            result = api.core.facts.put(
                actor=api.actor,
                subject=o.get("subject", "self"),
                hint=o.get("predicate_hint"),
                value=o.get("value", MISSING),
                object_id=o.get("object"),
                description=o.get("description"),
                origin=o.get("origin"),
                source=o.get("source"),
                source_ref=o.get("source_ref"),
                run_id=run_id,
                permit=api.permit(),
                decode_ref=lambda ref: api.refs.decode("ent", ref),
            )
            return PutResult(status=result.status, ref=api.refs.encode("fact", result.id), predicate=result.predicate)

        return await api.run(work)

    async def retract(self, ref: str) -> RetractResult:
        """Expire a fact this gem may write (and, if someone else wrote it, ``changes.manage``)."""
        api = self._api

        def work() -> RetractResult:
            fact_id = api.refs.decode("fact", ref)
            result = api.core.facts.retract(actor=api.actor, fact_id=fact_id, run_id=api.run_id, permit=api.permit())
            return RetractResult(status=result.status)

        return await api.run(work)


class EntitiesApi(_Part):
    async def resolve(
        self, identifiers: Mapping[str, str], options: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> ResolvedEntity | None:
        """Exchange identifiers for a ref (EX-07); ``kind`` defaults to ``person``; ``create`` needs
        ``entities.write:<kind>`` even when a match exists (OD-K28)."""
        api = self._api
        o = _options(options, kwargs, _names("kind", "create"))

        def work() -> ResolvedEntity | None:
            kind = check_kind(o.get("kind", "person"))
            # true or false only: bool("false") is True, and a gem passing the text would create
            # what it meant only to look up
            raw_create = o.get("create")
            create = False if raw_create is None else flag("create", raw_create)
            if not isinstance(identifiers, Mapping):
                raise KnowledgeValidationError("identifiers must be an object such as {'email': 'a@b.nl'}")
            grants = api.grants()
            if create:
                require(grants, action="entities.write", target=Kind(kind))
            require(grants, action="entities.resolve", target=Kind(kind))
            # entities.write is asked up front too: create needs it even when a match exists (OD-K28)
            found = api.core.entities.resolve(
                actor=api.actor,
                given=dict(identifiers),
                kind=kind,
                create=create,
                run_id=api.run_id,
                permit=api.permit(),
            )
            if found is None:
                return None
            e = found.entity
            return ResolvedEntity(
                ref=api.refs.encode("ent", e.id),
                kind=e.kind,
                display_name=e.display_name,
                created=found.created,
            )

        return await api.run(work)

    async def get(self, ref: str) -> EntityView:
        """One entity with its identifiers (EX-08); needs ``entities.read:<its kind>``."""
        api = self._api

        def work() -> EntityView:
            entity = api.core.entities.get(api.refs.decode("ent", ref))
            require(api.grants(), action="entities.read", target=Kind(entity.kind))
            return api.entity_view(entity)

        return await api.run(work)

    async def list(
        self, kind: str = "person", options: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> list[EntityView]:
        """Every entity of ``kind``, optionally filtered by ``query``; needs ``entities.read:<kind>``."""
        api = self._api
        o = _options(options, kwargs, _names("query"))

        def work() -> list[EntityView]:
            checked = check_kind(kind)
            require(api.grants(), action="entities.read", target=Kind(checked))
            return [api.entity_view(e) for e in api.core.entities.list(kind=checked, query=o.get("query"))]

        return await api.run(work)

    async def add_identifier(self, ref: str, type: str, value: str) -> AddIdentifierResult:
        """Attach an identifier (EX-08); needs ``entities.write:<kind>``."""
        api = self._api

        def work() -> AddIdentifierResult:
            status, _ = api.core.entities.add_identifier(
                actor=api.actor,
                entity_id=api.refs.decode("ent", ref),
                id_type=type,
                value=value,
                run_id=api.run_id,
                permit=api.permit(),
            )
            return AddIdentifierResult(status="added" if status == "added" else "exists")

        return await api.run(work)

    addIdentifier = add_identifier  # noqa: N815  (the seed's name)


class ChangesApi(_Part):
    async def list(self, options: Mapping[str, Any] | None = None, /, **kwargs: Any) -> list[ChangeView]:
        """This gem's changes, and with ``changes.manage`` those of other writers within its scope (EX-13)."""
        api = self._api
        o = _options(options, kwargs, _names("since", "status"))

        def work() -> list[ChangeView]:
            grants = api.grants()
            mine = str(api.actor)
            if not decide(grants, action="changes.manage").allowed:
                found = api.core.changes.list(since=o.get("since"), status=o.get("status"), actor=mine)
                return [api.change_view(c) for c in found]
            candidates = api.core.changes.list(since=o.get("since"), status=o.get("status"))
            with api.core.store.read() as conn:
                return [
                    api.change_view(c)
                    for c in candidates
                    if c.actor == mine or api.scope.readable(conn, c, grants, api.gem_id)
                ]

        return await api.run(work)

    async def revert(self, target: str | Mapping[str, Any] | None = None, /, **kwargs: Any) -> RevertResult:
        """Undo one change (``revert(changeRef)``) or this gem's batch (``revert({'runId': …})``)."""
        api = self._api
        mine = str(api.actor)

        def allowed(conn: sa.Connection, rows: Sequence[sa.Row[Any]]) -> DailyLimits:
            # asked by the change log inside the revert's write transaction, on its connection (P-KVAL-09);
            # all or nothing: a run is refused whole when one of its changes may no longer be written
            grants = api.grants_in(conn)
            for row in rows:
                if row.actor != mine:
                    require(grants, action="changes.manage")
                    api.scope.write_permission(conn, row, grants, api.gem_id).require()
                else:
                    api.scope.own_write_permission(conn, row, grants, api.gem_id).require()
            return api.limits(grants)

        def work() -> RevertResult:
            if isinstance(target, str):
                result = api.core.changes.revert(
                    actor=api.actor, change_id=api.refs.decode("chg", target), current_run_id=api.run_id, permit=allowed
                )
            else:
                o = _options(target if isinstance(target, Mapping) else None, kwargs, _names("run_id"))
                run_id = o.get("run_id")
                if not isinstance(run_id, str) or not run_id:
                    raise KnowledgeValidationError("revert needs a change ref or {runId}")
                result = api.core.changes.revert(
                    actor=api.actor, run_id=run_id, run_actor=mine, current_run_id=api.run_id, permit=allowed
                )
            return RevertResult(status=result.status, count=result.count)

        return await api.run(work)


class KnowledgeApi(KnowledgeHandle):
    """``ctx.knowledge`` for one gem and one run (built with :class:`KnowledgeHandle`'s arguments)."""

    def _attach_parts(self) -> None:
        self.profile = ProfileApi(self)
        self.facts = FactsApi(self)
        self.entities = EntitiesApi(self)
        self.changes = ChangesApi(self)
        self.documents = DocumentsApi(self)
        self.collections = CollectionsApi(self)

    async def search(
        self, query: str = "", options: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> list[SearchHit]:
        """Hybrid full-text and semantic search in the collections this gem can read (EX-09):
        ``collections``, ``timeRange``, ``limit``, ``entities``."""
        return await search_documents(self, query, options, **kwargs)

    # ---------------------------------------------------------------- result views

    def fact_views(self, found: Sequence[Fact]) -> list[FactView]:
        """``found`` as the gem sees them: the objects of all of them followed to their canonical
        entity in one read (none when no fact has an object)."""
        objects: dict[int, str] = {}
        wanted = {f.object for f in found if f.object is not None}
        if wanted:
            encode_entity = functools.partial(self.refs.encode, "ent")
            with self.core.store.read() as conn:
                user = self.core.entities.self_id(conn)
                for object_id in wanted:
                    try:
                        canonical = self.core.entities.canonical(conn, object_id)
                    except KnowledgeNotFoundError:
                        canonical = object_id
                    # the user is only ever "self" to a gem (OD-K30), never a ref no call accepts
                    objects[object_id] = "self" if canonical == user else encode_entity(canonical)
        encode = self.refs.encode
        return [
            FactView(
                ref=encode("fact", f.id),
                predicate=f.predicate,
                value=f.value,
                object=None if f.object is None else objects[f.object],
                valid_from=f.valid_from,
            )
            for f in found
        ]

    def entity_view(self, entity: Entity) -> EntityView:
        return EntityView(
            ref=self.refs.encode("ent", entity.id),
            kind=entity.kind,
            display_name=entity.display_name,
            identifiers=tuple(IdentifierView(type=i.type, value=i.value) for i in entity.identifiers),
        )

    def change_view(self, change: Any) -> ChangeView:
        return ChangeView(
            ref=self.refs.encode("chg", change.id),
            run_id=change.run_id,
            actor=change.actor,
            op=change.op,
            summary=change.summary,
            status=change.status,
            proposed=change.proposed,
            created_at=change.created_at,
        )
