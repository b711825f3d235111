"""The vector leg of search for one space: background embedding and an exact in-memory matrix.

Rules:

- Vectors are derived data. A chunk without a ``chunk_vectors`` row for the current model is
  *pending*; the worker embeds pending chunks in batches after their document's transaction has
  committed, so a write never waits for the model. Rows of another model are ignored and re-embedded
  (a model change re-indexes in the background).
- The matrix holds every vector of the current model; it is loaded from the store on first use and
  updated as the worker commits. Chunks that disappear (document edited or deleted) may linger in
  the matrix, so callers always pass the ids they may see (``allowed``) and nothing else can rank.
- One inference runs at a time per space; ``wait()`` drains the queue in the caller's thread (tests,
  bulk imports, ``notochord reindex``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db.engine import read_tx, write_tx
from notochord.db.schema import chunk_vectors, chunks, documents
from notochord.search.embeddings import Embedder
from notochord.search.vectors import VectorMatrix, from_blob, to_blob

__all__ = ["VectorIndex"]

log = logging.getLogger(__name__)

BATCH = 32


class VectorIndex:
    def __init__(self, engine: sa.Engine, embedder: Embedder | None, *, background: bool) -> None:
        self._engine = engine
        self.embedder = embedder
        self._matrix: VectorMatrix | None = None
        self._work_lock = threading.Lock()
        self._matrix_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if background and embedder is not None:
            self._thread = threading.Thread(target=self._loop, name="notochord-embedder", daemon=True)
            self._thread.start()

    @property
    def enabled(self) -> bool:
        return self.embedder is not None

    def notify(self) -> None:
        """New chunks were committed: wake the worker."""
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    # ---------------------------------------------------------------- the queue

    def _pending_query(self, model_id: str) -> sa.Select[Any]:
        done = sa.select(chunk_vectors.c.chunk_id).where(chunk_vectors.c.model_id == model_id)
        return (
            sa.select(chunks.c.id, chunks.c.text, documents.c.title)
            .join(documents, documents.c.id == chunks.c.document_id)
            .where(chunks.c.id.not_in(done))
            .order_by(chunks.c.id)
        )

    def pending(self) -> int:
        if self.embedder is None:
            return 0
        with read_tx(self._engine) as conn:
            sub = self._pending_query(self.embedder.model_id).subquery()
            return int(conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar_one())

    def process_batch(self, *, limit: int = BATCH) -> int:
        """Embed up to ``limit`` pending chunks; returns how many were embedded."""
        if self.embedder is None:
            return 0
        with self._work_lock:
            model_id = self.embedder.model_id
            with read_tx(self._engine) as conn:
                batch = conn.execute(self._pending_query(model_id).limit(limit)).all()
            if not batch:
                return 0
            # the passage is embedded with its document's title, as the full-text index sees it
            vectors = self.embedder.embed_passages([f"{r.title}\n{r.text}" if r.title else r.text for r in batch])
            with write_tx(self._engine) as conn:
                # a chunk may have been deleted while we embedded; keep only the ones still there
                alive = set(
                    conn.execute(sa.select(chunks.c.id).where(chunks.c.id.in_([r.id for r in batch]))).scalars()
                )
                rows = [
                    {"chunk_id": r.id, "model_id": model_id, "vector": to_blob(v)}
                    for r, v in zip(batch, vectors, strict=True)
                    if r.id in alive
                ]
                if rows:
                    conn.execute(sa.insert(chunk_vectors), rows)
            kept = [i for i, r in enumerate(batch) if r.id in alive]
            with self._matrix_lock:
                if self._matrix is not None and kept:
                    ids = [batch[i].id for i in kept]
                    self._matrix.remove(ids)
                    self._matrix.add(ids, vectors[kept])
            return len(batch)

    def wait(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed everything pending now, in this thread; returns how many chunks were embedded."""
        total = self.pending()
        done = 0
        while True:
            n = self.process_batch()
            if n == 0:
                return done
            done += n
            if progress is not None:
                progress(done, total)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=5)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                while not self._stop.is_set() and self.process_batch() > 0:
                    pass
            except Exception:  # keep the worker alive; the queue is replayed on the next wake
                log.exception("embedding batch failed; it will be retried")

    # ---------------------------------------------------------------- searching

    def _load(self) -> VectorMatrix:
        assert self.embedder is not None
        with self._matrix_lock:
            if self._matrix is None:
                matrix = VectorMatrix(self.embedder.dim)
                with read_tx(self._engine) as conn:
                    rows = conn.execute(
                        sa.select(chunk_vectors.c.chunk_id, chunk_vectors.c.vector).where(
                            chunk_vectors.c.model_id == self.embedder.model_id
                        )
                    ).all()
                if rows:
                    matrix.add(
                        [r.chunk_id for r in rows],
                        np.stack([from_blob(r.vector, dim=self.embedder.dim) for r in rows]),
                    )
                self._matrix = matrix
            return self._matrix

    def search(self, query: str, *, k: int, allowed: Sequence[int]) -> list[tuple[int, float]]:
        """Chunks by cosine similarity to ``query``, among ``allowed`` ids only."""
        if self.embedder is None or not allowed or k <= 0:
            return []
        matrix = self._load()
        vector = self.embedder.embed_query(query)
        allowed_ids: npt.NDArray[np.int64] = np.asarray(allowed, dtype=np.int64)
        with self._matrix_lock:
            return matrix.search(vector, k=k, allowed_ids=allowed_ids)
