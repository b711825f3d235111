"""A space's vectors in memory: the exact matrix, its HNSW graph above a size, and allowed masks.

Rules:

- One :class:`VectorMemory` per space and process, shared by every request and thread; its lock
  (the matrix's) covers every read and change, so a mask and the rows it covers always agree.
- **Exact below the threshold, HNSW above.** Below ``hnsw_threshold`` vectors every search is exact
  (a float32 matrix-vector product over the allowed rows). From the threshold on, a
  :class:`~notochord.search.hnsw.HnswGraph` is built in a background thread — searches stay exact
  until it is ready — and then kept current by every add and remove; changes made while it is being
  built are replayed when it is done. Below half the threshold the graph is dropped. The graph is
  derived data: rebuilt from the matrix, which is rebuilt from the store.
- **A built graph outlives the process.** With a ``graph_file`` (a space's database on disk), a
  fresh build is saved there, and so is the graph at :meth:`VectorMemory.close` once enough changed
  since. The next process restores it instead of building (seconds instead of minutes), then
  reconciles it with the matrix before any search uses it: ids that left are removed, ids that came
  are added, and ids whose vector changed (a repaired chunk) are found by comparing the graph's own
  copy with the matrix and replaced. A graph no search has used yet is never trusted blindly.
- **The allowed rows are a mask, cached.** Callers pass the chunk ids they may find with a key that
  names them (the filter and the data version they were read at); the mask over the matrix's rows is
  computed once per (key, matrix version) and reused by every query until either moves.

Memory per 100,000 vectors of dimension 384 (the default embedder): the float32 matrix 154 MB
(``4 × dim`` bytes a vector; capacity doubles, so up to twice that while it grows), ids and the
id→row table ~1.2 MB, one cached mask 0.1 MB; above the threshold the int8 graph adds ~85 MB
(``dim`` bytes plus the links of every level). Measured on the synthetic benchmark at 100,000
vectors: 194 MiB held without a graph (capacity 131,072 rows), 275 MiB with it (the graph alone
81 MiB). Per 1M vectors, measured on the synthetic benchmark: 2,308 MiB held — the matrix 1,548 MiB
(capacity 1,048,576 rows) and the graph ~760 MiB, built in 54 min on one thread at load 10-12 (in
the background; searches stay exact meanwhile) — plus a ~4 MB id→row table. With the inverted
index (:mod:`notochord.search.inverted_index`) and the embedder, a process serving a space of a
million chunks held 3.6 GB after its first search, 4.3 GB after 600 more, peaking at 5.1 GB.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from notochord.search.hnsw import MAX_COUNT, HnswGraph, graph_count
from notochord.search.vectors import BoolArray, FloatArray, VectorMatrix

__all__ = ["DEFAULT_HNSW_THRESHOLD", "VectorMemory"]

log = logging.getLogger(__name__)

DEFAULT_HNSW_THRESHOLD = 50_000
"""Vectors from which a space searches through an HNSW graph.

Measured on this project's machine (two cores shared with other work, load 11), one query for 100
neighbours, dimension 384, one BLAS thread, clustered unit vectors, one graph grown in steps:

    vectors     exact p50/p95 ms   graph p50/p95 ms   recall@100   graph build (cumulative)
    25,000        32 / 80            13 / 54            0.960          53 s
    50,000        57 / 76             7 / 30            0.997          99 s
    100,000       96 / 118            1.3 / 22          0.999         185 s
    1,000,000    981 / 1,276          (see bench/retrieval.py --synthetic 1000000)

