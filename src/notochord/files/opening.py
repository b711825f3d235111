"""Opening a file inside a folder already opened and checked, and naming it through that folder.

A gem's folder is walked from its root with ``O_NOFOLLOW`` into a descriptor of the parent
(:class:`~notochord.files.workspace.Workspace`); the helpers here open the last name from that
descriptor, so a link swapped in on the way cannot lead elsewhere, and never open a pipe, socket or
device for reading, which could wait for ever or make a device act.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from notochord.errors import FileError
from notochord.files.paths import Target, is_file_or_folder

__all__ = ["DIR_FLAGS", "FILE_READ", "lstat_at", "open_read", "open_regular", "path_at", "permissions", "through"]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a named pipe must not wait for a writer (it is refused once open)
FILE_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def lstat_at(name: str, parent: int) -> os.stat_result | None:
    """What ``name`` in the folder ``parent`` is, links not followed; ``None`` when it is missing."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def open_read(parent: int, target: Target) -> Iterator[BinaryIO]:
    """The file ``target`` names in ``parent``, opened for reading; a folder is ``IsADirectoryError``,
    anything else that is not a file a :class:`~notochord.errors.FileError`."""
    st = lstat_at(target.parts[-1], parent)
    if st is not None and not is_file_or_folder(st) and not stat_mod.S_ISLNK(st.st_mode):
        # opening a socket fails with a bare ENXIO, and opening a device may itself act (a tape rewinds)
        raise FileError(f"{target.display} is not a file but a pipe, socket or device; it cannot be read")
    fd = os.open(target.parts[-1], FILE_READ, dir_fd=parent)
    with os.fdopen(fd, "rb") as stream:
        mode = os.fstat(stream.fileno()).st_mode
        if stat_mod.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder")
        if not stat_mod.S_ISREG(mode):
            raise FileError(f"{target.display} is not a file but a pipe, socket or device; it cannot be read")
        yield stream


@contextlib.contextmanager
def open_regular(parent: int, name: str) -> Iterator[BinaryIO]:
    """The file ``name`` in ``parent``, opened for reading; anything but a file is refused."""
    fd = os.open(name, FILE_READ, dir_fd=parent)
    with os.fdopen(fd, "rb") as stream:
        if not stat_mod.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise FileError(f"{name} is not a file")
        yield stream


def permissions(st: os.stat_result) -> int:
    """The read, write and execute bits of a file; never set-user-id, set-group-id or sticky,
    which must not pass to content a gem wrote."""
    return stat_mod.S_IMODE(st.st_mode) & 0o777


def through(parent: int, target: Target, name: str | None = None) -> Path:
    """A path to ``target`` (or to ``name`` beside it) through the folder already opened and checked
    as ``parent``.

    The tool process may swap a folder on the path for a link at any moment; a path through the
    open descriptor still names the checked folder, where ``target.absolute`` would follow the link
    out of the root. Without ``/proc`` (not Linux) the plain path is all there is.
    """
    fallback = target.absolute if name is None else target.absolute.with_name(name)
    return path_at(parent, name or target.parts[-1], fallback)


def path_at(parent: int, name: str, fallback: Path) -> Path:
    """A path to ``name`` in the folder opened as ``parent``, for calls that take a path (the trash).

    Through ``/proc`` it names the opened folder even once a link has been swapped in for it.
    Without ``/proc`` (not Linux) ``fallback``, the path as checked, is all there is.
    """
    if _FD_PATHS.is_dir():
        return _FD_PATHS / str(parent) / name
    return fallback


_FD_PATHS = Path("/proc/self/fd")
