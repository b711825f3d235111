"""Physical removal, for the REST service's organization content stores only.

Everywhere else knowledge is never deleted: facts expire, documents and collections are marked
``deleted_at``, and every change stays revertible. A knowledge base of the REST service is an
organization's content store whose deletion is irreversible (KB-DEL-04): its documents go with their
chunks, full-text rows, vectors and mentions, and the change records about them go too, since those
keep snapshots of the very bodies that must disappear.

Every function runs inside the caller's write transaction (``Store.write``); none commits.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from notochord.db.schema import change_objects, changes, collection_ticks, collections, documents
from notochord.knowledge.indexing import unindex_document

__all__ = ["collection_subtree", "purge_collections", "purge_documents"]

# a large knowledge base must not exceed the driver's bound-parameter limit
_SLICE = 500


def collection_subtree(conn: sa.Connection, root: int) -> list[int]:
    """The collection and everything below it (deleted or not), breadth first."""
    order = [root]
    frontier = [root]
    while frontier:
        below = list(conn.execute(sa.select(collections.c.id).where(collections.c.parent_id.in_(frontier))).scalars())
        below = [c for c in below if c not in order]
        order.extend(below)
        frontier = below
    return order


def purge_documents(conn: sa.Connection, doc_ids: Sequence[int]) -> None:
    """Delete the documents with everything derived from them and every change record about them."""
    for doc_id in doc_ids:
        unindex_document(conn, doc_id)
    _purge_change_records(conn, "document", doc_ids)
    for start in range(0, len(doc_ids), _SLICE):
        conn.execute(sa.delete(documents).where(documents.c.id.in_(doc_ids[start : start + _SLICE])))


def purge_collections(conn: sa.Connection, subtree: Sequence[int]) -> list[int]:
    """Delete a collection subtree (from :func:`collection_subtree`) with its documents; their ids.

    Whatever refers to these collections from outside ``knowledge/`` (a knowledge base row) must be
    gone first.
    """
    doc_ids = list(conn.execute(sa.select(documents.c.id).where(documents.c.collection_id.in_(subtree))).scalars())
    purge_documents(conn, doc_ids)
    _purge_change_records(conn, "collection", subtree)
    conn.execute(sa.delete(collection_ticks).where(collection_ticks.c.collection_id.in_(subtree)))
    # children before parents: the subtree is in breadth-first order
    for collection_id in reversed(subtree):
        conn.execute(sa.delete(collections).where(collections.c.id == collection_id))
    return doc_ids


def _purge_change_records(conn: sa.Connection, object_type: str, object_ids: Sequence[int]) -> None:
    change_ids: set[int] = set()
    for start in range(0, len(object_ids), _SLICE):
        part = list(object_ids[start : start + _SLICE])
        change_ids.update(
            conn.execute(
                sa.select(change_objects.c.change_id)
                .where(change_objects.c.object_type == object_type, change_objects.c.object_id.in_(part))
                .distinct()
            ).scalars()
        )
    ordered = sorted(change_ids)
    for start in range(0, len(ordered), _SLICE):
        part = ordered[start : start + _SLICE]
        conn.execute(sa.delete(change_objects).where(change_objects.c.change_id.in_(part)))
        conn.execute(sa.delete(changes).where(changes.c.id.in_(part)))
