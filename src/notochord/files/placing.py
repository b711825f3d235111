"""Putting content and names in place in an opened folder without losing what is there.

Each step works on a folder already opened and checked (``parent``, a descriptor), so a link
swapped in on the way cannot lead it elsewhere:

- :func:`write_replace` writes through a temporary file renamed into place; a new file never
  replaces one that appeared meanwhile, and an overwrite can swap the versions in one step so the
  caller sees exactly what it replaced;
- :func:`move_noreplace` renames without ever replacing what is at the target.

Where the system lacks the one-step renames (:mod:`notochord.files.noreplace`), ``link`` refuses an
existing target instead, and on a file system without links a check just before the rename is all
there is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
import uuid

from notochord.files.noreplace import exchange, rename_noreplace

__all__ = ["move_noreplace", "place_new", "write_replace"]

_FILE_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# link() failing with these means the file system has no links (or not across these folders)
_NO_LINKS = frozenset({errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP})


def _lstat(name: str, parent: int) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return None


def write_replace(parent: int, name: str, payload: bytes, *, mode: int | None = None, swap: bool = False) -> str | None:
    """Write ``payload`` to ``name`` through a temporary file renamed into place.

    ``mode`` ``None`` means a new file: ``name`` was free when checked and must still be, since a
    file made there meanwhile has no saved version to roll back to (FileExistsError then).

    With ``swap``, the new version and the one in place trade names in one step where the system
    can; returns the temporary name, which then holds the version replaced, for the caller to keep
    and remove. Otherwise (and when the file was gone meanwhile) returns ``None``.
    """
    tmp = f".~notochord-{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, _FILE_CREATE, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as out:
            if mode is not None:
                # the new version keeps the old one's permissions: a private file stays private
                os.fchmod(out.fileno(), mode)
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        if mode is None:
            place_new(tmp, name, dir_fd=parent)
            return None
        if swap:
            with contextlib.suppress(FileNotFoundError):  # gone meanwhile: nothing to replace unseen
                if exchange(tmp, name, src_dir_fd=parent, dst_dir_fd=parent):
                    return tmp
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        return None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise


def place_new(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, dir_fd: int | None = None) -> None:
    """Rename the new file ``src`` to ``dst``, which must not exist, never replacing what appeared at
    ``dst`` meanwhile (both relative to ``dir_fd`` when given).

    Raises:
        FileExistsError: ``dst`` exists; ``src`` is left where it was.
    """
    if rename_noreplace(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd):
        return
    try:
        os.link(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        # a file system without links (FAT, some shares): the narrow check-then-rename is all there is
        taken = os.path.lexists(dst) if dir_fd is None else _lstat(os.fspath(dst), dir_fd) is not None
        if taken:
            raise FileExistsError(errno.EEXIST, "exists") from None
        os.replace(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    else:
        os.unlink(src, dir_fd=dir_fd)


def move_noreplace(src_dir: int, src: str, dst_dir: int, dst: str, st: os.stat_result) -> None:
    if rename_noreplace(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir):
        return
    if stat_mod.S_ISREG(st.st_mode):
        try:
            # link() refuses an existing target atomically, which rename() would silently replace.
            os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
        else:
            os.unlink(src, dir_fd=src_dir)
            return
    if _lstat(dst, dst_dir) is not None:
        raise FileExistsError(errno.EEXIST, "exists")
    os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
