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

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from notochord.errors import KnowledgeValidationError, StorageError

__all__ = ["VectorMatrix", "from_blob", "to_blob"]

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]

_INITIAL_CAPACITY = 64


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
            "rebuild the vectors with 'notochord reindex'"
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
        self._rows: dict[int, int] = {}
        self._size = 0
        self._lock = threading.RLock()

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def capacity(self) -> int:
        """Rows allocated; grows geometrically, never shrinks."""
        return int(self._vectors.shape[0])

    def __len__(self) -> int:
        return self._size

    def __contains__(self, item: object) -> bool:
        return isinstance(item, int | np.integer) and int(item) in self._rows

    def ids(self) -> IdArray:
        """Return a copy of the ids held, in storage order."""
        with self._lock:
            return self._ids[: self._size].copy()

    def add(self, ids: Sequence[int] | npt.NDArray[np.integer], vectors: npt.ArrayLike) -> None:
        """Insert rows, replacing any row whose id is already present.

        Raises:
            KnowledgeValidationError: shapes disagree, an id repeats within ``ids``, or a value is
                not finite. Nothing is added then.
        """
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        mat = np.asarray(vectors, dtype=np.float32)
        if mat.ndim == 1 and id_arr.size == 1:
            mat = mat.reshape(1, -1)
        if mat.ndim != 2 or mat.shape[0] != id_arr.size or mat.shape[1] != self._dim:
            raise KnowledgeValidationError(
                f"expected {id_arr.size} vectors of dimension {self._dim}, got shape {mat.shape}"
            )
        if np.unique(id_arr).size != id_arr.size:
            raise KnowledgeValidationError("the same id appears twice in one add")
        if not np.isfinite(mat).all():
            raise KnowledgeValidationError("vectors must hold finite values only")
        with self._lock:
            new = [i for i, rid in enumerate(id_arr.tolist()) if rid not in self._rows]
            self._reserve(self._size + len(new))
            for i, rid in enumerate(id_arr.tolist()):
                row = self._rows.get(rid)
                if row is None:
                    row = self._size
                    self._rows[rid] = row
                    self._ids[row] = rid
                    self._size += 1
                self._vectors[row] = mat[i]

    def remove(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> int:
        """Remove rows by id; unknown ids are ignored. Returns how many rows were removed."""
        removed = 0
        with self._lock:
            for rid in np.asarray(ids, dtype=np.int64).reshape(-1).tolist():
                row = self._rows.pop(rid, None)
                if row is None:
                    continue
                last = self._size - 1
                if row != last:
                    moved = int(self._ids[last])
                    self._vectors[row] = self._vectors[last]
                    self._ids[row] = moved
                    self._rows[moved] = row
                self._size = last
                removed += 1
        return removed

    def search(
        self,
        query_vec: npt.ArrayLike,
        *,
        k: int,
        allowed_ids: npt.NDArray[np.integer] | None,
    ) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(id, cosine)`` pairs, best first, among ``allowed_ids`` only.

        ``allowed_ids=None`` searches every row; pass it only where the caller may read everything.
        An empty ``allowed_ids`` returns nothing.
        """
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.size != self._dim:
            raise KnowledgeValidationError(
                f"query vector has dimension {query.size}, the index holds dimension {self._dim}"
            )
        if k <= 0:
            return []
        with self._lock:
            ids = self._ids[: self._size]
            if allowed_ids is None:
                cand_ids = ids
                scores = self._vectors[: self._size] @ query
            else:
                allowed = np.asarray(allowed_ids, dtype=np.int64).reshape(-1)
                rows = np.flatnonzero(np.isin(ids, allowed))
                cand_ids = ids[rows]
                scores = self._vectors[rows] @ query
        return _top_k(cand_ids, scores, k)

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
