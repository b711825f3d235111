"""Renames that check and act in one step: one that never replaces what is at the target
(P-FILE-24), and one that swaps two files (P-FILE-22).

``os.rename`` silently replaces an existing file, or an empty folder, at the target. Checking first
leaves a window in which another run, the user or any program may create the target; what it
created would then be lost without a trace in the history. Linux's ``renameat2`` with
``RENAME_NOREPLACE`` and macOS's ``renameatx_np`` with ``RENAME_EXCL`` make the check and the rename
one step. Where the system or the file system offers neither, :func:`rename_noreplace` says so and
the caller falls back to its own means.

:func:`exchange` (``RENAME_EXCHANGE``, macOS ``RENAME_SWAP``) puts a new version in place and leaves
the one it displaced under the new version's old name, in one step: whatever the user saved up to
that instant is what the caller finds there, so nothing is replaced unseen.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable
from functools import cache

__all__ = ["can_exchange", "can_rename_noreplace", "exchange", "rename_noreplace"]

_AT_FDCWD = {"linux": -100, "darwin": -2}
# (C function, its "fail if the target exists" flag)
_FUNCTIONS = {"linux": ("renameat2", 1), "darwin": ("renameatx_np", 4)}
# the flag that swaps the two names instead
_EXCHANGE_FLAGS = {"linux": 2, "darwin": 2}
# the system or this file system cannot promise "no replace": the caller must fall back
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})

_Renameat = Callable[[int, bytes, int, bytes, int], int]


def _platform() -> str:
    return "linux" if sys.platform.startswith("linux") else sys.platform


@cache
def _renameat() -> _Renameat | None:
    known = _FUNCTIONS.get(_platform())
    if known is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    function = getattr(libc, known[0], None)  # glibc 2.28+, macOS 10.12+; absent from some others
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    renameat: _Renameat = function
    return renameat


def can_rename_noreplace() -> bool:
    """Whether this system has a no-replace rename at all (a file system may still lack it)."""
    return _renameat() is not None


def rename_noreplace(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    src_dir_fd: int | None = None,
    dst_dir_fd: int | None = None,
) -> bool:
    """Rename ``src`` to ``dst`` in one step that fails when ``dst`` exists.

    Returns ``False``, having changed nothing, when the system cannot rename this way; the caller
    then falls back to a check and a plain rename (or ``link``).

    Raises:
        FileExistsError: ``dst`` exists; nothing was changed.
        OSError: any other failure of the rename.
    """
    return _rename(src, dst, swap=False, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def can_exchange() -> bool:
    """Whether this system has a rename that swaps two names at all (a file system may still lack it)."""
    return _renameat() is not None


def exchange(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    src_dir_fd: int | None = None,
    dst_dir_fd: int | None = None,
) -> bool:
    """Swap ``src`` and ``dst`` in one step; both must exist.

    Returns ``False``, having changed nothing, when the system cannot rename this way.

    Raises:
        FileNotFoundError: either name is missing; nothing was changed.
        OSError: any other failure of the rename.
    """
    return _rename(src, dst, swap=True, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)


def _rename(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    swap: bool,
    src_dir_fd: int | None,
    dst_dir_fd: int | None,
) -> bool:
    renameat = _renameat()
    if renameat is None:
        return False
    platform = _platform()
    flags = _EXCHANGE_FLAGS[platform] if swap else _FUNCTIONS[platform][1]
    here = _AT_FDCWD[platform]
    result = renameat(
        here if src_dir_fd is None else src_dir_fd,
        os.fsencode(src),
        here if dst_dir_fd is None else dst_dir_fd,
        os.fsencode(dst),
        flags,
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), os.fspath(src), None, os.fspath(dst))
