"""The host API: what the user, the assistant and the system do, outside any gem (OD-K46).

Synchronous, with internal ids. Writes made through ``space.user`` are said by the user (they win
``cardinality: one`` conflicts and are pinned by default when about ``self``); writes through
``space.as_assistant`` are the assistant's, count against its daily quota, and may be marked
``source="inferred"``. Nothing here is reachable from a gem's ``ctx``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from notochord.db.schema import documents
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.knowledge import browse
from notochord.knowledge.arguments import as_id, flag, listed, shown, whole_number
from notochord.knowledge.batches import BatchOutcome, check_items, item_errors
from notochord.knowledge.browse import DeletedDocument, DocumentSummary, EntitySummary, Page, RelatedFact
from notochord.knowledge.collections import CollectionRow, CollectionTree
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.documents import DocumentRecord, UpsertOutcome
from notochord.knowledge.facts import MISSING, Subject
from notochord.knowledge.hybrid_search import DEFAULT_LIMIT, Hit, hybrid_search, search_limit
from notochord.knowledge.quotas import DailyLimits, refuse_unstorable_filter
from notochord.knowledge.records import (
    Change,
    Entity,
    Fact,
    PinResult,
    PutResult,
    ResolveOutcome,
    RetractResult,
    RevertResult,
)
from notochord.knowledge.service_content import refuse_service_changes, refuse_service_collection
from notochord.knowledge.timeranges import parse_time_range
from notochord.knowledge.writes import USER, Actor

__all__ = ["HostChanges", "HostCollections", "HostDocuments", "HostEntities", "HostFacts", "HostKnowledge"]

_HOST_SOURCES = {"user", "extracted", "inferred"}
_HOST_PUT_ARGUMENTS = frozenset({"predicate", "value", "subject", "object", "pin", "source", "source_ref"})
_HOST_UPSERT_ARGUMENTS = frozenset({"collection", "key", "id", "title", "body", "meta", "text", "source_uri"})
_HOST_TO_CORE = {"id": "doc_id"}


def _id(value: object, what: str) -> int:
    """An id given to the host API; one of another type names nothing, which reads as not found."""
    found = as_id(value)
    if found is None:
        raise KnowledgeNotFoundError(what)
    return found


def _ids(value: object) -> list[int]:
    """A list of entity ids; what in it cannot be an id names nothing and is left out."""
    return [i for i in (as_id(v) for v in listed("entity_ids", value, of="entity ids")) if i is not None]


class HostFacts:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def put(
        self,
        *,
        predicate: str,
        value: Any = MISSING,
        subject: Subject = "self",
        object: int | None = None,
        pin: bool | None = None,
        source: str | None = None,
        source_ref: str | None = None,
        run_id: str | None = None,
    ) -> PutResult:
        """Write a fact under a full predicate name (added to the vocabulary if new)."""
        self._check_source(source)
        # one transaction for the look-ups and the write: fewer round trips
        with self._core.store.batch():
            return self._core.facts.put(
                actor=self._actor,
                subject=subject,
                predicate=predicate,
                value=value,
                object_id=object,
                pin=pin,
                source=source,
                source_ref=source_ref,
                run_id=run_id,
                limits=self._limits,
            )

    def put_many(self, items: builtins.list[dict[str, Any]], *, run_id: str | None = None) -> BatchOutcome[PutResult]:
        """Write many facts in one transaction; each item holds the arguments of :meth:`put`.

        All or nothing: a refused item raises :class:`~notochord.knowledge.batches.BatchItemError`
        naming its index, and nothing is written. Each fact is its own change (undo one alone), and
        all carry the returned ``run_id`` (undo the batch with ``space.changes.revert(run_id=…)``).
        K-FACT, K-CHG, K-QUOTA.
        """
        checked = check_items(items, _HOST_PUT_ARGUMENTS, what="put_many")
        core_items: builtins.list[Mapping[str, Any]] = []
        index = 0
        try:  # one handler for the whole loop: a context per item costs more than its checks
            for index, item in enumerate(checked):  # noqa: B007 (the handler names it)
                if "predicate" not in item:
                    raise KnowledgeValidationError("predicate is required")
                if "source" in item:
                    self._check_source(item["source"])
                if "object" in item:
                    core = {k: v for k, v in item.items() if k != "object"}
                    core["object_id"] = item["object"]
                    core_items.append(core)
                else:
                    # the batch only reads its items, and is over before this call returns
                    core_items.append(item)
        except KnowledgeValidationError:
            with item_errors(index):
                raise
        return self._core.facts.put_many(core_items, actor=self._actor, run_id=run_id, limits=self._limits)

    def _check_source(self, source: str | None) -> None:
        if source is not None and (not isinstance(source, str) or source not in _HOST_SOURCES):
            raise KnowledgeValidationError(f"source {shown(source)} is not one of {', '.join(sorted(_HOST_SOURCES))}")
        if source == "inferred" and self._actor.is_user:
            raise KnowledgeValidationError("the user's own facts are said, not inferred; write as the assistant")

    def lookup(self, subject: Subject, prefix: str | None = None, *, include_inferred: bool = False) -> list[Fact]:
        return self._core.facts.lookup(subject, prefix, include_inferred=flag("include_inferred", include_inferred))

    def profile(self, prefix: str | None = None) -> list[Fact]:
        """The standing profile: the user's pinned current facts."""
        return self._core.facts.lookup("self", prefix, pinned_only=True)

    def get(self, fact_id: int) -> Fact:
        return self._core.facts.get(_id(fact_id, "fact"))

    def retract(self, fact_id: int, *, run_id: str | None = None) -> RetractResult:
        return self._core.facts.retract(
            actor=self._actor, fact_id=_id(fact_id, "fact"), run_id=run_id, limits=self._limits
        )

    def pin(self, fact_id: int, pinned: bool = True) -> PinResult:
        return self._core.facts.pin(actor=self._actor, fact_id=_id(fact_id, "fact"), pinned=pinned)

    def about(self, entity_ids: builtins.list[int]) -> dict[int, builtins.list[RelatedFact]]:
        """The current facts about each of several entities at once (through their merges), keyed
        by the ids given; an id that names no live entity has none."""
        with self._core.store.read() as conn:
            return browse.facts_about(conn, _ids(entity_ids))


