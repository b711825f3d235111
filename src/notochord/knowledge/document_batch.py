"""What one call that writes documents reads once and writes last (``Documents.upsert_many``).

A call that writes many documents reads the collection tree and the documents its items name
(by id or by key) in one statement at the start (:class:`Targets`), and writes the chunks,
full-text rows and mentions of all of them in a few statements at the end (:class:`PendingIndex`,
:func:`~notochord.knowledge.indexing.index_documents`), inside the same transaction: the result is
what writing the items one call at a time stores.

When the items share one write (no permit to ask per item), the documents they create and the
change records of all of them wait too (:class:`NewDocuments`): each is decided, checked, charged
and recorded in its turn under a provisional id (-1, -2, …), and at the end, or before an item
reads one of them, the ids are drawn in one statement (on PostgreSQL from the tables' sequences,
on SQLite the largest ids plus one: the call holds the write lock, so they are the ids one write at
a time would get, in the same order) and the rows go in one statement per table (``COPY`` on
PostgreSQL). A batch then costs a fixed number of round trips, not two per document.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.bulk import draw_ids
from notochord.db.schema import documents
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.collections import CollectionTree
from notochord.knowledge.indexing import IndexWork, index_documents
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, charge, refuse_nul_in, storable
from notochord.knowledge.writes import Actor, Permit, Store, WriteTx

__all__ = ["NewDocuments", "PendingIndex", "Renumbering", "Targets", "item_write"]

Renumbering = Callable[[int], int]
"""A provisional id (negative) to the id the database gave it; any other id to itself."""

DOCUMENT_COLUMNS = (
    "id",
    "collection_id",
    "key",
    "title",
    "body",
    "meta_json",
    "source_uri",
    "content_hash",
    "created_by",
    "writer",
    "created_at",
    "updated_at",
    "doc_date",
)
_INSERT_DOCUMENTS = Prepared(sa.insert(documents))

_LIVE = sa.select(documents.c.id, documents.c.collection_id, documents.c.key).where(documents.c.deleted_at.is_(None))


class Targets:
    """The collection tree and the live documents a call's items name, read once for all of them.

    Documents the call creates are added as it goes, so a later item with the same key updates
    the document an earlier one created, as separate calls would.
    """

    def __init__(self, conn: sa.Connection, tree: CollectionTree) -> None:
        self.tree = tree
        self._conn = conn
        self._ids: dict[int, int] = {}
        self._keys: dict[tuple[int, str], int] = {}
        self._asked_ids: set[int] = set()
        self._asked_keys: set[tuple[int, str]] = set()
        # created under a provisional id: found by key only (a caller's id never names them)
        self._provisional: dict[int, tuple[int, str | None]] = {}

    @classmethod
    def read(cls, conn: sa.Connection, tree: CollectionTree, items: Sequence[Mapping[str, Any]]) -> Targets:
        found = cls(conn, tree)
        ids = sorted({i for i in (item.get("doc_id") for item in items) if type(i) is int})
        pairs = sorted(
            {
                (c, k)
                for c, k in ((item.get("collection_id"), item.get("key")) for item in items)
                # a key the store cannot hold is refused by its item, in its turn
                if type(c) is int and isinstance(k, str) and k and storable(k)
            }
        )
        if ids or pairs:
            found._asked_ids.update(ids)
            found._asked_keys.update(pairs)
            named = sa.or_(documents.c.id.in_(ids), sa.tuple_(documents.c.collection_id, documents.c.key).in_(pairs))
            found._learn(conn.execute(_LIVE.where(named)))
        return found

    def _learn(self, rows: Iterable[Any]) -> None:
        for row in rows:
            self._ids[int(row.id)] = int(row.collection_id)
            if row.key is not None:
                self._keys[(int(row.collection_id), str(row.key))] = int(row.id)

    def by_id(self, doc_id: Any) -> tuple[int, int]:
        """The live document ``doc_id`` and its collection; ``no document`` if there is none."""
        if type(doc_id) is int and doc_id in self._ids:
            return doc_id, self._ids[doc_id]
        if type(doc_id) is int and doc_id in self._asked_ids:
            raise KnowledgeNotFoundError("document")
        found = self._conn.execute(_LIVE.where(documents.c.id == doc_id)).first()
        if found is None:
            raise KnowledgeNotFoundError("document")
        self._learn([found])
        return int(found.id), int(found.collection_id)

    def by_key(self, collection_id: int, key: str) -> int | None:
        """The live document with ``key`` in the collection, if any."""
        if (collection_id, key) not in self._asked_keys:
            self._asked_keys.add((collection_id, key))
            named = sa.and_(documents.c.collection_id == collection_id, documents.c.key == key)
            self._learn(self._conn.execute(_LIVE.where(named)))
        return self._keys.get((collection_id, key))

    def knows(self, doc_id: Any) -> bool:
        """Whether ``doc_id`` is a live document this call has read or written (answered from memory)."""
        return type(doc_id) is int and doc_id in self._ids

    def created(self, doc_id: int, collection_id: int, key: str | None) -> None:
        if doc_id < 0:
            self._provisional[doc_id] = (collection_id, key)
        else:
            self._ids[doc_id] = collection_id
        if key is not None:
            self._keys[(collection_id, key)] = doc_id

    def renumber(self, document: Renumbering) -> None:
        """The documents created under provisional ids now have their own."""
        provisional, self._provisional = self._provisional, {}
        for given, (collection_id, key) in provisional.items():
            self._ids[document(given)] = collection_id
            if key is not None and self._keys.get((collection_id, key)) == given:
                self._keys[(collection_id, key)] = document(given)


class PendingIndex:
    """The index work of the documents a call wrote, done at once before the call's transaction ends."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._work: dict[int, IndexWork] = {}

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._work

    def add(self, work: IndexWork) -> None:
        # a document written twice is flushed in between (its snapshot needs its chunks)
        assert work.document_id not in self._work
        self._work[work.document_id] = work

    def flush(self, conn: sa.Connection) -> None:
        work, self._work = list(self._work.values()), {}
        if work:
            index_documents(conn, work, max_chars=self._max_chars)

    def renumber(self, document: Renumbering) -> None:
        self._work = {
            document(doc_id): dataclasses.replace(work, document_id=document(doc_id))
            for doc_id, work in self._work.items()
        }


