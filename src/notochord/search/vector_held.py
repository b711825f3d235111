"""A space's vectors held in memory (SQLite), kept in step with the store and saved across restarts.

Rules (the vector leg as a whole: :mod:`~notochord.search.vector_index`):

- **Loaded on the first search, then kept in step by every search.** The memory
  (:class:`~notochord.search.vector_memory.VectorMemory`) holds the current model's vectors that
  match their chunk's current text. New vector rows — from any process — show as a larger ``rowid``
  and only they are read; when the caller's data version moved (a document edited, deleted, moved
  or repaired) the chunks of the documents the change log names since are compared with the
  store's (all held ids, when the log cannot say), so a vector that left the store stops ranking at
  the next search. The embedding worker adds what it stores (:meth:`HeldVectors.added`), and its
  poll compares every held id with the store (:meth:`HeldVectors.sync`).
- **Saved across restarts.** At close, a space holding at least ``saved_matrix_min`` vectors that
  changed enough since they were saved writes them to a file beside its database
  (:mod:`~notochord.search.vector_file`). The next process loads that file instead of reading and
  decoding every vector row, and trusts it only after checking it: same model, dimension and
  full-text generation (a repair draws a new one), a change log not behind it, and a sample of
  vectors byte-for-byte as stored. It then compares the ids with the store's (a covering index
  scan of ids, no vector read): ids that lost their vector leave, ids that gained one are read —
  also a row that took a deleted row's ``rowid``, which a mark alone cannot tell. Chunks rewritten
  in place are found through the change log as above. A file that does not check out is ignored
  and every vector read from the store.

Measured with ``bench/retrieval.py --synthetic`` (the restart line of its table).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db.dialect import json_ids, listed_ids
from notochord.db.engine import read_tx
from notochord.errors import KnowledgeValidationError
from notochord.search import inverted_index_delta as delta
from notochord.search import vector_file
from notochord.search.vector_documents import HeldDocuments
from notochord.search.vector_file import graph_file
from notochord.search.vector_memory import VectorMemory
from notochord.search.vectors import VectorMatrix, from_blob, to_blob

__all__ = ["SAVED_MATRIX_MIN", "HeldVectors"]

log = logging.getLogger(__name__)

SAVED_MATRIX_MIN = 20_000
"""A space holding fewer vectors keeps no saved matrix: reading them from the store takes ~0.2 s."""
_RESAVE_SHARE = 0.01
"""At close, the matrix is saved again once this share of its rows changed since it was saved or restored."""
_NAMED_MAX = 2_000
"""Past this many documents named since the last comparison, every held id is compared instead."""


class HeldVectors:
    """One space's vectors of one model in memory (see module rules); thread-safe."""

    def __init__(
        self, engine: sa.Engine, model_id: str, dim: int, *, hnsw_threshold: int, saved_matrix_min: int
    ) -> None:
        self._engine = engine
        self._model_id = model_id
        self._dim = dim
        self._hnsw_threshold = hnsw_threshold
        self._saved_matrix_min = saved_matrix_min
        self._lock = threading.Lock()
        self._memory: VectorMemory | None = None
        self._top: Hashable = 0  # the mark of the vectors the memory has read (:meth:`_top_rowid`)
        self._version: Hashable | None = None  # the caller's data version at the last comparison
        self._feed: int | None = None  # the newest change record at the last comparison
        self._documents = HeldDocuments()  # each held chunk's document
        self._generation: str | None = None  # the full-text generation at the last whole comparison
        self._saved_changes: int | None = None  # the memory's changes when it was saved or restored
        self._origin: str | None = None

    @property
    def memory(self) -> VectorMemory | None:
        """The in-memory vectors, once a search loaded them."""
        return self._memory

    @property
    def origin(self) -> str | None:
        """``"restored"`` (from the saved matrix file) or ``"read"`` (from the store) once loaded."""
        return self._origin

    def reset(self) -> None:
        """Forget the vectors held (they were dropped in the store); they load again on the next search."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
            self._memory = None
            self._top = 0
            self._version = None
            self._feed = None
            self._documents.clear()
            self._generation = None
            self._saved_changes = None
            self._origin = None

    def close(self) -> None:
        """Save the vectors for the next process (when worth it) and stop a graph build."""
        if self._memory is not None:
            self.save()
            self._memory.close(save=True)

    def added(self, ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        """Vectors the worker just stored: held at once when the vectors are loaded."""
        with self._lock:
            if self._memory is not None and len(ids):
                self._memory.add(ids, vectors)

    def _current_rows(self, conn: sa.Connection, where: str, params: Mapping[str, Any]) -> list[Any]:
        """``(chunk_id, vector)`` of the current model's vectors that still match their chunk's text."""
        return list(
            conn.execute(
                sa.text(
                    "SELECT v.chunk_id, v.vector, c.document_id FROM chunk_vectors AS v "
                    "JOIN chunks AS c ON c.id = v.chunk_id "
                    f"WHERE v.model_id = :model AND v.text_hash = c.text_hash AND {where}"
                ),
                {"model": self._model_id, **params},
            ).all()
        )

    def _add_rows(self, memory: VectorMemory, rows: Sequence[Any]) -> None:
        if rows:
            ids = np.asarray([int(r[0]) for r in rows], np.int64)
            memory.add(ids, _decode([bytes(r[1]) for r in rows], self._dim))
            self._documents.note(ids, np.asarray([int(r[2]) for r in rows], np.int64))

    @staticmethod
    def _top_rowid(conn: sa.Connection) -> Hashable:
        """A mark that moves whenever vector rows are added: SQLite gives new rows a larger ``rowid``,
        so the rows past the mark are read alone. (On PostgreSQL no vectors are held in memory.)"""
        return int(conn.execute(sa.text("SELECT coalesce(max(rowid), 0) FROM chunk_vectors")).scalar_one())

    def _diff(self, conn: sa.Connection, memory: VectorMemory) -> None:
        """Make ``memory`` hold exactly the current vectors of the store (as of ``conn``'s snapshot)."""
        stored = _ids(
            conn,
            "SELECT group_concat(v.chunk_id) FROM chunk_vectors AS v JOIN chunks AS c ON c.id = v.chunk_id "
            "WHERE v.model_id = :model AND v.text_hash = c.text_hash",
            self._model_id,
        )
        memory.remove(np.setdiff1d(memory.matrix.ids(), stored, assume_unique=True))
        self._read_missing(conn, memory, stored)
        self._generation = delta.generation(conn)

    def _read_missing(self, conn: sa.Connection, memory: VectorMemory, ids: npt.NDArray[np.int64]) -> None:
        """Read the current vectors of those ``ids`` that ``memory`` does not hold (a few hundred per query)."""
        missing = ids[memory.matrix.rows_of(ids) < 0].tolist()
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            self._add_rows(
                memory, self._current_rows(conn, f"v.chunk_id IN ({json_ids(conn, 'ids')})", {"ids": json.dumps(part)})
            )

    def _diff_named(self, conn: sa.Connection, memory: VectorMemory) -> bool:
        """Compare only the chunks of the documents the change log names since the last comparison
        (and read the vector rows added since); ``False`` when the log cannot say (compare everything).

        Chunks that left with their document's rewrite are found by the document they belonged to
        (:class:`~notochord.search.vector_documents.HeldDocuments`).
        """
        feed = delta.newest_change(conn)
        if self._feed is None or feed < self._feed:
            return False
        named = delta.named_documents(conn, self._feed, limit=_NAMED_MAX, counted=False)
        if named is None:
            return False
        if len(named):
            self._read_missing(conn, memory, self._documents.stale(conn, memory, named, self._model_id))
        self._add_rows(memory, self._current_rows(conn, "v.rowid > :top", {"top": self._top}))
        self._feed = feed
        return True

    def sync(self) -> None:
        """Bring a loaded matrix up to date with vectors other processes stored or dropped."""
        with self._lock:
            memory = self._memory
            if memory is None:
                return
            with read_tx(self._engine) as conn:
                top = self._top_rowid(conn)
                self._diff(conn, memory)
                self._feed = delta.newest_change(conn)
                self._top = top

    def refresh(self, version: Hashable | None, within: sa.Connection | None = None) -> VectorMemory:
        """The in-memory vectors, current with the store: loaded on first use, then kept in step.

        New vector rows (by any process) show as a larger rowid and are read alone; when the
        caller's data ``version`` moved (chunks edited, deleted or repaired), the held ids are
        compared with the store's as well, so that nothing that lost its vector keeps ranking.
        ``within`` is the caller's read transaction, read in rather than opening one.
        """
        with self._lock:
            with read_tx(self._engine) if within is None else contextlib.nullcontext(within) as conn:
                top = self._top_rowid(conn)
                memory = self._memory
                if memory is None:
                    memory = self._restored(conn, top)
                    if memory is None:
                        memory = self._new_memory()
                        self._feed = delta.newest_change(conn)
                        self._generation = delta.generation(conn)
                        self._add_rows(memory, self._current_rows(conn, "1 = 1", {}))
                        self._origin = "read"
                    self._memory = memory
                elif version is not None and version != self._version:
                    if not self._diff_named(conn, memory):
                        self._diff(conn, memory)
                        self._feed = delta.newest_change(conn)
                elif top != self._top:
                    self._add_rows(memory, self._current_rows(conn, "v.rowid > :top", {"top": self._top}))
                self._top = top
                if version is not None:
                    self._version = version
            return memory

    def _new_memory(self, matrix: VectorMatrix | None = None) -> VectorMemory:
        return VectorMemory(
            self._dim,
            hnsw_threshold=self._hnsw_threshold,
            graph_file=graph_file(self._engine, self._model_id),
            matrix=matrix,
        )

    # ---------------------------------------------------------------- the saved matrix

    def _restored(self, conn: sa.Connection, top: Hashable) -> VectorMemory | None:
        """The vectors saved by an earlier process, checked and brought up to date with ``conn``'s
        snapshot; ``None`` when there is no usable file (the caller reads the store)."""
        path = vector_file.matrix_file(self._engine, self._model_id)
        if path is None or not path.is_file() or not delta.has_change_log(conn):
            return None
        generation, newest = delta.generation(conn), delta.newest_change(conn)
        saved = vector_file.load(
            path,
            model_id=self._model_id,
            dim=self._dim,
            # a repair since (another generation) or a store that went back in time: read it all again
            accept=lambda header: header.get("generation") == generation and int(header["feed"]) <= newest,
        )
        if saved is None:
            return None
        try:
            matrix = VectorMatrix.holding(saved.ids, saved.rows)
        except KnowledgeValidationError as exc:
            log.warning("ignoring the saved vectors %s: %s", path, exc)
            return None
        if not self._same_as_stored(conn, matrix, saved.sample):
            log.warning("ignoring the saved vectors %s: they were saved from other data", path)
            return None
        memory = self._new_memory(matrix)
        known = saved.documents >= 0
        self._documents.note(saved.ids[known], saved.documents[known])
        # every id with a vector of this model now: ids that lost theirs leave, ids that gained one
        # are read (also a row that took a deleted one's place, which a row id alone cannot tell)
        stored = _ids(conn, "SELECT group_concat(chunk_id) FROM chunk_vectors WHERE model_id = :model", self._model_id)
        memory.remove(np.setdiff1d(saved.ids, stored, assume_unique=True))
        self._read_missing(conn, memory, stored)
        # a chunk rewritten in place keeps its id: the documents the change log names since are compared
        self._top, self._feed, self._generation = top, saved.feed, generation
        if not self._diff_named(conn, memory):
            self._diff(conn, memory)
        self._feed = newest
        self._saved_changes = 0
        self._origin = "restored"
        return memory

    def _same_as_stored(self, conn: sa.Connection, matrix: VectorMatrix, sample: list[int]) -> bool:
        """Whether the sampled vectors the store still has are exactly the saved ones (and one is there)."""
        if not sample:
            return True
        rows = conn.execute(
            sa.text(
                f"SELECT chunk_id, vector FROM chunk_vectors WHERE model_id = :model "
                f"AND chunk_id IN ({json_ids(conn, 'ids')})"
            ),
            {"model": self._model_id, "ids": json.dumps(sample)},
        ).all()
        if not rows:
            return False
        for chunk_id, blob in rows:
            if int(chunk_id) not in matrix or bytes(blob) != to_blob(matrix.get([int(chunk_id)])[0]):
                return False
        return True

    def save(self) -> None:
        """Save the held vectors for the next process, when they are many and changed enough since."""
        memory = self._memory
        if memory is None or self._feed is None or self._generation is None:
            return
        if not isinstance(self._top, int):
            return
        path = vector_file.matrix_file(self._engine, self._model_id)
        with self._lock, memory.lock:
            held = len(memory)
            unsaved = held if self._saved_changes is None else memory.changes - self._saved_changes
            if path is None or held < self._saved_matrix_min or unsaved < max(1, _RESAVE_SHARE * held):
                return
            ids, rows = memory.matrix.held()
            saved = vector_file.save(
                path,
                model_id=self._model_id,
                ids=ids,
                documents=self._documents.of(ids),
                rows=rows,
                top=int(self._top),
                feed=self._feed,
                generation=self._generation,
            )
            if saved:
                self._saved_changes = memory.changes


def _decode(blobs: Sequence[bytes], dim: int) -> npt.NDArray[np.float32]:
    """Vector rows written by :func:`to_blob`, as one matrix (one copy, not one array per row)."""
    width = 4 * dim
    for blob in blobs:
        if len(blob) != width:
            from_blob(blob, dim=dim)  # raises the storage error that names the problem
    return np.frombuffer(b"".join(blobs), dtype="<f4").astype(np.float32).reshape(len(blobs), dim)


def _ids(conn: sa.Connection, sql: str, model_id: str) -> npt.NDArray[np.int64]:
    """The chunk ids ``sql`` lists with ``group_concat``, sorted (each id once: a key of the table,
    or of the join), read as one text rather than a Python row per id."""
    return np.sort(listed_ids(conn.execute(sa.text(sql), {"model": model_id}).scalar()))
