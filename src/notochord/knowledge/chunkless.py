"""Documents an earlier version left without a chunk, indexed once when a space opens for writing.

Every document has at least one chunk (:mod:`notochord.knowledge.indexing`): one without text is one
empty passage carrying its title. Earlier versions gave such a document none, so no search found
it, and a store they wrote keeps it so until ``notochord check --repair``. Rules:

- **Once per store.** When a writable space opens, :func:`index_chunkless` indexes every document
  that has no chunk, in one write transaction, and records in ``space_meta`` (:data:`DONE_KEY`)
  that it ran. Every later open reads that one row by its key and looks no further
  (:func:`all_chunked`), so a large space pays for the search of such documents once.
- **Deleted documents too.** A document is deleted by marking it and keeps its chunks, and a revert
  restores it without indexing it again: a deleted document left without a chunk would come back
  invisible. So every document without one is indexed, as the check expects.
- **Maintenance, not an edit.** Nothing is recorded in the change log (the user did not write these
  documents now, and nothing here is theirs to undo), as a repair records nothing.
- **Held indexes stay current without a rebuild.** The new chunks take ids above every earlier
  one, so a full-text index held in memory (here or in another process) gains them as rows
  appended, and the candidates of a search, seeing the full-text index move while the change log
  did not, are read whole once. The chunks have no vector yet, which queues them for embedding.
- **A store that cannot be written is left as it is.** A read-only SQLite file is known when it is
  opened and is not asked; a PostgreSQL database that refuses writes refuses this one, and the
  space opens all the same, to be upgraded when it is opened for writing.
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa

from notochord.db.engine import is_read_only
from notochord.db.schema import chunks, documents, space_meta
from notochord.errors import ReadOnlyStoreError
from notochord.knowledge.indexing import IndexWork, chunk_sizes, index_documents
from notochord.knowledge.writes import USER, Store
from notochord.search.chunking import DEFAULT_MAX_CHARS

__all__ = ["DONE_KEY", "all_chunked", "index_chunkless"]

DONE_KEY = "documents.all_chunked"
"""``space_meta`` key recording that the documents left without a chunk were indexed (its value:
when, and how many)."""

_DONE = sa.select(space_meta.c.key).where(space_meta.c.key == DONE_KEY)
# an anti-join on the chunks' (document_id, idx) index: one probe a document, no chunk read
_CHUNKLESS = (
    sa.select(documents.c.id, documents.c.collection_id, documents.c.title, documents.c.body)
    .where(~sa.exists().where(chunks.c.document_id == documents.c.id))
    .order_by(documents.c.id)
)


def all_chunked(conn: sa.Connection) -> bool:
    """Whether the store records that no document is left without a chunk (one row read by its key)."""
    return conn.execute(_DONE).first() is not None


def index_chunkless(store: Store) -> int:
    """Index every document without a chunk and record that it was done; how many were indexed.

    Nothing happens on a store that cannot be written, or that records it was done already (another
    process may have done it while this one waited for the write lock).
    """
    if is_read_only(store.engine):
        return 0
    try:
        with store.write(actor=USER, run_id=None) as tx:
            if all_chunked(tx.conn):
                return 0
            found = tx.conn.execute(_CHUNKLESS).all()
            if found:
                sizes = chunk_sizes(tx.conn)
                by_size: defaultdict[int, list[IndexWork]] = defaultdict(list)
                for doc in found:
                    # an imported document keeps no body: without a chunk, its text held nothing to cut
                    work = IndexWork(doc.id, doc.body or "", doc.title, new=True)
                    by_size[sizes.get(doc.collection_id, DEFAULT_MAX_CHARS)].append(work)
                for max_chars, works in by_size.items():
                    index_documents(tx.conn, works, max_chars=max_chars)
            tx.conn.execute(sa.insert(space_meta).values(key=DONE_KEY, value=f"{tx.now} {len(found)}"))
    except ReadOnlyStoreError:
        return 0
    return len(found)