class NewDocuments:
    """The documents created in a shared write, and its change records, held until they are written
    together (see the module's rules).

    Each document's row is checked for what the store cannot hold when it is added, as its own
    ``INSERT`` would be, so a bad item is refused in its turn and names its index.
    """

    def __init__(self, tx: WriteTx) -> None:
        self._tx = tx
        self._rows: list[tuple[Any, ...]] = []
        tx.defer_changes_provisionally()

    @property
    def held(self) -> int:
        """How many documents wait to be written."""
        return len(self._rows)

    def add(self, row: Mapping[str, Any]) -> int:
        """Hold a new document's row (its columns but ``id``); returns its provisional id."""
        refuse_nul_in(documents.name, row)
        doc_id = -len(self._rows) - 1
        self._rows.append((doc_id, *(row[name] for name in DOCUMENT_COLUMNS[1:])))
        return doc_id

    def write(self) -> tuple[Renumbering, Renumbering] | None:
        """Give the held documents and changes their ids and write them, documents first (their
        chunks and changes refer to them); returns how provisional document and change ids map
        (``None``: nothing was held)."""
        tx = self._tx
        count, recorded = len(self._rows), tx.provisional_changes
        if not count and not recorded:
            return None
        drawn = draw_ids(tx.conn, {"documents": count, "changes": recorded})
        doc_ids, change_ids = drawn["documents"], drawn["changes"]

        def document(given: int) -> int:
            return doc_ids[-given - 1] if given < 0 else given

        def change(given: int) -> int:
            return change_ids[-given - 1] if given < 0 else given

        tx.renumber(change, {"document": document})
        rows, self._rows = [(document(row[0]), *row[1:]) for row in self._rows], []
        _INSERT_DOCUMENTS.run_tuples(tx.conn, DOCUMENT_COLUMNS, rows, texts_checked=True, copy=True)
        tx.flush()
        tx.defer_changes_provisionally()  # what is recorded from here on is numbered from -1 again
        return document, change


@contextlib.contextmanager
def item_write(
    store: Store,
    shared: WriteTx | None,
    *,
    actor: Actor,
    run_id: str | None,
    chars: int,
    limits: DailyLimits | None,
    permit: Permit | None,
) -> Iterator[WriteTx]:
    """The write of one item: its own :meth:`~notochord.knowledge.writes.Store.write`, or a turn of
    the ``shared`` one, charged to the writer's quota exactly as its own write would be."""
    if shared is None:
        with store.write(actor=actor, run_id=run_id, chars=chars, limits=limits, permit=permit) as tx:
            yield tx
        return
    if limits is not None and not actor.is_user:
        charge(shared.conn, writer=str(actor), day=shared.day, chars=chars, limits=limits)
    yield shared
