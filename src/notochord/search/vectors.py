"""Exact in-memory vector search over one space's chunks (DESIGN §5).

The copy of record of every vector is a float32 BLOB row in the store (:func:`to_blob` /
:func:`from_blob`); a :class:`VectorMatrix` is the derived, rebuildable in-memory index over those
rows. Rules:

- Vectors are L2-normalised by the embedder, so the score is the dot product (cosine similarity).
- ``search`` restricts to ``allowed_ids`` *before* scoring: rows the caller may not read are never
  scored, ranked or counted, and a caller still gets ``k`` results when ``k`` readable rows exist.
- Results are ordered by score descending, then id ascending, so equal scores rank the same way on
  every run.
- ``add`` with an id already present replaces that row (an edited chunk is re-embedded in place).
- Rows live in one preallocated matrix whose capacity doubles when full (amortised O(1) per row);
  ``remove`` moves the last row into the hole, so the live rows stay one contiguous block.
- One instance is shared by the threads of a space: every method holds an internal lock.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from notochord.errors import KnowledgeValidationError, StorageError

__all__ = ["VectorMatrix", "from_blob", "to_blob"]

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]
RowArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

_INITIAL_CAPACITY = 64
# ids index a table of rows, so the largest id bounds its size (4 bytes per id up to the largest)
_MAX_ID = 2**28
# below one allowed row in this many, the allowed rows are gathered and scored alone
_GATHER_SHARE = 3


_BLAS = threading.local()
_BLAS_LOCK = threading.Lock()
_blas: list[Any] = []  # numpy's OpenBLAS once looked up; empty means "not looked up yet"


def _openblas() -> Any | None:
    """numpy's bundled OpenBLAS (wheels ship it in ``numpy.libs``), or ``None`` for another build."""
    with _BLAS_LOCK:
        if not _blas:
            runtime = None
            folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
            for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
                try:
                    lib = ctypes.CDLL(path)
                    runtime = lib if hasattr(lib, "openblas_set_num_threads_local") else None
                except OSError:
                    runtime = None
                if runtime is not None:
                    break
            _blas.append(runtime)
        return _blas[0]


def one_blas_thread() -> None:
    """Score in the calling thread only (once per thread; a no-op where numpy has no OpenBLAS of its own).

    OpenBLAS splits a matrix-vector product over every core; on a loaded two-core machine its
    threads wait for each other: measured 15.6 ms per query over 5,000 × 384 vectors with two
    threads, 1.5 ms with one (and 36 against 32 ms over 100,000). Requests run side by side
    anyway, so one thread each is the faster choice.
    """
    if getattr(_BLAS, "pinned", False):
        return
    runtime = _openblas()
    if runtime is not None:
        runtime.openblas_set_num_threads_local(ctypes.c_int(1))
    _BLAS.pinned = True


def to_blob(vector: npt.ArrayLike) -> bytes:
    """Encode one vector as little-endian float32 bytes, the storage form of a vector row."""
    arr = np.asarray(vector, dtype="<f4")
    if arr.ndim != 1:
        raise KnowledgeValidationError(f"a vector must be one-dimensional, got shape {arr.shape}")
    return arr.tobytes()


def from_blob(blob: bytes, *, dim: int) -> FloatArray:
    """Decode a vector row written by :func:`to_blob`.

    Raises:
        StorageError: the BLOB does not hold exactly ``dim`` float32 values (a corrupt or foreign row).
    """
    if len(blob) != 4 * dim:
        raise StorageError(
            f"vector row holds {len(blob)} bytes, expected {4 * dim} for dimension {dim}; "
            "drop the damaged vectors with 'notochord check --repair', which has them embedded again"
        )
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


