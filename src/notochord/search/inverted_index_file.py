"""A built full-text index saved beside its space's database, so a restarted process need not rebuild it.

Rules:

- **One file per space and table**, ``<database>.<table>.fulltext`` (:func:`index_file`); only for a
  SQLite database that is a file of its own. It is derived data: backups skip it
  (:mod:`notochord.backup`), like the saved vector graphs and matrices.
- The file is a :mod:`.saved_arrays` container (written atomically, mode 0600, checked by a digest;
  :func:`load` returns ``None`` for anything that does not check out, and the caller rebuilds).
  What the index was built from (table, tokenizer, data version, highest id, sample rows) travels
  in the header; the caller checks it against the database (:mod:`~notochord.search.inverted_index`).

Size: the arrays as held (8 bytes a posting, ~20 a chunk) plus the terms' UTF-8 text; measured in
:mod:`~notochord.search.inverted_index`'s docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy.typing as npt
import sqlalchemy as sa

from notochord.search import saved_arrays

__all__ = ["FILE_SUFFIX", "index_file", "load", "save"]

FILE_SUFFIX = ".fulltext"
_MAGIC = b"notochord full-text index\n"
_WHAT = "full-text index"


def index_file(engine: sa.Engine, table: str) -> Path | None:
    """Where ``table``'s index of this space is saved, or ``None`` (in memory, PostgreSQL)."""
    return saved_arrays.beside(engine, f".{table}{FILE_SUFFIX}")


def save(path: Path, header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> bool:
    """Write ``arrays`` and ``header`` to ``path`` (replaced atomically, mode 0600); ``False`` on failure."""
    return saved_arrays.save(path, header, arrays, magic=_MAGIC, what=_WHAT)


def load(path: Path) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The header and arrays saved at ``path``, or ``None`` when it is missing or does not check out."""
    return saved_arrays.load(path, magic=_MAGIC, what=_WHAT)
