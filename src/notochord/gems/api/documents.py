"""``ctx.knowledge.documents``, ``ctx.knowledge.collections`` and ``ctx.knowledge.search``.

Access follows location: each call computes the gem's readable and writable collections from the
tree, its switches, the user's ticks and the collections it created (:mod:`notochord.access.scope`).

- ``collections.list`` and ``search`` are query methods: what the gem cannot read is left out
  silently, including collections named in ``search(…, {collections})`` (K-SRCH-03).
- ``documents.*`` and ``collections.create`` act on one object and raise ``lacks knowledge
  permission collections.read|write:<diary|keep|user-selected>`` by where the collection sits.
- A collection argument is ``'diary'``, ``'keep'`` or a collection ref (K-CON-22); built-ins have
  per-gem refs too (OD-K04).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import sqlalchemy as sa

from notochord.access.change_scope import collection_reach
from notochord.access.decisions import InCollection, require
from notochord.access.permissions import PermissionSet
from notochord.access.scope import CollectionAccess
from notochord.db.schema import collections, documents, gem_settings
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.gems.api.handle import KnowledgeHandle
from notochord.gems.api.options import names as _names
from notochord.gems.api.options import options as _options
from notochord.gems.api.results import _Result
from notochord.knowledge.arguments import listed
from notochord.knowledge.collections import CollectionTree
from notochord.knowledge.documents import DocumentRecord, check_lookup_key
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, hybrid_search, search_limit
from notochord.knowledge.timeranges import parse_time_range
from notochord.net.hosts import host_matches_url

if TYPE_CHECKING:
    from notochord.gems.registry import GemRegistry

__all__ = [
    "CollectionView",
    "CollectionsApi",
    "CreatedCollection",
    "DocumentRangeView",
    "DocumentSummary",
    "DocumentView",
    "DocumentsApi",
    "SearchHit",
    "UpsertResult",
    "register_document_layer",
    "search",
]


# ---------------------------------------------------------------------- result shapes


class CollectionView(_Result):
    ref: str
    name: str
    builtin: Literal["diary", "keep"] | None
    kind: str
    can_write: bool
    parent: str | None


class CreatedCollection(_Result):
    ref: str
    name: str
    parent: str | None


class UpsertResult(_Result):
    status: Literal["created", "updated", "unchanged"]
    ref: str


class DocumentView(_Result):
    ref: str
    collection: str
    key: str | None
    title: str
    body: str | None
    meta: dict[str, Any]
    source_uri: str | None
    created_at: str
    updated_at: str
    chunk_count: int


class DocumentRangeView(DocumentView):
    """A document fetched with ``range``: ``body`` holds the chunks ``from…to-1`` (OD-K36)."""

    range: dict[str, int]


class DocumentSummary(_Result):
    ref: str
    key: str | None
    title: str
    meta: dict[str, Any]
    created_at: str
    updated_at: str


class DeleteResult(_Result):
    status: Literal["deleted"]


class SearchHit(_Result):
    document: str
    title: str
    collection: str
    text: str
    locator: dict[str, int]
    meta: dict[str, Any]


# ---------------------------------------------------------------------- helpers


def _access(api: KnowledgeHandle, grants: PermissionSet) -> tuple[CollectionTree, CollectionAccess]:
    with api.core.store.read() as conn:
        return collection_reach(conn, api.core, grants, gem_id=api.gem_id, created_after=api.created_after)


def _collection_id(api: KnowledgeHandle, tree: CollectionTree, given: object) -> int:
    """``'diary'``/``'keep'`` or a collection ref → id; anything else reads as ``no collection``."""
    if given in ("diary", "keep"):
        return tree.builtin(str(given)).id
    collection_id = api.refs.decode("col", given)
    tree.get(collection_id)
    return collection_id


def _require(
    grants: PermissionSet,
    tree: CollectionTree,
    access: CollectionAccess,
    collection_id: int,
    action: Literal["read", "write"],
) -> None:
    require(
        grants,
        action="collections.read" if action == "read" else "collections.write",
        target=InCollection(tree, access, collection_id),
    )


def _check_source_uri(api: KnowledgeHandle, uri: object) -> str:
    """``sourceUri``: an http(s) URL whose host the gem's network permission lists (K-DOC-07/08, OD-K54)."""
    if not isinstance(uri, str) or not uri:
        raise KnowledgeValidationError("sourceUri must be an http:// or https:// URL")
    parts = urlsplit(uri)
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        raise KnowledgeValidationError(
            f"sourceUri {uri!r} must be an http:// or https:// URL (file: and other schemes are refused)"
        )
    network = api.manifest_network
    if network is None:
        raise KnowledgeValidationError(
            "sourceUri needs network permission: list its host in permissions.network.hosts of the manifest"
        )
    if not host_matches_url(network.hosts, uri):
        raise KnowledgeValidationError(
            f"sourceUri host {parts.hostname} is not in this gem's network permission "
            "(permissions.network.hosts); add it to the manifest"
        )
    return uri


class _Part:
    def __init__(self, api: KnowledgeHandle) -> None:
        self._api = api