class HostEntities:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def resolve(
        self, *, kind: str = "person", create: bool = False, run_id: str | None = None, **identifiers: str
    ) -> Entity | None:
        """Find an entity by identifiers (``email=``, ``phone=``, ``domain=``, ``url=``, ``handle=``,
        ``name=``); with ``create=True`` make one when none matches."""
        found = self._core.entities.resolve(
            actor=self._actor, given=identifiers, kind=kind, create=create, run_id=run_id, limits=self._limits
        )
        return None if found is None else found.entity

    def get(self, entity_id: int) -> Entity:
        return self._core.entities.get(entity_id)

    def list(self, kind: str = "person", *, query: str | None = None) -> list[Entity]:
        return self._core.entities.list(kind=kind, query=query)

    def add_identifier(self, entity_id: int, id_type: str, value: str) -> str:
        status, _ = self._core.entities.add_identifier(
            actor=self._actor, entity_id=entity_id, id_type=id_type, value=value, limits=self._limits
        )
        return status

    def merge(self, *, keep: int, merge: int) -> int:
        """Merge ``merge`` into ``keep``; the old id keeps working. Returns the change id."""
        return self._core.entities.merge(actor=self._actor, keep=keep, merge=merge)

    def delete(self, entity_id: int) -> int:
        """Delete an entity (revertible). Returns the change id."""
        return self._core.entities.delete(actor=self._actor, entity_id=entity_id)

    def page(
        self,
        *,
        kind: str | None = None,
        query: str | None = None,
        offset: int = 0,
        limit: int = 50,
        exclude: int | None = None,
    ) -> Page[EntitySummary]:
        """One page of live entities (of ``kind``, or every kind), by name, with their identifiers."""
        with self._core.store.read() as conn:
            return browse.entity_page(conn, kind=kind, query=query, offset=offset, limit=limit, exclude=exclude)

    def names(self, entity_ids: builtins.list[int]) -> dict[int, str]:
        """The display names of several entities at once (a merged id gives the kept one's);
        ids of deleted entities, or of none, are left out."""
        with self._core.store.read() as conn:
            return browse.display_names(conn, _ids(entity_ids))

    def kinds(self) -> builtins.list[str]:
        """The kinds the live entities have."""
        with self._core.store.read() as conn:
            return browse.entity_kinds(conn)


