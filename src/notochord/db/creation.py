"""A space's SQLite file appears complete, or not at all.

SQLite creates a database file empty the moment a connection opens a path that does not exist, and
fills it when the first transaction commits. Made in place, a process killed in between (or a disk
that filled) leaves a zero-byte file, which the next open cannot tell apart from a store whose
contents were lost by a failed copy or a truncating program. So a new store is built under a hidden
name beside its place (``.<name>.creating-<pid>-<token>``, which no listing of spaces matches),
brought to the newest schema, closed (its write-ahead log folded into the file), and only then
linked to its name: a hard link fails when the name already exists, so of several processes
creating the same space at once one places its file and the others drop theirs and open it.

That makes a zero-byte file where a store belongs damage, never a store being born, and
:func:`~notochord.db.engine.create_sqlite_engine` refuses it instead of opening an empty space over
the lost one. File systems without hard links (some removable drives) get a rename that does not
check first: two processes creating the same space on such a drive at the same instant may each
think theirs was placed, and the first one's writes before the second rename would be lost; nothing
is written at that point but the schema, which both have.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

import sqlalchemy as sa

from notochord.db.engine import create_sqlite_engine, storage_errors
from notochord.db.migrate import migrate
from notochord.errors import ReadOnlyStoreError

__all__ = ["CREATING_MARK", "open_sqlite_store"]

CREATING_MARK = ".creating-"
"""In the name of a store being built: ``.<name>.creating-<pid>-<token>``."""
# the file system keeps one name per file (FAT, exFAT, some network shares)
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


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
    _remove_abandoned(path)
    building = folder / f".{path.name}{CREATING_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        engine = create_sqlite_engine(building, busy_timeout_ms=busy_timeout_ms)
        try:
            migrate(engine)
        finally:
            # the last connection to close folds the write-ahead log into the file and removes it
            engine.dispose()
        with storage_errors("creating the store"):
            _fsync(building)
            _link_into_place(building, path)
            _fsync(folder)
    finally:
        _remove_files(building)


def _link_into_place(building: Path, path: Path) -> None:
    try:
        os.link(building, path)
    except FileExistsError:
        return  # another process placed the same store first: theirs is the store
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
        if not path.exists():
            os.replace(building, path)


def _remove_abandoned(path: Path) -> None:
    """Remove what a creation of this store left when its process was killed (its pid is gone)."""
    for leftover in path.parent.glob(f".{path.name}{CREATING_MARK}*"):
        pid_text = leftover.name.removeprefix(f".{path.name}{CREATING_MARK}").split("-", 1)[0]
        if not pid_text.isdigit() or _is_running(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            leftover.unlink()


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or a number no process has: leave the file be
    return True


def _remove_files(building: Path) -> None:
    for suffix in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            Path(f"{building}{suffix}").unlink()


def _fsync(path: Path) -> None:
    """Make ``path`` (a file, or a folder's list of names) durable before the next step relies on it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
