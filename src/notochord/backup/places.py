"""Where a backup is written or a vault restored: refusing places that cannot be, and failures in words."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from notochord.errors import ConfigurationError, StorageError
from notochord.files.full import disk_full

__all__ = ["amount", "refuse_non_folder", "refuse_unusable_name", "written"]


def amount(size: int) -> str:
    """``size`` bytes as people read them on a disk's label: ``812 bytes``, ``4.2 MB``, ``1.5 GB``."""
    if size < 1000:
        return f"{size} bytes"
    value = float(size)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 999.95 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable: TB is the last unit")  # pragma: no cover


def refuse_unusable_name(path: Path, what: str, fix: str) -> None:
    """Refuse ``path`` when the system cannot even look it up: a name longer than the file system
    allows, or links that lead round in a loop. (``Path.exists`` raises for the first and answers
    "no" for the second, so neither would otherwise be told in words.)"""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            reason = "a name is too long for the file system"
        elif exc.errno == errno.ELOOP:
            reason = "its links lead round in a loop"
        else:
            return  # anything else is met, and told, where the path is used
        raise ConfigurationError(f"{what} {path} cannot be used: {reason}; {fix}") from None


def refuse_non_folder(path: Path, fix: str) -> None:
    """Refuse ``path`` when it, or the nearest of its folders that exists, is a broken link or a file."""
    nearest = path
    while not os.path.lexists(nearest) and nearest.parent != nearest:
        nearest = nearest.parent
    if nearest.is_symlink() and not nearest.exists():
        # typically a link to a drive that is not mounted: creating the folder would go nowhere
        raise ConfigurationError(
            f"{nearest} is a link to {os.readlink(nearest)}, which does not exist; mount or create it, or {fix}"
        )
    if nearest != path and not nearest.is_dir():
        raise ConfigurationError(f"{nearest} is a file, not a folder; {fix}")


def written(exc: OSError, what: str, folder: Path, refused: type[StorageError], fix: str) -> StorageError:
    """The error to raise when writing ``what`` into ``folder`` failed with ``exc``, in words."""
    full = disk_full(exc, what)
    if full is not None:
        return full
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    if exc.filename is not None and not Path(os.fsdecode(exc.filename)).is_relative_to(folder):
        # a file of the vault (or the backup) that could not be read, not the folder written to
        return StorageError(f"cannot write {what}: cannot read {os.fsdecode(exc.filename)} ({reason})")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return refused(f"cannot write {what}: the folder {folder} is read-only or may not be written; {fix}")
    return StorageError(f"cannot write {what}: {reason} ({os.fsdecode(exc.filename or folder)})")