class HostCollections:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def list(self) -> builtins.list[CollectionRow]:
        """Every live collection, oldest first."""
        tree = self._core.collections.read_tree()
        return sorted(tree.by_id.values(), key=lambda r: r.id)

    def get(self, collection: str | int) -> CollectionRow:
        tree = self._core.collections.read_tree()
        return tree.builtin(collection) if isinstance(collection, str) else tree.get(collection)

    def create(self, name: str, *, parent: str | int | None = None, run_id: str | None = None) -> CollectionRow:
        parent_id = self.get(parent).id if parent is not None else None
        refuse_service_collection(self._core.collections.read_tree(), [parent_id], doing="create a collection there")
        return self._core.collections.create(
            actor=self._actor, name=name, parent_id=parent_id, run_id=run_id, limits=self._limits
        )

    def move(self, collection: int, *, parent: str | int | None) -> int | None:
        """Move a collection under ``parent`` (``None``: top level); returns the change id
        (``None`` when it is there already)."""
        collection = _id(collection, "collection")
        parent_id = self.get(parent).id if parent is not None else None
        refuse_service_collection(
            self._core.collections.read_tree(), [collection, parent_id], doing=f"move collection {collection}"
        )
        return self._core.collections.move(actor=self._actor, collection_id=collection, parent_id=parent_id)

    def rename(self, collection: int, name: str) -> int | None:
        """Rename a collection; returns the change id (``None`` when it already has that name)."""
        collection = _id(collection, "collection")
        refuse_service_collection(
            self._core.collections.read_tree(), [collection], doing=f"rename collection {collection}"
        )
        return self._core.collections.rename(actor=self._actor, collection_id=collection, name=name)

    def document_counts(self) -> dict[int, int]:
        """How many live documents each collection holds directly (absent: none), in one query."""
        with self._core.store.read() as conn:
            return browse.document_counts(conn)


