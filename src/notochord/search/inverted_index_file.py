"""A built full-text index saved beside its space's database, so a restarted process need not rebuild it.

Rules:

- **One file per space and table**, ``<database>.<table>.fulltext`` (:func:`index_file`); only for a
  SQLite database that is a file of its own. It is derived data: backups skip it
  (:mod:`notochord.backup`), like the saved vector graphs.
- **Written atomically, readable by its owner only**: a ``….<pid>.partial`` file is written, set
  to mode 0600 and renamed over the old one; a failed write leaves the old file (or none).
- **Never trusted blindly.** The file starts with a magic line and a format version, then a JSON
  header naming every array (dtype, length, offset) and the BLAKE2b digest of all that follows;
  :func:`load` returns ``None`` for anything that does not check out — another format, a truncated
  or corrupted payload, arrays of the wrong kind — and the caller rebuilds. What the index was built
  from (table, tokenizer, data version, highest id, sample rows) travels in the header; the caller
  checks it against the database (:mod:`~notochord.search.inverted_index`).

Size: the arrays as held (8 bytes a posting, ~20 a chunk) plus the terms' UTF-8 text; measured in
:mod:`~notochord.search.inverted_index`'s docstring.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

__all__ = ["FILE_SUFFIX", "index_file", "load", "save"]

log = logging.getLogger(__name__)

FILE_SUFFIX = ".fulltext"
_MAGIC = b"notochord full-text index\n"
_FORMAT = 1
_DTYPES: dict[str, np.dtype[Any]] = {
    "int64": np.dtype("<i8"),
    "int32": np.dtype("<i4"),
    "bool": np.dtype("?"),
    "uint8": np.dtype("u1"),
}


def index_file(engine: sa.Engine, table: str) -> Path | None:
    """Where ``table``'s index of this space is saved, or ``None`` (in memory, PostgreSQL)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database)
    return path.with_name(f"{path.name}.{table}{FILE_SUFFIX}")


def save(path: Path, header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> bool:
    """Write ``arrays`` and ``header`` to ``path`` (replaced atomically, mode 0600); ``False`` on failure."""
    layout: dict[str, Any] = {}
    offset = 0
    blobs: list[bytes] = []
    for name, array in arrays.items():
        kind = str(array.dtype)
        data = np.ascontiguousarray(array, dtype=_DTYPES[kind]).tobytes()
        layout[name] = {"dtype": kind, "length": int(array.shape[0]), "offset": offset}
        # every array starts on an 8-byte boundary, so the loaded views are aligned
        data += b"\0" * (-len(data) % 8)
        blobs.append(data)
        offset += len(data)
    digest = hashlib.blake2b(digest_size=32)
    for blob in blobs:
        digest.update(blob)
    meta = json.dumps(
        {"format": _FORMAT, "header": header, "arrays": layout, "bytes": offset, "digest": digest.hexdigest()}
    ).encode()
    meta += b" " * (-(len(_MAGIC) + 8 + len(meta)) % 8)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as out:
            os.chmod(partial, 0o600)
            out.write(_MAGIC)
            out.write(len(meta).to_bytes(8, "little"))
            out.write(meta)
            for blob in blobs:
                out.write(blob)
        os.replace(partial, path)
    except OSError as exc:
        log.warning("could not save the full-text index to %s: %s", path, exc)
        partial.unlink(missing_ok=True)
        return False
    return True


def load(path: Path) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The header and arrays saved at ``path``, or ``None`` when it is missing or does not check out."""
    try:
        with open(path, "rb") as source:
            size = os.fstat(source.fileno()).st_size
            # one buffer the arrays are views of: read once, never copied
            raw = bytearray(size)
            if source.readinto(raw) != size:
                return None
    except OSError:
        return None
    try:
        return _parse(raw)
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        log.warning("ignoring the saved full-text index %s: %s", path, exc)
        return None


def _parse(raw: bytearray) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    if not raw.startswith(_MAGIC):
        raise ValueError("not a full-text index file")
    at = len(_MAGIC)
    size = int.from_bytes(raw[at : at + 8], "little")
    meta = json.loads(raw[at + 8 : at + 8 + size])
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ValueError("another format")
    payload = memoryview(raw)[at + 8 + size :]
    if len(payload) != int(meta["bytes"]):
        raise ValueError("truncated")
    if hashlib.blake2b(payload, digest_size=32).hexdigest() != meta["digest"]:
        raise ValueError("corrupted")
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, spec in dict(meta["arrays"]).items():
        dtype = _DTYPES[str(spec["dtype"])]
        length, offset = int(spec["length"]), int(spec["offset"])
        if length < 0 or offset < 0 or offset + length * dtype.itemsize > len(payload):
            raise ValueError(f"array {name} out of bounds")
        arrays[str(name)] = np.frombuffer(payload, dtype=dtype, count=length, offset=offset)
    header = meta["header"]
    if not isinstance(header, dict):
        raise ValueError("no header")
    return header, arrays
