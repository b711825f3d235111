"""A space's in-memory vectors saved beside its database, so a restarted process need not read them all.

Reading a million vectors out of SQLite (a 1.5 KB row each, decoded one by one) is most of a large
space's first search after a restart; reading them back from one file of float32 rows is a
sequential read. Rules:

- **One file per space and model**, ``<database>.vectors-<digest of the model>.matrix``
  (:func:`matrix_file`), a :mod:`.saved_arrays` container: written atomically, mode 0600, checked
  by a digest. Only for a SQLite database that is a file of its own. Derived data: backups skip it.
- It holds the ids, each id's document and the vectors, in the matrix's storage order, and in its
  header what the vectors were current with — the model and dimension, the highest vector row and
  the newest change record read, the space's full-text generation (a repair draws a new one) —
  and a sample of ids whose stored vectors must still be exactly the saved ones.
- :func:`load` reads the rows straight into a matrix with room to grow; the caller
  (:class:`~notochord.search.vector_index.VectorIndex`) checks the header against the database and
  reconciles the vectors with the store before any search uses them.

Size: ``4 × dim + 16`` bytes a vector (1.55 GB per million vectors of dimension 384).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.search import saved_arrays
from notochord.search.hnsw import GRAPH_SUFFIX

__all__ = ["MATRIX_SUFFIX", "Saved", "graph_file", "load", "matrix_file", "save"]

MATRIX_SUFFIX = ".matrix"
_MAGIC = b"notochord vectors\n"
_WHAT = "vectors"
SAMPLE = 16
_CAPACITY = 64  # the smallest matrix, doubled until the saved rows fit (as adding them would)


def _beside(engine: sa.Engine, model_id: str, suffix: str) -> Path | None:
    # the name carries a digest of the model, so another model's file is never mistaken for this one's
    digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:12]
    return saved_arrays.beside(engine, f".vectors-{digest}{suffix}")


def graph_file(engine: sa.Engine, model_id: str) -> Path | None:
    """Where the HNSW graph of this space's ``model_id`` vectors is saved: beside its database file.

    ``None`` for a database that is not a file of its own (in memory, or on PostgreSQL).
    """
    return _beside(engine, model_id, GRAPH_SUFFIX)


def matrix_file(engine: sa.Engine, model_id: str) -> Path | None:
    """Where this space's ``model_id`` vectors are saved, or ``None`` (in memory, PostgreSQL)."""
    return _beside(engine, model_id, MATRIX_SUFFIX)


@dataclass(frozen=True)
class Saved:
    """What :func:`load` read: the header, and the matrix's ids, documents and rows (with room)."""

    header: dict[str, Any]
    ids: npt.NDArray[np.int64]
    documents: npt.NDArray[np.int64]
    rows: npt.NDArray[np.float32]

    @property
    def top(self) -> int:
        return int(self.header["top"])

    @property
    def feed(self) -> int:
        return int(self.header["feed"])

    @property
    def sample(self) -> list[int]:
        return [int(i) for i in self.header["sample"]]


def save(
    path: Path,
    *,
    model_id: str,
    ids: npt.NDArray[np.int64],
    documents: npt.NDArray[np.int64],
    rows: npt.NDArray[np.float32],
    top: int,
    feed: int,
    generation: str,
) -> bool:
    """Write the held vectors (``rows`` in the order of ``ids``) to ``path``; ``False`` on failure."""
    picks = np.unique(np.linspace(0, len(ids) - 1, num=min(SAMPLE, len(ids))).astype(np.int64))
    header = {
        "model": model_id,
        "dim": int(rows.shape[1]),
        "top": top,
        "feed": int(feed),
        "generation": generation,
        "sample": ids[picks].tolist() if len(ids) else [],
    }
    arrays: dict[str, npt.NDArray[Any]] = {"ids": ids, "documents": documents, "vectors": rows.reshape(-1)}
    return saved_arrays.save(path, header, arrays, magic=_MAGIC, what=_WHAT)


def load(path: Path, *, model_id: str, dim: int, accept: Callable[[dict[str, Any]], bool]) -> Saved | None:
    """The vectors saved at ``path`` for ``model_id``, when the file checks out and ``accept`` takes its header.

    The rows come with room to grow: capacity is the next power of two, as if they had been added.
    """

    def fits(header: dict[str, Any]) -> bool:
        return (
            header.get("model") == model_id
            and header.get("dim") == dim
            and isinstance(header.get("top"), int)
            and isinstance(header.get("feed"), int)
            and isinstance(header.get("sample"), list)
            and accept(header)
        )

    def room(name: str, length: int) -> int:
        if name != "vectors":
            return length
        capacity = _CAPACITY
        while capacity * dim < length:
            capacity *= 2
        return capacity * dim

    loaded = saved_arrays.load(path, magic=_MAGIC, what=_WHAT, accept=fits, room=room)
    if loaded is None:
        return None
    header, arrays = loaded
    ids, documents, flat = arrays.get("ids"), arrays.get("documents"), arrays.get("vectors")
    if ids is None or documents is None or flat is None:
        return None
    count = len(ids)
    if (
        ids.dtype != np.int64
        or documents.dtype != np.int64
        or flat.dtype != np.float32
        or len(documents) != count
        or len(flat) < count * dim
        or len(flat) % dim
    ):
        return None
    return Saved(header, ids, documents, flat.reshape(-1, dim))