class HostDocuments:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def _collection(self, collection: str | int) -> int:
        tree = self._core.collections.read_tree()
        return tree.builtin(collection).id if isinstance(collection, str) else tree.get(collection).id

    def _refuse_service(
        self,
        *,
        doing: str,
        collections: Iterable[int | None] = (),
        doc_ids: Iterable[object] = (),
        tree: CollectionTree | None = None,
    ) -> None:
        """Refuse a write that touches a knowledge base of the REST service (see
        :mod:`notochord.knowledge.service_content`): one placed in such a collection, or aimed at a
        document that is in one. Unknown documents pass, for the write itself to report. ``tree``:
        the collections as the caller already read them in this transaction."""
        wanted = [d for d in doc_ids if isinstance(d, int) and not isinstance(d, bool)]
        with self._core.store.read() as conn:
            if tree is None:
                tree = self._core.collections.tree(conn)
            placed: list[int | None] = list(collections)
            # a space without knowledge bases (every personal one) needs no look-up
            if wanted and any(tree.class_of(c) == "kb" for c in tree.by_id):
                placed += conn.execute(sa.select(documents.c.collection_id).where(documents.c.id.in_(wanted))).scalars()
        refuse_service_collection(tree, placed, doing=doing)

    def upsert(
        self,
        *,
        collection: str | int | None = None,
        key: str | None = None,
        id: int | None = None,
        title: str | None = None,
        body: str | None = None,
        meta: dict[str, Any] | None = None,
        text: str | None = None,
        source_uri: str | None = None,
        run_id: str | None = None,
    ) -> UpsertOutcome:
        # naming the collection and writing share one transaction
        with self._core.store.batch():
            tree = self._core.collections.read_tree()
            collection_id = None
            if collection is not None:
                collection_id = tree.builtin(collection).id if isinstance(collection, str) else tree.get(collection).id
            self._refuse_service(doing="write this document", collections=[collection_id], doc_ids=[id], tree=tree)
            return self._core.documents.upsert(
                actor=self._actor,
                collection_id=collection_id,
                key=key,
                doc_id=None if id is None else _id(id, "document"),
                title=title,
                body=body,
                meta=meta,
                text=text,
                source_uri=source_uri,
                run_id=run_id,
                limits=self._limits,
            )

    def upsert_many(
        self, items: builtins.list[dict[str, Any]], *, run_id: str | None = None
    ) -> BatchOutcome[UpsertOutcome]:
        """Create or update many documents in one transaction; each item holds the arguments of
        :meth:`upsert` (``collection``, ``key``, ``id``, ``title``, ``body``, ``meta``, ``text``,
        ``source_uri``).

        All or nothing: a refused item raises :class:`~notochord.knowledge.batches.BatchItemError`
        naming its index, and nothing is written. Each document is its own change (undo one alone),
        and all carry the returned ``run_id`` (undo the batch with ``space.changes.revert(run_id=…)``).
        K-DOC, K-CHG, K-QUOTA.
        """
        checked = check_items(items, _HOST_UPSERT_ARGUMENTS, what="upsert_many")
        with self._core.store.batch():
            tree = self._core.collections.read_tree()
            core_items: builtins.list[dict[str, Any]] = []
            for index, item in enumerate(checked):
                core = {_HOST_TO_CORE.get(k, k): v for k, v in item.items() if k != "collection"}
                collection = item.get("collection")
                if collection is not None:
                    with item_errors(index):
                        core["collection_id"] = (
                            tree.builtin(collection).id if isinstance(collection, str) else tree.get(collection).id
                        )
                core_items.append(core)
            if any(tree.class_of(c) == "kb" for c in tree.by_id):
                for index, core in enumerate(core_items):
                    with item_errors(index):
                        self._refuse_service(
                            doing="write this document",
                            collections=[core.get("collection_id")],
                            doc_ids=[core.get("doc_id")],
                            tree=tree,
                        )
            return self._core.documents.upsert_many(core_items, actor=self._actor, run_id=run_id, limits=self._limits)

    def get(self, doc_id: int) -> DocumentRecord:
        return self._core.documents.get(_id(doc_id, "document"))

    def get_by_key(self, collection: str | int, key: str) -> DocumentRecord | None:
        return self._core.documents.get_by_key(self._collection(collection), key)

    def list(self, collection: str | int) -> builtins.list[DocumentRecord]:
        return self._core.documents.list(self._collection(collection))

    def delete(self, doc_id: int) -> int:
        doc_id = _id(doc_id, "document")
        self._refuse_service(doing=f"delete document {doc_id}", doc_ids=[doc_id])
        return self._core.documents.delete(actor=self._actor, doc_id=doc_id, limits=self._limits)

    def move(self, doc_id: int, *, collection: str | int) -> int | None:
        """Move a document to ``collection``; returns the change id (``None`` when it is there already)."""
        doc_id = _id(doc_id, "document")
        collection_id = self._collection(collection)
        self._refuse_service(doing=f"move document {doc_id}", collections=[collection_id], doc_ids=[doc_id])
        return self._core.documents.move(actor=self._actor, doc_id=doc_id, collection_id=collection_id)

    def page(self, collection: str | int, *, offset: int = 0, limit: int = 50) -> Page[DocumentSummary]:
        """One page of the documents placed directly in ``collection``, newest first."""
        collection_id = self._collection(collection)
        with self._core.store.read() as conn:
            return browse.document_page(conn, collection_id, offset=offset, limit=limit)

    def deleted(self, collection: str | int, *, limit: int = 20) -> builtins.list[DeletedDocument]:
        """The collection's deleted documents that :meth:`restore` can bring back, latest first."""
        collection_id = self._collection(collection)
        with self._core.store.read() as conn:
            return browse.deleted_documents(conn, collection_id, limit=limit)

    def restore(self, doc_id: int) -> RevertResult:
        """Bring back a deleted document by undoing the change that deleted it.

        Raises:
            KnowledgeNotFoundError: no deleted document with that id can be brought back.
            RevertError: the undo is refused (another document took its key since).
        """
        doc_id = _id(doc_id, "document")
        gone = self.deleted_one(doc_id)
        if gone is None:
            raise KnowledgeNotFoundError("document", "deleted that an undo can bring back")
        self._refuse_service(doing=f"restore document {doc_id}", doc_ids=[doc_id])
        return self._core.changes.revert(actor=self._actor, change_id=gone.change_id)

    def deleted_one(self, doc_id: int) -> DeletedDocument | None:
        """The deleted document with the change that deleted it, or ``None`` if :meth:`restore`
        cannot bring it back (it is live, unknown, or its deletion was undone)."""
        found = as_id(doc_id)
        if found is None:
            return None
        with self._core.store.read() as conn:
            return browse.deletion_of(conn, found)

    def passages(self, doc_id: int, *, start: int = 0, end: int = 100) -> tuple[builtins.list[str], int]:
        """The texts of passages ``start…end-1`` of a live document, and how many it has."""
        doc_id = _id(doc_id, "document")
        self._core.documents.get(doc_id)
        return self._core.documents.chunk_texts(doc_id, whole_number("start", start), whole_number("end", end))