class CollectionsApi(_Part):
    async def list(self) -> builtins.list[CollectionView]:
        """Collections this gem can read or write, flat (K-COL-01…05)."""
        api = self._api

        def work() -> builtins.list[CollectionView]:
            tree, access = _access(api, api.grants())
            visible = access.readable | access.writable
            rows = sorted((tree.by_id[i] for i in visible), key=lambda r: r.id)
            return [
                CollectionView(
                    ref=api.refs.encode("col", r.id),
                    name=r.name,
                    builtin="diary" if r.builtin == "diary" else "keep" if r.builtin == "keep" else None,
                    kind=r.kind,
                    can_write=r.id in access.writable,
                    parent=api.refs.encode("col", r.parent_id) if r.parent_id in visible else None,
                )
                for r in rows
            ]

        return await api.run(work)

    async def create(self, name: str, options: Mapping[str, Any] | None = None, /, **kwargs: Any) -> CreatedCollection:
        """Create a collection (``collections.create``), inside ``parent`` with write access to it."""
        api = self._api
        given = _options(options, kwargs, _names("parent"))

        def work() -> CreatedCollection:
            with api.core.store.read() as conn:
                tree = api.core.collections.tree(conn)
            parent_id = _collection_id(api, tree, given["parent"]) if given.get("parent") is not None else None
            row = api.core.collections.create(
                actor=api.actor, name=name, parent_id=parent_id, run_id=api.run_id, permit=api.permit()
            )
            parent_ref = api.refs.encode("col", row.parent_id) if row.parent_id is not None else None
            return CreatedCollection(ref=api.refs.encode("col", row.id), name=row.name, parent=parent_ref)

        return await api.run(work)