class VectorMatrix:
    """An exact, filterable nearest-neighbour index of ``dim``-dimensional float32 vectors."""

    def __init__(self, dim: int, *, capacity: int = _INITIAL_CAPACITY) -> None:
        if dim < 1:
            raise KnowledgeValidationError(f"vector dimension must be positive, got {dim}")
        self._dim = dim
        cap = max(1, capacity)
        self._vectors: FloatArray = np.zeros((cap, dim), dtype=np.float32)
        self._ids: IdArray = np.zeros(cap, dtype=np.int64)
        # row of every id, -1 where absent: ids are chunk ids (small, dense, never reused), so an
        # array indexed by id maps a whole candidate set to rows in one vectorised step
        self._row_of: RowArray = np.full(_INITIAL_CAPACITY, -1, dtype=np.int32)
        self._size = 0
        self._version = 0
        self._lock = threading.RLock()

    @classmethod
    def holding(cls, ids: npt.NDArray[np.integer], rows: FloatArray) -> VectorMatrix:
        """A matrix that takes ``rows`` as its storage (not copied): its first ``len(ids)`` rows are
        the vectors of ``ids``, the rest is room to grow into.

        Raises:
            KnowledgeValidationError: shapes disagree, or an id repeats or lies out of range.
        """
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if rows.ndim != 2 or rows.dtype != np.float32 or rows.shape[0] < id_arr.size or not rows.flags.c_contiguous:
            raise KnowledgeValidationError(f"cannot hold {id_arr.size} vectors in rows of shape {rows.shape}")
        if id_arr.size and (int(id_arr.min()) < 0 or int(id_arr.max()) > _MAX_ID):
            raise KnowledgeValidationError(f"vector ids must lie between 0 and {_MAX_ID}")
        if not _distinct(id_arr):
            raise KnowledgeValidationError("the same id appears twice among the vectors held")
        matrix = cls(rows.shape[1], capacity=1)
        matrix._vectors = rows
        matrix._ids = np.zeros(rows.shape[0], dtype=np.int64)
        matrix._ids[: id_arr.size] = id_arr
        if id_arr.size:
            matrix._reserve_ids(int(id_arr.max()))
            matrix._row_of[id_arr] = np.arange(id_arr.size, dtype=np.int32)
        matrix._size = int(id_arr.size)
        return matrix

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def capacity(self) -> int:
        """Rows allocated; grows geometrically, never shrinks."""
        return int(self._vectors.shape[0])

    @property
    def version(self) -> int:
        """A counter that moves on every change of the rows: masks over the rows are valid for one version."""
        return self._version

    @property
    def lock(self) -> threading.RLock:
        """Held by every method; hold it across :meth:`mask_of` and :meth:`search` to keep them in step."""
        return self._lock

    @property
    def nbytes(self) -> int:
        """Bytes allocated for rows, ids and the id→row table."""
        return int(self._vectors.nbytes + self._ids.nbytes + self._row_of.nbytes)

    def __len__(self) -> int:
        return self._size

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, int | np.integer):
            return False
        rid = int(item)
        return 0 <= rid < self._row_of.size and int(self._row_of[rid]) >= 0

    def ids(self) -> IdArray:
        """Return a copy of the ids held, in storage order."""
        with self._lock:
            return self._ids[: self._size].copy()

    def held(self) -> tuple[IdArray, FloatArray]:
        """Views (not copies) of the ids and rows held, in storage order: valid while :attr:`lock` is held."""
        return self._ids[: self._size], self._vectors[: self._size]

    def vectors(self) -> FloatArray:
        """Return a copy of the rows held, in storage order (the order of :meth:`ids`)."""
        with self._lock:
            return self._vectors[: self._size].copy()

    def get(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> FloatArray:
        """The rows of ``ids``, in that order; every id must be held."""
        with self._lock:
            return self._vectors[self._rows_or_fail(np.asarray(ids, dtype=np.int64).reshape(-1))]

    def add(self, ids: Sequence[int] | npt.NDArray[np.integer], vectors: npt.ArrayLike) -> None:
        """Insert rows, replacing any row whose id is already present.

        Raises:
            KnowledgeValidationError: shapes disagree, an id repeats within ``ids`` or is negative,
                or a value is not finite. Nothing is added then.
        """
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        mat = np.asarray(vectors, dtype=np.float32)
        if mat.ndim == 1 and id_arr.size == 1:
            mat = mat.reshape(1, -1)
        if mat.ndim != 2 or mat.shape[0] != id_arr.size or mat.shape[1] != self._dim:
            raise KnowledgeValidationError(
                f"expected {id_arr.size} vectors of dimension {self._dim}, got shape {mat.shape}"
            )
        if id_arr.size == 0:
            return
        if not _distinct(id_arr):
            raise KnowledgeValidationError("the same id appears twice in one add")
        if int(id_arr.min()) < 0 or int(id_arr.max()) > _MAX_ID:
            raise KnowledgeValidationError(f"vector ids must lie between 0 and {_MAX_ID}")
        if not np.isfinite(mat).all():
            raise KnowledgeValidationError("vectors must hold finite values only")
        with self._lock:
            self._reserve_ids(int(id_arr.max()))
            rows = self._row_of[id_arr].astype(np.int64)
            new = rows < 0
            count = int(new.sum())
            self._reserve(self._size + count)
            rows[new] = np.arange(self._size, self._size + count, dtype=np.int64)
            self._ids[rows[new]] = id_arr[new]
            self._row_of[id_arr[new]] = rows[new].astype(np.int32)
            self._size += count
            self._vectors[rows] = mat
            self._version += 1

    def remove(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> int:
        """Remove rows by id; unknown ids are ignored. Returns how many rows were removed."""
        removed = 0
        with self._lock:
            for rid in np.asarray(ids, dtype=np.int64).reshape(-1).tolist():
                if not 0 <= rid < self._row_of.size or self._row_of[rid] < 0:
                    continue
                row = int(self._row_of[rid])
                self._row_of[rid] = -1
                last = self._size - 1
                if row != last:
                    moved = int(self._ids[last])
                    self._vectors[row] = self._vectors[last]
                    self._ids[row] = moved
                    self._row_of[moved] = row
                self._size = last
                removed += 1
            if removed:
                self._version += 1
        return removed

    def rows_of(self, ids: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
        """The current row of each id, ``-1`` for an id not held."""
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        with self._lock:
            inside = (id_arr >= 0) & (id_arr < self._row_of.size)
            rows = np.full(id_arr.size, -1, dtype=np.int64)
            rows[inside] = self._row_of[id_arr[inside]]
            return rows

    def block(self, start: int, stop: int) -> tuple[IdArray, FloatArray]:
        """Copies of the ids and rows ``start:stop`` in storage order (a slice of a snapshot)."""
        with self._lock:
            stop = min(stop, self._size)
            return self._ids[start:stop].copy(), self._vectors[start:stop].copy()

    def mask_of(self, allowed_ids: npt.NDArray[np.integer]) -> BoolArray:
        """The boolean mask over the current rows of the given ids (ids not held are ignored).

        Valid while :attr:`version` stays the same; hold :attr:`lock` to use it with :meth:`search`.
        """
        with self._lock:
            mask = np.zeros(self._size, dtype=np.bool_)
            allowed = np.asarray(allowed_ids, dtype=np.int64).reshape(-1)
            allowed = allowed[(allowed >= 0) & (allowed < self._row_of.size)]
            rows = self._row_of[allowed]
            mask[rows[rows >= 0]] = True
            return mask

    def search(
        self,
        query_vec: npt.ArrayLike,
        *,
        k: int,
        allowed_ids: npt.NDArray[np.integer] | None = None,
        allowed_mask: BoolArray | None = None,
    ) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(id, cosine)`` pairs, best first, among the allowed rows only.

        The allowed rows are ``allowed_ids``, or ``allowed_mask`` (from :meth:`mask_of` at the
        current :attr:`version`); with neither every row is searched — only where the caller may
        read everything. An empty ``allowed_ids`` returns nothing.
        """
        query = self._query(query_vec)
        if k <= 0:
            return []
        one_blas_thread()
        with self._lock:
            if allowed_mask is None and allowed_ids is not None:
                allowed_mask = self.mask_of(allowed_ids)
            if allowed_mask is not None and allowed_mask.size != self._size:
                raise KnowledgeValidationError(
                    f"the allowed mask covers {allowed_mask.size} rows, the matrix holds {self._size}; "
                    "compute it again with mask_of"
                )
            ids = self._ids[: self._size]
            if allowed_mask is None:
                cand_ids = ids
                scores = self._vectors[: self._size] @ query
            else:
                rows = np.flatnonzero(allowed_mask)
                cand_ids = ids[rows]
                if rows.size * _GATHER_SHARE < self._size:
                    scores = self._vectors[rows] @ query
                else:  # most rows allowed: one pass over the whole block beats copying the allowed rows
                    scores = (self._vectors[: self._size] @ query)[rows]
            return _top_k(cand_ids, scores, k)

    def score(self, query_vec: npt.ArrayLike, ids: npt.NDArray[np.integer]) -> list[tuple[int, float]]:
        """``(id, cosine)`` of exactly the given held ids, best first (ties: smaller id)."""
        query = self._query(query_vec)
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        one_blas_thread()
        with self._lock:
            scores = self._vectors[self._rows_or_fail(id_arr)] @ query
        return _top_k(id_arr, scores, id_arr.size)

    def _query(self, query_vec: npt.ArrayLike) -> FloatArray:
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.size != self._dim:
            raise KnowledgeValidationError(
                f"query vector has dimension {query.size}, the index holds dimension {self._dim}"
            )
        return query

    def _rows_or_fail(self, id_arr: IdArray) -> npt.NDArray[np.int64]:
        rows = self.rows_of(id_arr)
        if (rows < 0).any():
            raise KnowledgeValidationError("asked for the vector of an id the matrix does not hold")
        return rows

    def _reserve_ids(self, largest: int) -> None:
        size = self._row_of.size
        if largest < size:
            return
        while size <= largest:
            size *= 2
        grown = np.full(size, -1, dtype=np.int32)
        grown[: self._row_of.size] = self._row_of
        self._row_of = grown

    def _reserve(self, needed: int) -> None:
        cap = self.capacity
        if needed <= cap:
            return
        while cap < needed:
            cap *= 2
        vectors = np.zeros((cap, self._dim), dtype=np.float32)
        vectors[: self._size] = self._vectors[: self._size]
        ids = np.zeros(cap, dtype=np.int64)
        ids[: self._size] = self._ids[: self._size]
        self._vectors, self._ids = vectors, ids


def _distinct(ids: IdArray) -> bool:
    # a sort, not np.unique: numpy's hashing unique is several times slower on a million ids
    return ids.size < 2 or bool((np.diff(np.sort(ids)) != 0).all())


def _top_k(ids: IdArray, scores: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
    n = ids.size
    if n == 0:
        return []
    if k < n:
        # Partition keeps every row tied with the k-th score, so the id tie-break below is exact.
        kth = np.partition(scores, n - k)[n - k]
        keep = np.flatnonzero(scores >= kth)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]
