"""``ctx.knowledge``: the only way a gem reaches the user's knowledge (K-CON-02).

Every method is a coroutine; the synchronous core runs in a worker thread. Each call:

- reads the gem's switches afresh (K-PERM-04, P-KVAL-08),
- speaks only in this gem's refs, never internal ids (K-CON-05/06),
- follows the order of OD-K07: validation, refs, predicate resolution, permission, quota, write.

Query methods (``profile.get``, ``facts.lookup``, ``changes.list``) leave out what the gem may not
see, with the permission ranges compiled into the SQL; they never raise for permissions. Methods on
one object raise ``lacks knowledge permission <the narrowest permission that would allow it>``.

Object arguments are accepted as a ``dict`` in the seed's camelCase or as snake_case keyword
arguments: ``facts.put({"predicateHint": "pref.food.rated", "value": "Stew"})`` and
``facts.put(predicate_hint="pref.food.rated", value="Stew")`` are the same call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from pydantic.alias_generators import to_camel

from notochord.access.change_scope import Scope
from notochord.access.decisions import (
    FactSlot,
    Kind,
    daily_limits,
    decide,
    readable_ranges,
    require,
    require_own_or_manage,
)
from notochord.access.permissions import PermissionSet
from notochord.errors import KnowledgeNotFoundError, KnowledgePermissionError, KnowledgeValidationError
from notochord.gems.api.documents import CollectionsApi, DocumentsApi, SearchHit
from notochord.gems.api.documents import search as search_documents
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
from notochord.gems.refs import RefCodec
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.facts import MISSING
from notochord.knowledge.identifiers import check_kind
from notochord.knowledge.predicates import PredicateRange
from notochord.knowledge.quotas import DailyLimits, check_json_size, check_length
from notochord.knowledge.reach import change_row
from notochord.knowledge.records import Entity, Fact
from notochord.knowledge.writes import Actor
from notochord.net.hosts import NetworkPermission

__all__ = ["KnowledgeApi"]

T = TypeVar("T")

_RESERVED_ORIGINS = {"user", "assistant"}
_RESERVED_SOURCES = {"user", "inferred"}


class _Part:
    def __init__(self, api: KnowledgeApi) -> None:
        self._api = api


class ProfileApi(_Part):
    async def get(self, prefix: str | None = None) -> list[ProfileFact]:
        """The user's pinned facts this gem may read, optionally under ``prefix`` (EX-03)."""
        api = self._api

        def work() -> list[ProfileFact]:
            rules = api.fact_rules(api.grants(), "self")
            if not rules:
                return []
            found = api.core.facts.lookup("self", prefix, rules=rules, pinned_only=True)
            return [ProfileFact(predicate=f.predicate, value=f.value) for f in found]

        return await api.run(work)


