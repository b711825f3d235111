"""A space's SQLite file appears complete, or not at all.

A new store is built aside (:mod:`notochord.built_aside`: under a hidden name that no listing of
spaces matches), brought to the newest schema, closed (its write-ahead log folded into the file),
and only then linked to its name; of several processes creating the same space at once one places
its file and the others open it.

That makes a zero-byte file where a store belongs damage, never a store being born (SQLite creates
a file empty and fills it at the first commit: made in place, a kill in between left such a file),
and :func:`~notochord.db.engine.create_sqlite_engine` refuses it instead of opening an empty space
over the lost one.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa

from notochord.built_aside import building_path, place_built, remove_abandoned, remove_building
from notochord.db.engine import create_sqlite_engine, storage_errors
from notochord.db.migrate import migrate
from notochord.errors import ReadOnlyStoreError

__all__ = ["open_sqlite_store"]


def open_sqlite_store(path: Path, *, busy_timeout_ms: int) -> sa.Engine:
    """The engine of the store at ``path``, first putting a new, complete one there when there is none.

    Raises:
        ReadOnlyStoreError: there is no store and its folder cannot be written.
        StorageError: the store could not be built (a full disk, …) or what is there is no store.
    """
    if not path.exists():
        _place_new_store(path, busy_timeout_ms=busy_timeout_ms)
    return create_sqlite_engine(path, busy_timeout_ms=busy_timeout_ms)


def _place_new_store(path: Path, *, busy_timeout_ms: int) -> None:
    folder = path.parent
    if folder.is_dir() and not os.access(folder, os.W_OK):
        raise ReadOnlyStoreError(f"cannot create the store {path}: its folder is read-only; make it writable")
    remove_abandoned(path)
    building = building_path(path)
    try:
        engine = create_sqlite_engine(building, busy_timeout_ms=busy_timeout_ms)
        try:
            migrate(engine)
        finally:
            # the last connection to close folds the write-ahead log into the file and removes it
            engine.dispose()
        with storage_errors("creating the store"):
            place_built(building, path)
    finally:
        remove_building(building)