class HostKnowledge:
    """``space.user`` / ``space.as_assistant``: the knowledge as one writer sees and edits it."""

    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self.actor = actor
        self.facts = HostFacts(core, actor)
        self.entities = HostEntities(core, actor)
        self.collections = HostCollections(core, actor)
        self.documents = HostDocuments(core, actor)
        self._core = core

    def search(
        self,
        query: str = "",
        *,
        collections: builtins.list[str | int] | None = None,
        time_range: dict[str, Any] | None = None,
        entities: builtins.list[int] | None = None,
        limit: int = DEFAULT_LIMIT,
        group_by: Literal["chunk", "document"] = "chunk",
    ) -> builtins.list[Hit]:
        """Search everything (the owner reads all collections), or only ``collections`` and below.

        ``group_by="document"`` returns each document once, at its best passage: ``limit`` documents.
        One read transaction: the collections and entities named are resolved in the snapshot the
        passages are ranked in.
        """
        limit = search_limit(limit)
        with self._core.store.read() as conn:
            tree = self._core.collections.tree(conn)
            allowed = set(tree.by_id)
            if collections is not None:
                chosen: set[int] = set()
                for c in listed("collections", collections, of="'diary', 'keep' or collection ids"):
                    root = tree.builtin(c) if isinstance(c, str) else tree.get(_id(c, "collection"))
                    chosen |= tree.subtree(root.id)
                allowed &= chosen
            entity_ids = None
            if entities is not None:
                entity_ids = [
                    m
                    for e in listed("entities", entities, of="entity ids")
                    for m in self._core.entities.members(conn, self._core.entities.canonical(conn, _id(e, "entity")))
                ]
            return hybrid_search(
                self._core.store,
                self._core.vectors,
                query=query,
                collection_ids=allowed,
                time_range=parse_time_range(time_range, tz=self._core.store.clock.tz),
                entity_ids=entity_ids,
                limit=limit,
                group_by=group_by,
                within=conn,
            )


class HostChanges:
    """``space.changes``: every change of the space, listed and reverted by the user."""

    def __init__(self, core: KnowledgeCore) -> None:
        self._core = core

    def list(
        self,
        *,
        since: str | int | float | datetime | None = None,
        status: str | None = None,
        run_id: str | None = None,
        actor: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Change]:
        """Changes newest first; ``offset`` skips the newest ones (a later page of a list)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise KnowledgeValidationError(f"offset {shown(offset)} is not a whole number of changes to skip")
        return self._core.changes.list(
            since=since, status=status, run_id=run_id, actor=actor, limit=limit, offset=offset
        )

    def get(self, change_id: int) -> Change:
        return self._core.changes.get(_id(change_id, "change"))

    def revert(self, change_id: int | None = None, *, run_id: str | None = None) -> RevertResult:
        """Undo one change, or every change of a run, as the user (never the REST service's uploads).

        A run id no change carries is not found, unless a recorded run has it: a run that wrote
        nothing is reverted with count 0.
        """
        if change_id is not None:
            change_id = _id(change_id, "change")
        refuse_unstorable_filter("runId", run_id)
        with self._core.store.read() as conn:
            refuse_service_changes(conn, self._core.collections.tree(conn), change_id=change_id, run_id=run_id)
        return self._core.changes.revert(actor=USER, change_id=change_id, run_id=run_id)

    def resolve(self, change_id: int, *, take: str) -> ResolveOutcome:
        """Settle an open conflict: ``take="theirs"`` accepts the proposed value as the user's own,
        ``take="mine"`` keeps the current one. Recorded as a change; reverting it reopens the conflict."""
        return self._core.facts.resolve_conflict(actor=USER, change_id=_id(change_id, "change"), take=take)
