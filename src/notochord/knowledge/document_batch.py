"""What one call that writes documents reads once and writes last (``Documents.upsert_many``).

A call that writes many documents reads the collection tree and the documents its items name
(by id or by key) in one statement at the start (:class:`Targets`), and writes the chunks,
full-text rows and mentions of all of them in a few statements at the end (:class:`PendingIndex`,
:func:`~notochord.knowledge.indexing.index_documents`), inside the same transaction: the result is
what writing the items one call at a time stores.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import documents
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.collections import CollectionTree
from notochord.knowledge.indexing import IndexWork, index_documents
from notochord.knowledge.quotas import DailyLimits, charge
from notochord.knowledge.writes import Actor, Permit, Store, WriteTx

__all__ = ["PendingIndex", "Targets", "item_write"]

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

    @classmethod
    def read(cls, conn: sa.Connection, tree: CollectionTree, items: Sequence[Mapping[str, Any]]) -> Targets:
        found = cls(conn, tree)
        ids = sorted({i for i in (item.get("doc_id") for item in items) if type(i) is int})
        pairs = sorted(
            {
                (c, k)
                for c, k in ((item.get("collection_id"), item.get("key")) for item in items)
                if type(c) is int and isinstance(k, str) and k
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

    def created(self, doc_id: int, collection_id: int, key: str | None) -> None:
        self._ids[doc_id] = collection_id
        if key is not None:
            self._keys[(collection_id, key)] = doc_id


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