class FactsApi(_Part):
    async def lookup(self, subject: str = "self", prefix: str | None = None) -> list[FactView]:
        """Current facts of ``'self'`` or an entity ref under ``prefix`` that this gem may read (EX-04)."""
        api = self._api

        def work() -> list[FactView]:
            subject_id, kind = api.subject(subject)
            rules = api.fact_rules(api.grants(), kind)
            if not rules:
                return []
            found = api.core.facts.lookup("self" if kind == "self" else subject_id, prefix, rules=rules)
            return [api.fact_view(f) for f in found]

        return await api.run(work)

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
            # 1. validation
            origin, source = o.get("origin"), o.get("source")
            for value, reserved, what in (
                (origin, _RESERVED_ORIGINS, "origin"),
                (source, _RESERVED_SOURCES, "source"),
            ):
                if value is not None and (not isinstance(value, str) or not value or value in reserved):
                    raise KnowledgeValidationError(
                        f"{what} {value!r} cannot be set by a gem (reserved: {', '.join(sorted(reserved))})"
                    )
            run_id = api.run_id_of(o.get("run_id"))
            if "value" not in o and o.get("object") is None:
                raise KnowledgeValidationError("facts.put needs a value, or an object the value points to")
            if "value" in o:
                check_json_size("value", o["value"])
            for name in ("description", "source_ref"):
                if o.get(name) is not None:
                    if not isinstance(o[name], str):
                        raise KnowledgeValidationError(f"{to_camel(name)} must be a string")
                    check_length(to_camel(name), o[name])
            hint = o.get("predicate_hint")
            if not isinstance(hint, str):
                raise KnowledgeValidationError("predicateHint is required: pass a predicate such as pref.food.like")
            # 2. refs: only decoded here; facts.put resolves subject and object once, in its own read
            given = o.get("subject", "self")
            subject: int | str = "self" if given == "self" else api.refs.decode("ent", given)
            object_id = api.refs.decode("ent", o["object"]) if o.get("object") is not None else None
            grants = api.grants()

            def authorize(conn: sa.Connection, subject_kind: str, predicate: str) -> None:
                # asked inside the write transaction: a revoke cannot slip in before the write
                now = api.grants_in(conn)
                require(now, action="facts.write", target=FactSlot(subject_kind, predicate))
                if origin is not None or source is not None:
                    require(now, action="origin.override")

            result = api.core.facts.put(
                actor=api.actor,
                subject=subject,
                hint=hint,
                value=o.get("value", MISSING),
                object_id=object_id,
                description=o.get("description"),
                origin=origin,
                source=source,
                source_ref=o.get("source_ref"),
                run_id=run_id,
                limits=api.limits(grants),
                authorize=authorize,
                by_ref=True,
            )
            return PutResult(status=result.status, ref=api.refs.encode("fact", result.id), predicate=result.predicate)

        return await api.run(work)

    async def retract(self, ref: str) -> RetractResult:
        """Expire a fact this gem may write (and, if someone else wrote it, ``changes.manage``)."""
        api = self._api

        def work() -> RetractResult:
            fact_id = api.refs.decode("fact", ref)
            grants = api.grants()

            def authorize(conn: sa.Connection, fact: Fact, subject_kind: str) -> None:
                now = api.grants_in(conn)
                require(now, action="facts.write", target=FactSlot(subject_kind, fact.predicate))
                require_own_or_manage(now, writer=fact.writer, actor=str(api.actor))

            result = api.core.facts.retract(
                actor=api.actor,
                fact_id=fact_id,
                run_id=api.run_id,
                limits=api.limits(grants),
                authorize=authorize,
            )
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
            create = bool(o.get("create", False))
            if not isinstance(identifiers, Mapping):
                raise KnowledgeValidationError("identifiers must be an object such as {'email': 'a@b.nl'}")
            grants = api.grants()
            if create:
                require(grants, action="entities.write", target=Kind(kind))
            require(grants, action="entities.resolve", target=Kind(kind))
            found = api.core.entities.resolve(
                actor=api.actor,
                given=dict(identifiers),
                kind=kind,
                create=create,
                run_id=api.run_id,
                limits=api.limits(grants),
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
            entity = api.core.entities.get(api.refs.decode("ent", ref))
            grants = api.grants()
            require(grants, action="entities.write", target=Kind(entity.kind))
            status, _ = api.core.entities.add_identifier(
                actor=api.actor,
                entity_id=entity.id,
                id_type=type,
                value=value,
                run_id=api.run_id,
                limits=api.limits(grants),
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

        def work() -> RevertResult:
            grants = api.grants()
            limits = api.limits(grants)
            if isinstance(target, str):
                change_id = api.refs.decode("chg", target)
                with api.core.store.read() as conn:
                    row = change_row(conn, change_id)
                    if row is None:
                        raise KnowledgeNotFoundError("change")
                    if row.actor != str(api.actor):
                        require(grants, action="changes.manage")
                        api.scope.write_permission(conn, row, grants, api.gem_id).require()
                result = api.core.changes.revert(
                    actor=api.actor, change_id=change_id, limits=limits, current_run_id=api.run_id
                )
            else:
                o = _options(target if isinstance(target, Mapping) else None, kwargs, _names("run_id"))
                run_id = o.get("run_id")
                if not isinstance(run_id, str) or not run_id:
                    raise KnowledgeValidationError("revert needs a change ref or {runId}")
                result = api.core.changes.revert(
                    actor=api.actor,
                    run_id=run_id,
                    run_actor=str(api.actor),
                    limits=limits,
                    current_run_id=api.run_id,
                )
            return RevertResult(status=result.status, count=result.count)

        return await api.run(work)


class KnowledgeApi:
    """``ctx.knowledge`` for one gem and one run."""

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

    async def run(self, work: Callable[[], T]) -> T:
        try:
            return await anyio.to_thread.run_sync(work)
        except KnowledgePermissionError as error:
            hint = self.permission_hint(error.permission) if self.permission_hint is not None else None
            if hint is None:
                raise
            raise KnowledgePermissionError(error.permission, hint=hint) from None

    # ---------------------------------------------------------------- helpers for the parts

    def limits(self, grants: PermissionSet) -> DailyLimits:
        return daily_limits(grants)

    def run_id_of(self, given: object) -> str:
        if given is None:
            return self.run_id
        if not isinstance(given, str) or not given.strip():
            raise KnowledgeValidationError("runId must be a non-empty string")
        check_length("runId", given, 200)
        return given

    def fact_rules(self, grants: PermissionSet, kind: str) -> list[PredicateRange]:
        return readable_ranges(grants, subject_kind=kind)

    def entity_id(self, ref: object) -> int:
        """The canonical id of an entity ref (the user is never reachable by ref)."""
        return self.subject(ref, allow_self=False)[0]

    def subject(self, subject: object, *, allow_self: bool = True) -> tuple[int, str]:
        """The canonical id and kind of ``'self'`` or an entity ref."""
        with self.core.store.read() as conn:
            if allow_self and subject == "self":
                return self.core.entities.self_id(conn), "self"
            entity_id = self.core.entities.canonical(conn, self.refs.decode("ent", subject))
            kind = self.core.entities.kind_of(conn, entity_id)
            if kind == "self":
                raise KnowledgeNotFoundError("entity")
            return entity_id, kind

    def fact_view(self, fact: Fact) -> FactView:
        obj = None
        if fact.object is not None:
            with self.core.store.read() as conn:
                try:
                    target = self.core.entities.canonical(conn, fact.object)
                except KnowledgeNotFoundError:
                    target = fact.object
            obj = self.refs.encode("ent", target)
        return FactView(
            ref=self.refs.encode("fact", fact.id),
            predicate=fact.predicate,
            value=fact.value,
            object=obj,
            valid_from=fact.valid_from,
        )

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
