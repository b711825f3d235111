"""Documents: titled Markdown bodies in one collection each, chunked and indexed on write (K-DOC).

Rules:

- ``upsert`` by ``key`` (unique within a collection across writers, OD-K34), by id, or new. What
  one write may hold is checked first (:mod:`~notochord.knowledge.document_content`, OD-K35); a new
  or keyed document needs a collection; with an id the collection, if given, must be the document's
  current one (only the user moves documents).
- Identical content (title, body or text, meta, sourceUri) is ``unchanged``: nothing is written,
  nothing re-indexed (K-DOC-03). It still counts as a write for the quota (OD-K22).
- Imported documents (``text`` + ``sourceUri``) keep no body: only their chunks exist (K-DOC-06).
- A diary document with an ISO-date key and no ``meta.date`` gets ``meta.date`` = key (OD-K55).
- Deleting is soft and revertible; the chunks stay so an undo needs no re-embedding, and every read
  path filters ``deleted_at``.
- The writer of a document is whoever wrote it last; overwriting or deleting another writer's
  document is decided by the caller's permit, inside the write transaction (``changes.manage`` for
  gems).
"""

from __future__ import annotations

import builtins
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from notochord.db.schema import chunks, documents
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError, RevertError
from notochord.knowledge.batches import BatchOutcome, batch_run_id, check_items, item_errors
from notochord.knowledge.changes import REVERTERS
from notochord.knowledge.collections import Collections, require_live_place
from notochord.knowledge.document_batch import NewDocuments, PendingIndex, Renumbering, Targets, item_write
from notochord.knowledge.document_content import UPSERT_ARGUMENTS, checked_content, content_hash, is_iso_date
from notochord.knowledge.indexing import IndexWork, index_document
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, refuse_unstorable_filter
from notochord.knowledge.timeranges import TimeRange, document_date
from notochord.knowledge.writes import Actor, Permit, Store, WriteTx, Writing
from notochord.search.chunking import DEFAULT_MAX_CHARS

__all__ = ["DocumentRecord", "Documents", "UpsertOutcome", "check_lookup_key"]

# Built once: building a statement costs more than SQLite takes to run it.
_INSERT_DOCUMENT = Prepared(sa.insert(documents).returning(documents.c.id))


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    collection_id: int
    key: str | None
    title: str
    body: str | None
    meta: dict[str, Any]
    source_uri: str | None
    created_by: str
    writer: str
    created_at: str
    updated_at: str
    doc_date: str
    chunk_count: int


@dataclass(frozen=True)
class UpsertOutcome:
    status: Literal["created", "updated", "unchanged"]
    id: int
    change_id: int | None


_LAST_PASSAGE_INDEX = 2**31 - 1
"""The largest index ``chunks.idx`` (a 32-bit integer) holds."""


def check_lookup_key(key: str | None) -> None:
    """Refuse a key no document can be looked up by, before anything else is asked (OD-K07)."""
    # a missing key would match the collection's documents written without one (``key IS NULL``)
    if key is None:
        raise KnowledgeValidationError("key must be text, not None; pass the key the document was written with")
    refuse_unstorable_filter("key", key)


