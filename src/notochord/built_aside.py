"""A database file built aside under a hidden name and linked to its own name only once complete.

SQLite creates a database file empty the moment a connection opens a path that does not exist, and
fills it at the first commit. Made in place, a process killed in between (or a disk that filled)
leaves a zero-byte file that no one can tell from one whose contents were lost. Built aside and
placed complete, an empty file where a database belongs is always damage.

- :func:`building_path` names the file being built: ``.<name>.creating-<pid>-<token>`` beside its
  place, hidden from every listing that looks for ``<name>``.
- :func:`place_built` makes it durable and links it to its name. A hard link fails when the name
  exists, so of several processes building the same file at once one places its own and the others
  keep the one placed. File systems without hard links (some removable drives, network shares) get
  a rename that does not check first: there two builders of the same file at the same instant may
  each place theirs, the last one winning; both hold what a new file holds, and nothing more.
- :func:`remove_building` removes a building file and its journals, placed or not.
- :func:`remove_abandoned` removes what a builder left when it was killed: a building file whose
  process is gone. One whose process still runs is left alone.

Standard library only: the stores of the vault (:mod:`notochord.db`) and of a gem
(:mod:`notochord.files`) build their files this way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path
from typing import Final

__all__ = ["CREATING_MARK", "building_path", "place_built", "remove_abandoned", "remove_building"]

CREATING_MARK: Final = ".creating-"
"""In the name of a file being built: ``.<name>.creating-<pid>-<token>``."""
# the file system keeps one name per file (FAT, exFAT, some network shares)
_NO_HARD_LINKS: Final = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})
_SIDE_FILES: Final = ("", "-journal", "-wal", "-shm")


def building_path(path: Path) -> Path:
    """A new name, beside ``path``, to build ``path``'s file under."""
    return path.parent / f".{path.name}{CREATING_MARK}{os.getpid()}-{secrets.token_hex(4)}"


def place_built(building: Path, path: Path) -> None:
    """Make ``building`` durable and give it the name ``path``, unless another process placed a file
    there first (then theirs is the file). ``building`` keeps its own name too: remove it after.

    Raises:
        OSError: syncing or linking failed (a full disk, a folder that cannot be written).
    """
    _fsync(building)
    try:
        os.link(building, path)
    except FileExistsError:
        return
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
        if not path.exists():
            os.replace(building, path)
    _fsync(path.parent)


def remove_building(building: Path) -> None:
    """Remove ``building`` and the journals SQLite may have left beside it."""
    for suffix in _SIDE_FILES:
        with contextlib.suppress(OSError):
            Path(f"{building}{suffix}").unlink()


def remove_abandoned(path: Path) -> None:
    """Remove the building files of ``path`` whose process is gone (it was killed part way)."""
    with contextlib.suppress(OSError):
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


def _fsync(path: Path) -> None:
    """Make ``path`` (a file, or a folder's list of names) durable before the next step relies on it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