class DocumentsApi(_Part):
    async def upsert(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> UpsertResult:
        """Create or update a document (EX-10): ``collection``, ``key`` or ``ref``, ``title``, ``body``,
        ``meta``, or imported ``text`` + ``sourceUri``."""
        api = self._api
        o = _options(
            args,
            kwargs,
            _names("collection", "key", "ref", "title", "body", "meta", "text", "source_uri", "run_id"),
        )

        def work() -> UpsertResult:
            if o.get("source_uri") is not None:
                _check_source_uri(api, o["source_uri"])
            run_id = api.run_id_of(o.get("run_id"))
            with api.core.store.read() as conn:
                tree = api.core.collections.tree(conn)
            collection_id = _collection_id(api, tree, o["collection"]) if o.get("collection") is not None else None
            doc_id = api.refs.decode("doc", o["ref"]) if o.get("ref") is not None else None
            outcome = api.core.documents.upsert(
                actor=api.actor,
                collection_id=collection_id,
                key=o.get("key"),
                doc_id=doc_id,
                title=o.get("title"),
                body=o.get("body"),
                meta=o.get("meta"),
                text=o.get("text"),
                source_uri=o.get("source_uri"),
                run_id=run_id,
                permit=api.permit(),
            )
            return UpsertResult(status=outcome.status, ref=api.refs.encode("doc", outcome.id))

        return await api.run(work)

    async def get(
        self, ref: str, options: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> DocumentView | DocumentRangeView:
        """The document, or with ``range: {from, to}`` the chunks ``from…to-1`` (OD-K36)."""
        api = self._api
        given = _options(options, kwargs, _names("range"))

        def work() -> DocumentView | DocumentRangeView:
            record = api.core.documents.get(api.refs.decode("doc", ref))
            grants = api.grants()
            tree, access = _access(api, grants)
            _require(grants, tree, access, record.collection_id, "read")
            view = _document_view(api, record)
            window = given.get("range")
            if window is None:
                return view
            if not isinstance(window, Mapping) or not all(
                isinstance(window.get(k), int) and not isinstance(window.get(k), bool) for k in ("from", "to")
            ):
                raise KnowledgeValidationError("range must be {from, to} with whole chunk numbers (to exclusive)")
            start, end = int(window["from"]), int(window["to"])
            if start < 0 or end < start:
                raise KnowledgeValidationError("range needs 0 <= from <= to")
            texts, total = api.core.documents.chunk_texts(record.id, start, end)
            return DocumentRangeView(
                **{**view.model_dump(), "body": "\n\n".join(texts), "range": {"from": start, "to": end, "total": total}}
            )

        return await api.run(work)

    async def get_by_key(self, collection: str, key: str) -> DocumentView | None:
        """The document with ``key`` in ``collection``, or ``None`` (K-DOC-12)."""
        api = self._api

        def work() -> DocumentView | None:
            check_lookup_key(key)
            grants = api.grants()
            tree, access = _access(api, grants)
            collection_id = _collection_id(api, tree, collection)
            _require(grants, tree, access, collection_id, "read")
            record = api.core.documents.get_by_key(collection_id, key)
            return None if record is None else _document_view(api, record)

        return await api.run(work)

    getByKey = get_by_key  # noqa: N815  (the seed's name)

    async def list(
        self, collection: str, options: Mapping[str, Any] | None = None, /, **kwargs: Any
    ) -> builtins.list[DocumentSummary]:
        """Documents directly in ``collection`` (not subfolders), newest first, with ``updatedAt``."""
        api = self._api
        o = _options(options, kwargs, _names("time_range"))

        def work() -> builtins.list[DocumentSummary]:
            grants = api.grants()
            tree, access = _access(api, grants)
            collection_id = _collection_id(api, tree, collection)
            _require(grants, tree, access, collection_id, "read")
            window = parse_time_range(o.get("time_range"), tz=api.core.store.clock.tz)
            return [
                DocumentSummary(
                    ref=api.refs.encode("doc", d.id),
                    key=d.key,
                    title=d.title,
                    meta=d.meta,
                    created_at=d.created_at,
                    updated_at=d.updated_at,
                )
                for d in api.core.documents.list(collection_id, time_range=window)
            ]

        return await api.run(work)

    async def delete(self, ref: str) -> DeleteResult:
        """Delete a document (revertible); another writer's needs ``changes.manage``."""
        api = self._api

        def work() -> DeleteResult:
            api.core.documents.delete(
                actor=api.actor, doc_id=api.refs.decode("doc", ref), run_id=api.run_id, permit=api.permit()
            )
            return DeleteResult(status="deleted")

        return await api.run(work)


def _document_view(api: KnowledgeHandle, record: DocumentRecord) -> DocumentView:
    return DocumentView(
        ref=api.refs.encode("doc", record.id),
        collection=api.refs.encode("col", record.collection_id),
        key=record.key,
        title=record.title,
        body=record.body,
        meta=record.meta,
        source_uri=record.source_uri,
        created_at=record.created_at,
        updated_at=record.updated_at,
        chunk_count=record.chunk_count,
    )


async def search(
    api: KnowledgeHandle, query: str = "", options: Mapping[str, Any] | None = None, /, **kwargs: Any
) -> list[SearchHit]:
    """Hybrid search in the collections this gem can read (EX-09)."""
    o = _options(options, kwargs, _names("collections", "time_range", "limit", "entities", "group_by"))

    def work() -> list[SearchHit]:
        if not isinstance(query, str):
            raise KnowledgeValidationError("query must be a string (empty for the newest documents)")
        limit = search_limit(o.get("limit", DEFAULT_LIMIT))
        window = parse_time_range(o.get("time_range"), tz=api.core.store.clock.tz)
        # one read transaction: the grants, what they reach and both legs of the search in one snapshot
        with api.core.store.read() as conn:
            grants = api.grants_in(conn)
            tree, access = collection_reach(conn, api.core, grants, gem_id=api.gem_id, created_after=api.created_after)
            allowed = set(access.readable)
            named = o.get("collections")
            if named is not None:
                chosen: set[int] = set()
                for item in listed("collections", named, of="'diary', 'keep' or collection refs"):
                    try:
                        chosen |= tree.subtree(_collection_id(api, tree, item))
                    except KnowledgeNotFoundError:
                        continue  # a query method: unknown or foreign collections are skipped silently
                allowed &= chosen
            entity_ids: list[int] | None = None
            if o.get("entities") is not None:
                entity_ids = []
                for ref in listed("entities", o["entities"], of="entity refs"):
                    try:
                        entity_ids += api.core.entities.members(conn, api.entity_id(ref, within=conn))
                    except KnowledgeNotFoundError:
                        continue
            hits = hybrid_search(
                api.core.store,
                api.core.vectors,
                query=query,
                collection_ids=allowed,
                time_range=window,
                entity_ids=entity_ids,
                limit=limit,
                group_by=o.get("group_by", "chunk"),
                within=conn,
            )
        return [
            SearchHit(
                document=api.refs.encode("doc", h.document_id),
                title=h.title,
                collection=api.refs.encode("col", h.collection_id),
                text=h.text,
                locator={"chunk": h.chunk, "from": h.start, "to": h.end},
                meta=h.meta,
            )
            for h in hits
        ]

    return await api.run(work)


# ---------------------------------------------------------------------- registration


def creator_watermark(conn: sa.Connection, gem_id: str) -> int:
    """The highest collection id that existed when this installation of the gem began."""
    from notochord.gems.registry import CREATOR_WATERMARK

    value = conn.execute(
        sa.select(gem_settings.c.value_json).where(
            gem_settings.c.gem_id == gem_id, gem_settings.c.key == CREATOR_WATERMARK
        )
    ).scalar()
    # not installed (any more): every collection is older than the installation that does not exist
    return int(value) if value is not None else 2**62


def register_document_layer(registry: GemRegistry) -> None:
    """Teach uninstall's count about documents and collections (their removal is the knowledge layer's)."""

    def counts(conn: sa.Connection, gem_id: str) -> dict[str, int]:
        author = f"gem:{gem_id}"
        docs = conn.execute(
            sa.select(sa.func.count())
            .select_from(documents)
            .where(documents.c.created_by == author, documents.c.deleted_at.is_(None))
        ).scalar_one()
        cols = conn.execute(
            sa.select(sa.func.count())
            .select_from(collections)
            .where(collections.c.created_by == author, collections.c.deleted_at.is_(None))
        ).scalar_one()
        return {"documents": int(docs), "collections": int(cols)}

    registry.counters.append(counts)