class Documents:
    def __init__(self, store: Store, collections_: Collections, *, on_indexed: Callable[[], None]) -> None:
        self._store = store
        self._collections = collections_
        self._on_indexed = on_indexed

    # ------------------------------------------------------------------ reading

    def _record(self, conn: sa.Connection, row: Any) -> DocumentRecord:
        count = conn.execute(
            sa.select(sa.func.count()).select_from(chunks).where(chunks.c.document_id == row.id)
        ).scalar_one()
        return DocumentRecord(
            id=row.id,
            collection_id=row.collection_id,
            key=row.key,
            title=row.title,
            body=row.body,
            meta=json.loads(row.meta_json),
            source_uri=row.source_uri,
            created_by=row.created_by,
            writer=row.writer,
            created_at=row.created_at,
            updated_at=row.updated_at,
            doc_date=row.doc_date,
            chunk_count=int(count),
        )

    def load(self, conn: sa.Connection, doc_id: int) -> DocumentRecord:
        row = conn.execute(
            sa.select(documents).where(documents.c.id == doc_id, documents.c.deleted_at.is_(None))
        ).first()
        if row is None:
            raise KnowledgeNotFoundError("document")
        return self._record(conn, row)

    def get(self, doc_id: int) -> DocumentRecord:
        with self._store.read() as conn:
            return self.load(conn, doc_id)

    def find_by_key(self, conn: sa.Connection, collection_id: int, key: str) -> DocumentRecord | None:
        row = conn.execute(
            sa.select(documents).where(
                documents.c.collection_id == collection_id,
                documents.c.key == key,
                documents.c.deleted_at.is_(None),
            )
        ).first()
        return None if row is None else self._record(conn, row)

    def get_by_key(self, collection_id: int, key: str) -> DocumentRecord | None:
        check_lookup_key(key)
        with self._store.read() as conn:
            return self.find_by_key(conn, collection_id, key)

    def chunk_texts(self, doc_id: int, start: int, end: int) -> tuple[list[str], int]:
        """Texts of chunks ``start…end-1`` and the total number of chunks (OD-K36)."""
        with self._store.read() as conn:
            total = conn.execute(
                sa.select(sa.func.count()).select_from(chunks).where(chunks.c.document_id == doc_id)
            ).scalar_one()
            # a passage's index is a 32-bit column, which PostgreSQL refuses to compare with a larger
            # number; no document has that many passages, so the range is cut to what can exist
            first, last = start, min(end - 1, _LAST_PASSAGE_INDEX)
            if first > last:
                return [], int(total)
            texts = conn.execute(
                sa.select(chunks.c.text)
                .where(chunks.c.document_id == doc_id, chunks.c.idx >= first, chunks.c.idx <= last)
                .order_by(chunks.c.idx)
            ).scalars()
            return list(texts), int(total)

    def list(self, collection_id: int, *, time_range: TimeRange | None = None) -> list[DocumentRecord]:
        """Documents placed directly in the collection, newest first by document date (OD-K42)."""
        query = sa.select(documents).where(documents.c.collection_id == collection_id, documents.c.deleted_at.is_(None))
        if time_range is not None and time_range.start is not None:
            query = query.where(documents.c.doc_date >= time_range.start)
        if time_range is not None and time_range.end is not None:
            query = query.where(documents.c.doc_date <= time_range.end)
        with self._store.read() as conn:
            rows = conn.execute(query.order_by(documents.c.doc_date.desc(), documents.c.id.desc())).all()
            return [self._record(conn, r) for r in rows]

    # ------------------------------------------------------------------ writing

    def upsert(
        self,
        *,
        actor: Actor,
        collection_id: int | None,
        key: str | None = None,
        doc_id: int | None = None,
        title: str | None = None,
        body: str | None = None,
        meta: Mapping[str, Any] | None = None,
        text: str | None = None,
        source_uri: str | None = None,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> UpsertOutcome:
        """Create or update a document; see the module rules. ``max_chars`` is the chunk size.

        Reading the target and writing it share one transaction.
        """
        item = {
            "collection_id": collection_id,
            "key": key,
            "doc_id": doc_id,
            "title": title,
            "body": body,
            "meta": meta,
            "text": text,
            "source_uri": source_uri,
        }
        (outcome,) = self._write(
            [item], actor=actor, run_id=run_id, limits=limits, permit=permit, max_chars=max_chars, numbered=False
        )
        self._store.after_commit(self._on_indexed)
        return outcome

    def upsert_many(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        actor: Actor,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> BatchOutcome[UpsertOutcome]:
        """Create or update many documents in one transaction (K-DOC, K-CHG, K-QUOTA).

        Each item holds the arguments of :meth:`upsert` (``collection_id``, ``key``, ``doc_id``,
        ``title``, ``body``, ``meta``, ``text``, ``source_uri``) and is written exactly as
        :meth:`upsert` writes it, in order, each its own counted write and its own change record;
        the rules of :mod:`notochord.knowledge.batches` apply. The new documents' rows and the
        change records (without a permit), and the chunks, full-text rows and mentions of the whole
        batch are written together before it commits
        (:func:`~notochord.knowledge.indexing.index_documents`), and the embedding worker hears of
        them once, after the commit.
        """
        checked = check_items(items, UPSERT_ARGUMENTS, what="upsert_many")
        batch_run = batch_run_id(run_id)
        results = self._write(
            checked, actor=actor, run_id=batch_run, limits=limits, permit=permit, max_chars=max_chars, numbered=True
        )
        if results:
            self._store.after_commit(self._on_indexed)
        return BatchOutcome(batch_run, results)

    def _write(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        actor: Actor,
        run_id: str | None,
        limits: DailyLimits | None,
        permit: Permit | None,
        max_chars: int,
        numbered: bool,
    ) -> builtins.list[UpsertOutcome]:
        """Write ``items`` in order in one transaction; ``numbered``: refusals name the item's index.

        The collection tree and the documents the items name are read once for all of them; the
        index work of every written document waits in a :class:`PendingIndex` until the end, and
        in a shared write so do the documents it creates and the change records
        (:class:`~notochord.knowledge.document_batch.NewDocuments`).
        """
        with self._store.batch() as conn, contextlib.ExitStack() as stack:
            targets = Targets.read(conn, self._collections.tree(conn), items)
            # Without a permit to ask per item, the items share one write: each is still charged and
            # recorded alone, and the documents they create, their changes and the objects of those
            # go in one statement each at the end.
            shared: WriteTx | None = None
            if permit is None:
                shared = stack.enter_context(self._store.write(actor=actor, run_id=run_id))
            pending = _Pending(conn, targets, PendingIndex(max_chars), None if shared is None else NewDocuments(shared))
            for index, item in enumerate(items):
                with item_errors(index) if numbered else contextlib.nullcontext():
                    pending.results.append(
                        self._upsert(
                            pending,
                            shared,
                            actor=actor,
                            run_id=run_id,
                            limits=limits,
                            permit=permit,
                            **item,
                        )
                    )
            pending.flush()
        return pending.results

    def _upsert(
        self,
        pending: _Pending,
        shared: WriteTx | None,
        *,
        actor: Actor,
        collection_id: int | None = None,
        key: str | None = None,
        doc_id: int | None = None,
        title: str | None = None,
        body: str | None = None,
        meta: Mapping[str, Any] | None = None,
        text: str | None = None,
        source_uri: str | None = None,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> UpsertOutcome:
        # 1. validation and single-write limits
        checked = checked_content(
            key=key, doc_id=doc_id, title=title, body=body, meta=meta, text=text, source_uri=source_uri
        )
        title, body, meta_dict, content = checked.title, checked.body, checked.meta, checked.content

        # 2. resolving the target
        targets = pending.targets
        tree = targets.tree
        existing: int | None = None
        if doc_id is not None:
            if pending.holds_documents and not targets.knows(doc_id):
                pending.write_documents()  # it may be one this call created
            existing, target = targets.by_id(doc_id)
            if collection_id is not None and collection_id != target:
                raise KnowledgeValidationError(
                    "collection differs from the document's current collection; only the user moves documents"
                )
        else:
            if collection_id is None:
                raise KnowledgeValidationError("collection is required for a new or keyed document")
            target = tree.get(collection_id).id
            if key is not None:
                existing = targets.by_key(target, key)
                if existing is not None and existing < 0:
                    pending.write_documents()  # created by an earlier item: read it as stored
                    existing = targets.by_key(target, key)
        if key is not None and tree.class_of(target) == "diary" and is_iso_date(key) and "date" not in meta_dict:
            meta_dict["date"] = key

        # 3. permission and quota (the permit, inside the write transaction), 4. apply
        digest = content_hash(title, body, text, meta_dict, source_uri)
        chars = len(title) + len(content)
        with item_write(
            self._store, shared, actor=actor, run_id=run_id, chars=chars, limits=limits, permit=permit
        ) as tx:
            conn = tx.conn
            if existing is not None:
                current = conn.execute(sa.select(documents).where(documents.c.id == existing)).one()
                tx.allow(Writing("document", collection_id=target, writer=current.writer))
                if current.deleted_at is not None:
                    raise KnowledgeNotFoundError("document")
                if current.content_hash == digest:
                    return UpsertOutcome("unchanged", existing, None)
                if existing in pending.indexing:
                    pending.flush()  # its snapshot reads the chunks an earlier item of the batch wrote
                before = self._snapshot(conn, current)
                doc_date = document_date(meta_dict, updated_at=tx.now, tz=self._store.clock.tz)
                conn.execute(
                    sa.update(documents)
                    .where(documents.c.id == existing)
                    .values(
                        title=title,
                        body=body,
                        meta_json=json.dumps(meta_dict, ensure_ascii=False),
                        source_uri=source_uri,
                        content_hash=digest,
                        writer=str(actor),
                        updated_at=tx.now,
                        doc_date=doc_date,
                    )
                )
                pending.indexing.add(IndexWork(existing, content, title))
                change_id = tx.record(
                    op="documents.update",
                    target_type="document",
                    target_id=existing,
                    summary=f"updated document {title or key or ''}".rstrip(),
                    before=before,
                    after={"title": title},
                )
                outcome = UpsertOutcome("updated", existing, change_id)
            else:
                tx.allow(Writing("document", collection_id=target))
                doc_date = document_date(meta_dict, updated_at=tx.now, tz=self._store.clock.tz)
                row = {
                    "collection_id": target,
                    "key": key,
                    "title": title,
                    "body": body,
                    "meta_json": json.dumps(meta_dict, ensure_ascii=False),
                    "source_uri": source_uri,
                    "content_hash": digest,
                    "created_by": str(actor),
                    "writer": str(actor),
                    "created_at": tx.now,
                    "updated_at": tx.now,
                    "doc_date": doc_date,
                }
                # in a shared write the row waits for the end of the call (see document_batch)
                new_id = _INSERT_DOCUMENT.scalar(conn, row) if pending.new is None else pending.new.add(row)
                targets.created(new_id, target, key)
                pending.indexing.add(IndexWork(new_id, content, title, new=True))
                change_id = tx.record(
                    op="documents.create",
                    target_type="document",
                    target_id=new_id,
                    touched=[("collection", target)],
                    summary=f"created document {title or key or ''}".rstrip(),
                    after={"title": title, "key": key},
                )
                outcome = UpsertOutcome("created", new_id, change_id)
        return outcome

    def delete(
        self,
        *,
        actor: Actor,
        doc_id: int,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> int:
        """Soft-delete a document (revertible); returns the change id. ``no document`` if already gone."""
        with self._store.write(actor=actor, run_id=run_id, limits=limits, permit=permit) as tx:
            existing = self.load(tx.conn, doc_id)
            tx.allow(Writing("document", collection_id=existing.collection_id, writer=existing.writer))
            tx.conn.execute(sa.update(documents).where(documents.c.id == doc_id).values(deleted_at=tx.now))
            return tx.record(
                op="documents.delete",
                target_type="document",
                target_id=doc_id,
                summary=f"deleted document {existing.title or existing.key or ''}".rstrip(),
            )

    def remove_by_writer(self, tx: WriteTx, *, author: str, reason: str) -> None:
        """Soft-delete, inside ``tx``, what ``author`` created: its collections with everything inside
        them and its documents elsewhere; one revertible change per object (K-UNINST, OD-K48).

        Each change's summary is ``"<reason>: document <title>"`` or ``"<reason>: collection <name>"``.
        """
        tree = self._collections.tree(tx.conn)
        doomed: set[int] = set()
        for row in tree.by_id.values():
            if row.created_by == author:
                doomed |= tree.subtree(row.id)
        doc_ids = set(
            tx.conn.execute(
                sa.select(documents.c.id).where(
                    documents.c.deleted_at.is_(None),
                    sa.or_(documents.c.created_by == author, documents.c.collection_id.in_(sorted(doomed))),
                )
            ).scalars()
        )
        for doc_id in sorted(doc_ids):
            title = tx.conn.execute(sa.select(documents.c.title).where(documents.c.id == doc_id)).scalar_one()
            tx.conn.execute(sa.update(documents).where(documents.c.id == doc_id).values(deleted_at=tx.now))
            tx.record(
                op="uninstall.delete",
                target_type="document",
                target_id=doc_id,
                summary=f"{reason}: document {title}",
            )
        # children before parents, so each collection's record is written after what it held
        for collection_id in sorted(doomed, key=lambda c: -tree.depth(c)):
            self._collections.remove(tx, collection_id, summary=f"{reason}: collection {tree.get(collection_id).name}")

    def move(self, *, actor: Actor, doc_id: int, collection_id: int, run_id: str | None = None) -> int | None:
        """Move a document to another collection: the user's act; keyed documents stay (K-DOC-19).
        Returns the change id, or ``None`` when the document is in that collection already (nothing
        is written: a change that moved nothing would stand in the way of undoing earlier ones)."""
        if not actor.is_user:
            raise KnowledgeValidationError("only the user moves documents")
        with self._store.write(actor=actor, run_id=run_id) as tx:
            existing = self.load(tx.conn, doc_id)
            tree = self._collections.tree(tx.conn)
            tree.get(collection_id)
            if existing.key is not None:
                raise KnowledgeValidationError(
                    "a document written with a key cannot be moved; it stays where its key finds it",
                    reason="keyed_document",
                )
            if tree.class_of(collection_id) == "diary":
                raise KnowledgeValidationError("nothing can be moved into the diary collection", reason="inside_diary")
            if existing.collection_id == collection_id:
                return None
            tx.conn.execute(sa.update(documents).where(documents.c.id == doc_id).values(collection_id=collection_id))
            return tx.record(
                op="documents.move",
                target_type="document",
                target_id=doc_id,
                touched=[("collection", collection_id), ("collection", existing.collection_id)],
                summary=f"moved document {existing.title}",
                before={"collection": existing.collection_id},
                after={"collection": collection_id},
            )

    def _snapshot(self, conn: sa.Connection, row: Any) -> dict[str, Any]:
        text = None
        if row.body is None:
            text = "\n\n".join(
                conn.execute(
                    sa.select(chunks.c.text).where(chunks.c.document_id == row.id).order_by(chunks.c.idx)
                ).scalars()
            )
        return {
            "title": row.title,
            "body": row.body,
            "text": text,
            "meta": json.loads(row.meta_json),
            "sourceUri": row.source_uri,
            "writer": row.writer,
            "docDate": row.doc_date,
        }


class _Pending:
    """What one call holds back until its end: the index work of the documents it wrote and, in a
    shared write, the documents it created with the change records (:class:`NewDocuments`); and the
    outcomes so far, which name the ids those get."""

    def __init__(self, conn: sa.Connection, targets: Targets, indexing: PendingIndex, new: NewDocuments | None) -> None:
        self.conn = conn
        self.targets = targets
        self.indexing = indexing
        self.new = new
        self.results: builtins.list[UpsertOutcome] = []

    @property
    def holds_documents(self) -> bool:
        return self.new is not None and self.new.held > 0

    def write_documents(self) -> None:
        """Write the held documents and changes, and use their ids from now on."""
        found = None if self.new is None else self.new.write()
        if found is None:
            return
        document, change = found
        self.targets.renumber(document)
        self.indexing.renumber(document)
        self.results[:] = [_renumbered(r, document, change) for r in self.results]

    def flush(self) -> None:
        """Write everything held: the documents and changes, then the chunks and what derives from them."""
        self.write_documents()
        self.indexing.flush(self.conn)


def _renumbered(outcome: UpsertOutcome, document: Renumbering, change: Renumbering) -> UpsertOutcome:
    change_id = None if outcome.change_id is None else change(outcome.change_id)
    return UpsertOutcome(outcome.status, document(outcome.id), change_id)


# ---------------------------------------------------------------------- reverters


def _revert_create(tx: WriteTx, row: Any) -> None:
    tx.conn.execute(sa.update(documents).where(documents.c.id == row.target_id).values(deleted_at=tx.now))


def _revert_update(tx: WriteTx, row: Any) -> None:
    before = json.loads(row.before_json)
    content = before["body"] if before["body"] is not None else before["text"] or ""
    tx.conn.execute(
        sa.update(documents)
        .where(documents.c.id == row.target_id)
        .values(
            title=before["title"],
            body=before["body"],
            meta_json=json.dumps(before["meta"], ensure_ascii=False),
            source_uri=before["sourceUri"],
            content_hash=content_hash(
                before["title"], before["body"], before["text"], before["meta"], before["sourceUri"]
            ),
            writer=before["writer"],
            updated_at=tx.now,
            doc_date=before["docDate"],
        )
    )
    index_document(tx.conn, row.target_id, content, title=before["title"])


def _revert_delete(tx: WriteTx, row: Any) -> None:
    current = tx.conn.execute(sa.select(documents).where(documents.c.id == row.target_id)).one()
    require_live_place(tx.conn, row.id, current.collection_id, what="the document")
    if current.key is not None:
        clash = tx.conn.execute(
            sa.select(documents.c.id).where(
                documents.c.collection_id == current.collection_id,
                documents.c.key == current.key,
                documents.c.deleted_at.is_(None),
            )
        ).first()
        if clash is not None:
            raise RevertError(
                f"cannot revert change {row.id}: superseded, another document now has the key {current.key}",
                reason="key_taken",
                values={"change": str(row.id), "key": str(current.key)},
            )
    tx.conn.execute(sa.update(documents).where(documents.c.id == row.target_id).values(deleted_at=None))


def _revert_move(tx: WriteTx, row: Any) -> None:
    before = json.loads(row.before_json)
    require_live_place(tx.conn, row.id, before["collection"], what="the document")
    tx.conn.execute(
        sa.update(documents).where(documents.c.id == row.target_id).values(collection_id=before["collection"])
    )


REVERTERS.update(
    {
        "documents.create": _revert_create,
        "documents.update": _revert_update,
        "documents.delete": _revert_delete,
        "documents.move": _revert_move,
        "uninstall.delete:document": _revert_delete,
    }
)
