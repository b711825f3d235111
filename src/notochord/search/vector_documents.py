"""Which document each in-memory vector's chunk belongs to, so a write is compared by its documents.

:class:`~notochord.search.vector_index.VectorIndex` keeps its in-memory vectors in step with the
store. After a write it compares only the chunks of the documents the change log names since the
last comparison (:func:`~notochord.search.inverted_index_delta.named_documents`): their current
chunks and whether each still has a vector matching its text, and the held chunks of those documents
that are gone (a rewrite replaces a document's chunks by new ids). The latter needs each held
chunk's document, remembered here as vectors are read (the worker's own additions are looked up
when first needed). Memory: 8 bytes per chunk id up to the highest held.
"""

from __future__ import annotations

import json

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db.dialect import json_ids
from notochord.search.vector_memory import VectorMemory

__all__ = ["HeldDocuments"]

IdArray = npt.NDArray[np.int64]
_PART = 500


class HeldDocuments:
    """Per chunk id: its document (``-1`` when not known yet). Used under the vector index's lock."""

    def __init__(self) -> None:
        self._of = np.full(0, -1, np.int64)

    def clear(self) -> None:
        self._of = np.full(0, -1, np.int64)

    def note(self, ids: IdArray, docs: IdArray) -> None:
        if ids.size and int(ids.max()) >= self._of.size:
            grown = np.full(max(int(ids.max()) + 1, 2 * self._of.size), -1, np.int64)
            grown[: self._of.size] = self._of
            self._of = grown
        self._of[ids] = docs

    def of(self, held: IdArray) -> IdArray:
        """The document of each id (``-1`` where not known)."""
        docs = np.full(held.size, -1, np.int64)
        inside = held < self._of.size
        docs[inside] = self._of[held[inside]]
        return docs

    def stale(self, conn: sa.Connection, memory: VectorMemory, named: IdArray, model_id: str) -> IdArray:
        """Chunks of the ``named`` documents ``memory`` holds that it should not: gone from their
        document, or whose vector no longer matches their text — and held chunks that are gone
        altogether. Returns the named documents' chunks that have a current vector."""
        found = conn.execute(
            sa.text(
                "SELECT c.id, v.chunk_id FROM chunks AS c LEFT JOIN chunk_vectors AS v "
                "ON v.chunk_id = c.id AND v.model_id = :model AND v.text_hash = c.text_hash "
                f"WHERE c.document_id IN ({json_ids(conn, 'docs')})"
            ),
            {"model": model_id, "docs": json.dumps(named.tolist())},
        ).all()
        held = memory.matrix.ids()
        docs = self.of(held)
        unknown = held[docs < 0]
        gone = np.zeros(0, np.int64)
        if unknown.size:
            known: dict[int, int] = {}
            for start in range(0, unknown.size, _PART):
                part = unknown[start : start + _PART].tolist()
                rows = conn.execute(
                    sa.text(f"SELECT id, document_id FROM chunks WHERE id IN ({json_ids(conn, 'ids')})"),
                    {"ids": json.dumps(part)},
                )
                known.update((int(r[0]), int(r[1])) for r in rows)
            ids = np.asarray(sorted(known), np.int64)
            self.note(ids, np.asarray([known[i] for i in ids.tolist()], np.int64))
            gone = np.setdiff1d(unknown, ids)
            docs = self.of(held)
        now = np.asarray([int(r[0]) for r in found], np.int64)
        left = held[np.isin(docs, named) & ~np.isin(held, now)]
        unmatched = np.asarray([int(r[0]) for r in found if r[1] is None], np.int64)
        stale = np.union1d(np.union1d(left, unmatched), gone)
        if stale.size:
            memory.remove(stale)
        return np.asarray([int(r[0]) for r in found if r[1] is not None], np.int64)
