"""One reading of a full disk wherever a file is written: :class:`~notochord.errors.StorageFullError`.

A gem, the CLI and the service branch on that class (exit code 8, HTTP 507) instead of reading an
``OSError`` text; every file-writing path asks :func:`disk_full` before it reports a generic failure.
"""

from __future__ import annotations

import errno

from notochord.errors import StorageFullError

__all__ = ["disk_full"]

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_FULL = 13


def disk_full(error: BaseException, what: str) -> StorageFullError | None:
    """The error to raise when ``error`` means the disk is full while writing ``what``, else ``None``.

    Knows ``OSError`` (``ENOSPC``, ``EDQUOT``) and SQLite's ``SQLITE_FULL`` from any driver.
    """
    full = isinstance(error, OSError) and error.errno in _FULL_ERRNOS
    code = getattr(error, "sqlite_errorcode", None)
    full = full or (isinstance(code, int) and code & 0xFF == _SQLITE_FULL)
    if not full:
        return None
    return StorageFullError(f"cannot write {what}: the disk is full. Free some space and retry")
