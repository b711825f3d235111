"""An ``OSError`` met in a gem's folder, as the :class:`~notochord.errors.FileError` the gem gets.

The words name the address the gem used (``workspace:notes.txt``), never where the folder is on disk.
"""

from __future__ import annotations

import errno

from notochord.errors import (
    FileError,
    FileExistsInWorkspaceError,
    FileNotFoundInWorkspaceError,
    FilePermissionError,
    StorageFullError,
)
from notochord.files.full import disk_full

__all__ = ["translate"]


def translate(exc: OSError, display: str) -> FileError | StorageFullError:
    code = exc.errno
    full = disk_full(exc, display)
    if full is not None:
        return full
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundInWorkspaceError(f"{display} does not exist", path=display)
    if isinstance(exc, FileExistsError):
        return FileExistsInWorkspaceError(f"{display} already exists", path=display)
    if isinstance(exc, PermissionError):
        return FilePermissionError(f"{display}: the system refused access", path=display)
    if code == errno.ELOOP:
        return FilePermissionError(f"{display} changed into a link while it was checked", path=display)
    if isinstance(exc, IsADirectoryError):
        return FileError(f"{display} is a folder, not a file")
    if isinstance(exc, NotADirectoryError):
        return FileError(f"{display}: a part of the path is a file, not a folder")
    if code == errno.EXDEV:
        return FileError(f"{display}: cannot move between different disks")
    if code == errno.ENOTEMPTY:
        return FileError(f"{display} is a folder that is not empty; delete its entries first")
    return FileError(f"{display}: {exc.strerror or exc}")