Exact search reads the whole float32 matrix per query (memory-bound, ~1 ms per 1,000 vectors under
load): from 50,000 vectors on it alone takes most of a hybrid query's 50 ms budget, while the graph
answers in a few ms with recall ≥ 0.99 for ~2 ms of background build per vector and a quarter of
the matrix's memory. Below, exact search stays cheap and rankings exact.
"""

_MASKS = 16
_BUILD_BLOCK = 8192
_RESAVE_SHARE = 0.01
"""At close, the graph is saved again once this share of its vectors (at least :data:`_RESAVE_MIN`)
changed since it was saved or restored: replaying fewer at the next start costs less than writing."""
_RESAVE_MIN = 1000


class VectorMemory:
    """The exact matrix of one space's vectors, with an HNSW graph once it is large (see module rules)."""

    def __init__(
        self,
        dim: int,
        *,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
        graph_threads: int = 1,
        graph_file: Path | None = None,
        matrix: VectorMatrix | None = None,
    ) -> None:
        """``matrix``: vectors already held (restored from a saved file); else an empty matrix of ``dim``."""
        self.matrix = VectorMatrix(dim) if matrix is None else matrix
        self.changes = 0  # rows added, replaced or removed since it was made: what a saved copy lacks
        self._threshold = max(1, hnsw_threshold)
        self._graph_threads = graph_threads
        self._graph_file = graph_file
        self._graph: HnswGraph | None = None
        self._graph_origin: str | None = None
        self._unsaved = 0  # graph changes since it was saved or restored
        self._building: threading.Thread | None = None
        self._journal: set[int] | None = None  # ids changed while a graph is being built
        self._closed = False
        self._masks: OrderedDict[tuple[Hashable, int], tuple[BoolArray, int]] = OrderedDict()
        if matrix is not None:
            self._resize_graph()  # a large restored matrix gets its graph as a loaded one does

    @property
    def lock(self) -> threading.RLock:
        return self.matrix.lock

    def __len__(self) -> int:
        return len(self.matrix)

    @property
    def has_graph(self) -> bool:
        """Whether searches go through the HNSW graph (it is built and current)."""
        return self._graph is not None

    @property
    def graph_origin(self) -> str | None:
        """``"built"`` or ``"restored"`` (from the graph file) for the graph in use; ``None`` without one."""
        return self._graph_origin if self._graph is not None else None

    def graph_keys(self) -> npt.NDArray[np.int64]:
        """The ids the graph holds (empty without a graph)."""
        with self.lock:
            return self._graph.keys() if self._graph is not None else np.zeros(0, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        with self.lock:
            return self.matrix.nbytes + (self._graph.nbytes if self._graph is not None else 0)

    # ---------------------------------------------------------------- changes

    def add(self, ids: Sequence[int] | npt.NDArray[np.integer], vectors: npt.ArrayLike) -> None:
        """Insert or replace vectors, in the matrix and the graph alike."""
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        with self.lock:
            self.matrix.add(id_arr, vectors)
            self.changes += int(id_arr.size)
            if self._graph is not None:
                self._graph.add(id_arr, self.matrix.get(id_arr))
                self._unsaved += int(id_arr.size)
            if self._journal is not None:
                self._journal.update(id_arr.tolist())
        self._resize_graph()

    def remove(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> int:
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        with self.lock:
            removed = self.matrix.remove(id_arr)
            self.changes += removed
            if self._graph is not None and removed:
                self._graph.remove(id_arr)  # ids it lacks are ignored
                self._unsaved += removed
            if self._journal is not None:
                self._journal.update(id_arr.tolist())
        self._resize_graph()
        return removed

    def close(self, *, save: bool = False) -> None:
        """Stop a graph build in progress (the memory is being dropped).

        ``save``: the process is done with the space, so a graph that changed enough since it was
        saved is written to the graph file for the next process.
        """
        self._closed = True
        thread = self._building
        if thread is not None:
            thread.join(timeout=30)
        if not save or self._graph_file is None:
            return
        with self.lock:
            graph = self._graph
            if graph is not None and self._unsaved >= max(_RESAVE_MIN, _RESAVE_SHARE * len(graph)):
                self._save(graph)

    def wait_for_graph(self, timeout: float | None = None) -> bool:
        """Wait for a graph build in progress; ``True`` when a graph is in use afterwards."""
        thread = self._building
        if thread is not None:
            thread.join(timeout=timeout)
        return self._graph is not None

    # ---------------------------------------------------------------- searching

    def mask(self, allowed_ids: npt.NDArray[np.integer], key: Hashable | None) -> tuple[BoolArray, int]:
        """The mask of ``allowed_ids`` over the current rows and how many it allows, cached per key."""
        with self.lock:
            slot = None if key is None else (key, self.matrix.version)
            if slot is not None:
                found = self._masks.get(slot)
                if found is not None:
                    self._masks.move_to_end(slot)
                    return found
            mask = self.matrix.mask_of(allowed_ids)
            entry = (mask, int(mask.sum()))
            if slot is not None:
                self._masks[slot] = entry
                while len(self._masks) > _MASKS:
                    self._masks.popitem(last=False)
            return entry

    def search(
        self,
        query: FloatArray,
        *,
        k: int,
        allowed_ids: npt.NDArray[np.integer],
        key: Hashable | None = None,
    ) -> list[tuple[int, float]]:
        """Up to ``k`` ``(id, cosine)`` among ``allowed_ids``, best first; exact scores whichever path ran."""
        if k <= 0 or len(allowed_ids) == 0:
            return []
        with self.lock:
            mask, allowed = self.mask(allowed_ids, key)
            if allowed == 0:
                return []
            graph = self._graph
            count = None if graph is None else graph_count(k, allowed, len(self.matrix))
            while graph is not None and count is not None:
                found = graph.neighbours(query, count)
                rows = self.matrix.rows_of(found)
                keep = rows >= 0
                keep[keep] = mask[rows[keep]]
                if int(keep.sum()) >= min(k, allowed) or count >= len(self.matrix):
                    return self.matrix.score(query, found[keep])[:k]
                count = count * 2 if count * 2 <= MAX_COUNT else None
            return self.matrix.search(query, k=k, allowed_mask=mask)

    # ---------------------------------------------------------------- the graph

    def _resize_graph(self) -> None:
        with self.lock:
            size = len(self.matrix)
            if self._graph is not None and size < self._threshold // 2:
                self._graph = None
                return
            if self._graph is not None or self._building is not None or size < self._threshold or self._closed:
                return
            self._journal = set()
            self._building = threading.Thread(target=self._build, name="notochord-hnsw-build", daemon=True)
            self._building.start()

    def _build(self) -> None:
        try:
            graph, origin = self._restored(), "restored"
            if graph is None:
                graph, origin = self._built(), "built"
            if graph is None:
                return
            drifted = self._drifted(graph) if origin == "restored" else np.zeros(0, dtype=np.int64)
            if self._closed:
                return
            if origin == "built":
                self._save(graph)  # before the journal is replayed: the file holds what was built
            with self.lock:
                touched = np.asarray(sorted(self._journal or ()), dtype=np.int64)
                held = self.matrix.ids()
                keys = graph.keys()
                gone = np.setdiff1d(keys, held)
                graph.remove(gone)
                stale = np.union1d(np.setdiff1d(held, keys), np.intersect1d(np.union1d(touched, drifted), held))
                if stale.size:
                    graph.add(stale, self.matrix.get(stale))
                self._unsaved = int(gone.size + stale.size)  # what the file lacks
                self._graph, self._graph_origin = graph, origin
        except Exception:  # the graph is an accelerator: searches stay exact without it
            log.exception("building the vector search graph failed; searches stay exact")
        finally:
            with self.lock:
                self._journal = None
                self._building = None

    def _built(self) -> HnswGraph | None:
        graph = HnswGraph(self.matrix.dim, threads=self._graph_threads)
        start = 0
        while not self._closed:
            # a block at a time, so searches and writes go on between blocks; rows moved by a
            # removal meanwhile are caught by the reconciliation in _build
            ids, vectors = self.matrix.block(start, start + _BUILD_BLOCK)
            if ids.size == 0:
                break
            graph.add(ids, vectors, fresh=True)
            start += ids.size
        return None if self._closed else graph

    def _restored(self) -> HnswGraph | None:
        if self._graph_file is None:
            return None
        return HnswGraph.restore(self._graph_file, self.matrix.dim, threads=self._graph_threads)

    def _drifted(self, graph: HnswGraph) -> npt.NDArray[np.int64]:
        """The ids a restored graph holds with a vector the matrix no longer has (checked a block at a time)."""
        found: list[npt.NDArray[np.int64]] = []
        start = 0
        while not self._closed:
            ids, vectors = self.matrix.block(start, start + _BUILD_BLOCK)
            if ids.size == 0:
                break
            found.append(graph.drifted(ids, vectors))
            start += ids.size
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def _save(self, graph: HnswGraph) -> None:
        if self._graph_file is None:
            return
        try:
            graph.save(self._graph_file)
            self._unsaved = 0
        except OSError as exc:  # a read-only or full disk: the next process builds the graph again
            log.warning("could not save the vector search graph to %s: %s", self._graph_file, exc)
