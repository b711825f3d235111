"""Where deleted files and old versions too large for the history go: the user's trash.

The history records the location an item got there, so that a rollback can take it back out; a
trash that is a plain folder (:class:`FolderTrash`) stands in for the system trash wherever notochord
has no access to it.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Protocol

from notochord.errors import FileError
from notochord.files.paths import NAME_MAX

__all__ = ["FolderTrash", "Trash", "dispose"]


class Trash(Protocol):
    """Where deleted files and too-large old versions go (the user's system trash)."""

    def put(self, path: Path) -> str:
        """Move ``path`` into the trash and return a location that :meth:`restore` accepts."""
        ...

    def restore(self, location: str, dest: Path) -> None:
        """Move the trashed item at ``location`` back to ``dest`` (which must not exist)."""
        ...


class FolderTrash:
    """A trash that is a plain folder: items are moved in under a unique name."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def put(self, path: Path) -> str:
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            target = self._folder / _item_name(path.name)
            shutil.move(os.fspath(path), os.fspath(target))
        except OSError as exc:
            raise FileError(f"could not move {path.name} to the trash: {exc.strerror}") from exc
        return os.fspath(target)

    def restore(self, location: str, dest: Path) -> None:
        source = Path(location)
        if source.parent != self._folder:
            raise FileError(f"{location} is not an item of this trash")
        try:
            if dest.exists() or dest.is_symlink():
                raise FileError(f"cannot restore {dest.name} from the trash: the path is taken")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(os.fspath(source), os.fspath(dest))
        except OSError as exc:
            raise FileError(f"could not restore {dest.name} from the trash: {exc.strerror}") from exc


def _item_name(name: str) -> str:
    """``<unique>-<name>``, cut to the longest name a folder holds.

    A name may already be as long as that; the start and the extension are what the user looks for
    in the trash, so what goes is the end of the name before its extension, at whole characters.
    """
    unique = f"{uuid.uuid4().hex[:12]}-"
    room = NAME_MAX - len(unique)
    if len(os.fsencode(name)) <= room:
        return unique + name
    stem, dot, extension = name.rpartition(".")
    tail = dot + extension if stem and len(os.fsencode(dot + extension)) <= room // 4 else ""
    head = stem if tail else name
    budget = room - len(os.fsencode(tail))
    kept = 0
    for index, char in enumerate(head):  # whole characters only
        kept += len(os.fsencode(char))
        if kept > budget:
            head = head[:index]
            break
    return unique + head + tail


def dispose(path: Path, trash: Trash | None) -> str | None:
    """Remove the file at ``path`` from its place: into ``trash`` when there is one (returns its
    location there), else unlinked for good (returns ``None``)."""
    if trash is not None:
        return trash.put(path)
    try:
        path.unlink()
    except OSError as exc:
        raise FileError(f"could not delete {path.name}: {exc.strerror}") from exc
    return None
