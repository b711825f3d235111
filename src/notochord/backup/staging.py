"""Hidden staging folders, and telling what a killed process left from what one still running owns.

A restore unpacks into ``.notochord-restore-…`` inside the folder it stages in: the data directory
itself when it exists (an empty mount point), else the folder that will hold it. A backup copies the
vault into ``.notochord-backup-…`` beside its destination. A process killed part way (SIGKILL, a
power cut) leaves its staging folder behind: a copy of the vault, master key included.

Ownership is an advisory lock (``flock``), which the kernel drops when the process ends, however it
ends; so a staging folder nobody holds belongs to a process that is gone, and is removed.

- A restore holds the folder it stages in for as long as it runs, and creates its staging folder
  only while holding it: whoever holds that folder knows every restore staging folder in it is a
  leftover, and a restore that finds it held knows another one is running there.
- Backups into one folder run side by side, so each holds its own staging folder instead. It is
  created under a name no sweep looks at, locked, and only then renamed to the name sweeps look
  at: a sweep never sees one that is not held yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from notochord.errors import ConfigurationError

__all__ = ["BACKUP_PREFIX", "RESTORE_PREFIX", "claimed", "leftovers", "owned_staging"]

RESTORE_PREFIX = ".notochord-restore-"
BACKUP_PREFIX = ".notochord-backup-"
# a backup's staging folder before it is held: no sweep looks at this name
_UNCLAIMED_PREFIX = ".notochord-new-backup-"
# what ``tempfile.mkdtemp`` appends: a folder a person named so by chance is never taken for ours
_TEMP_SUFFIX = r"[a-z0-9_]{8}"


@contextlib.contextmanager
def claimed(folder: Path, target: Path) -> Iterator[None]:
    """Hold ``folder`` for the restore into ``target`` while the block runs, having removed what
    restores that died there left behind. On a file system without locks (some network shares)
    nothing tells a leftover from a restore still running, so nothing is removed there.

    Raises:
        ConfigurationError: another restore holds the folder.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        held = True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            where = f"into {target}" if folder == target else f"in the folder {folder}"
            raise ConfigurationError(
                f"another restore {where} is running; wait for it to finish, then retry (or restore into "
                "another folder)"
            ) from None
        except OSError:
            held = False
        if held:
            for name in leftovers(folder):
                # a restore that died part way: its half-unpacked vault (master key included) goes too
                shutil.rmtree(folder / name, ignore_errors=True)
        yield
    finally:
        os.close(fd)


def leftovers(folder: Path, prefix: str = RESTORE_PREFIX) -> list[str]:
    """The staging folders named with ``prefix`` in ``folder``, by name."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    ours = re.compile(re.escape(prefix) + _TEMP_SUFFIX)
    return sorted(name for name in names if ours.fullmatch(name) and _is_folder(folder / name))


@contextlib.contextmanager
def owned_staging(folder: Path) -> Iterator[Path]:
    """A new backup staging folder in ``folder``, held by this process until the block ends and then
    removed; the staging folders of backups that died in ``folder`` are removed first."""
    _sweep_backups(folder)
    path = Path(tempfile.mkdtemp(prefix=_UNCLAIMED_PREFIX, dir=folder))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        raise
    try:
        held = _try_lock(fd)
        if held:
            claimed_path = folder / (BACKUP_PREFIX + path.name.removeprefix(_UNCLAIMED_PREFIX))
            os.rename(path, claimed_path)
            path = claimed_path
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def _sweep_backups(folder: Path) -> None:
    for name in leftovers(folder, BACKUP_PREFIX):
        try:
            fd = os.open(folder / name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if _try_lock(fd):
                shutil.rmtree(folder / name, ignore_errors=True)
        finally:
            os.close(fd)


def _try_lock(fd: int) -> bool:
    """Whether the exclusive lock on ``fd`` was taken: not while another process holds it, nor on a
    file system without locks (where whether a folder is in use cannot be told, so it is kept)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
