"""Putting a path back as it was before one recorded change: the file-system half of a rollback.

Which changes may be undone is :class:`~notochord.files.history.FileHistory`'s decision; this module
acts on one that may. Rules:

- Every path is reached by walking from the folder's root, one folder at a time, never following a
  link: a gem's tool process may swap a folder for a link to anywhere between the history's check
  and the act, and the rollback must then touch nothing outside the folder. A link met on the way
  is a :class:`~notochord.errors.FileError` and nothing is done.
- A file is put back only once its earlier version is in hand, copied out of the history beside it
  or taken out of the trash into its place: until then the version the run left stays where it is.
  An earlier version that cannot be had is a :class:`~notochord.files.skips.NotPutBackError` whose
  reason (shown to the user beside the path) says why and, for one in the trash, where it was put;
  nothing has changed then.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from notochord.errors import FileError
from notochord.files.noreplace import rename_noreplace
from notochord.files.opening import DIR_FLAGS, lstat_at, path_at
from notochord.files.skips import NotPutBackError, SkipReason
from notochord.files.trash import Trash

__all__ = ["put_back_file", "remove_folder", "restore_folder", "undo_move"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def undo_move(root: Path, path: str, dest: str) -> None:
    """Move ``dest`` back to ``path`` (both inside ``root``), never replacing what is there now."""
    # the folder it came from (a run folder, say) may have been removed since
    with _parent(root, dest) as (moved_in, moved), _parent(root, path, create=True) as (back_in, back):
        if rename_noreplace(moved, back, src_dir_fd=moved_in, dst_dir_fd=back_in):
            return
        if lstat_at(back, back_in) is not None:
            raise FileExistsError(errno.EEXIST, "the original path is taken")
        os.rename(moved, back, src_dir_fd=moved_in, dst_dir_fd=back_in)


def remove_folder(root: Path, path: str) -> None:
    """Remove the empty folder ``path`` the run made."""
    with _parent(root, path) as (parent, name):
        os.rmdir(name, dir_fd=parent)


def restore_folder(root: Path, path: str) -> None:
    """Make the (empty) folder ``path`` the run deleted again, with any missing folder above it."""
    with _parent(root, path, create=True) as (parent, name):
        os.mkdir(name, 0o777, dir_fd=parent)


def put_back_file(
    root: Path,
    path: str,
    *,
    created: bool,
    blob: Path | None,
    old_trash: str | None,
    mode: int | None,
    trash: Trash | None,
) -> None:
    """Undo a ``create``, ``overwrite`` or file ``delete`` of ``path`` inside ``root``.

    ``created``: there was nothing at ``path`` before, so the run's file is only taken away.
    ``blob``: the earlier version's copy in the history; else ``old_trash``: where the trash holds it.
    The run's version, when there is one, goes to ``trash`` (for good without a trash).
    """
    if not created and blob is None:
        if old_trash is None:
            raise NotPutBackError(
                SkipReason.of("no_earlier_version", "no earlier version of it was kept, so it stays as it is")
            )
        if trash is None:
            raise NotPutBackError(
                SkipReason.of(
                    "in_trash_no_trash",
                    f"its earlier version was too large for the file history and was put in the trash ({old_trash}); "
                    "there is no trash here to take it back from, so the file stays as it is: restore it from "
                    "there by hand",
                    location=old_trash,
                )
            )
    plain = root / path  # where /proc is missing, the checked path is all there is
    with _parent(root, path, create=True) as (parent, name):
        if created:
            _discard(parent, name, trash, plain)
        elif blob is not None:
            staged = _stage(parent, blob, mode)
            try:
                _discard(parent, name, trash, plain)
                os.replace(staged, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(staged, dir_fd=parent)
                raise
        elif old_trash is not None and trash is not None:
            _from_trash(parent, name, old_trash, trash, plain)


def _from_trash(parent: int, name: str, location: str, trash: Trash, plain: Path) -> None:
    here = path_at(parent, name, plain)
    current = trash.put(here) if lstat_at(name, parent) is not None else None
    try:
        trash.restore(location, here)
    except FileError as exc:
        if current is not None:
            # the run's version goes back where it was: the user keeps a file rather than none
            with contextlib.suppress(FileError):
                trash.restore(current, here)
        raise NotPutBackError(
            SkipReason.of(
                "in_trash_unavailable",
                f"its earlier version was too large for the file history and was put in the trash ({location}), "
                f"but it cannot be taken back from there ({exc.message}); the file stays as it is",
                location=location,
                detail=exc.message,
            )
        ) from exc


def _discard(parent: int, name: str, trash: Trash | None, plain: Path) -> None:
    """The run's version of ``name`` out of the way: into the trash, or for good without one."""
    if lstat_at(name, parent) is None:
        return
    if trash is not None:
        trash.put(path_at(parent, name, plain))
    else:
        os.unlink(name, dir_fd=parent)


def _stage(parent: int, blob: Path, mode: int | None) -> str:
    """A copy of ``blob`` under a hidden name in ``parent``, ready to be renamed into place.

    Copied rather than read whole: without a trash the history keeps versions of any size.
    """
    try:
        source = open(blob, "rb")  # noqa: SIM115  (closed below; its absence has its own words)
    except FileNotFoundError:
        raise NotPutBackError(
            SkipReason.of(
                "history_copy_missing",
                "the copy of its earlier version is missing from the file history, so it stays as it is",
            )
        ) from None
    staged = f".~restore-{uuid.uuid4().hex}.tmp"
    with source:
        fd = os.open(staged, _CREATE, 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as out:
                if mode is not None:
                    os.fchmod(out.fileno(), mode & 0o777)
                shutil.copyfileobj(source, out)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staged, dir_fd=parent)
            raise
    return staged


@contextlib.contextmanager
def _parent(root: Path, rel: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """The folder holding ``rel``, opened by walking from ``root`` without following a link, and
    ``rel``'s last name; ``create`` makes missing folders on the way."""
    parts = rel.split("/")
    fd = os.open(root, DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                st = lstat_at(part, fd)
                if st is not None and stat.S_ISLNK(st.st_mode):
                    raise NotPutBackError(
                        SkipReason.of(
                            "folder_became_link",
                            "a folder on its way was replaced by a link since, so it stays as it is",
                        )
                    ) from exc
                raise
            os.close(fd)
            fd = nxt
        yield fd, parts[-1]
    finally:
        os.close(fd)
