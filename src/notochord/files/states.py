"""The state of a path, as the file history records it after each change and compares at rollback.

A file is its content's ``sha256:<hex>``; an empty folder is ``dir``; a folder with anything in it is
``dir:sha256:<hex>`` over every name, kind and content inside; a missing path is ``absent``. A path
reached through a symlink, or that cannot be read, has no state (``None``): rollback never acts on it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["ABSENT", "CHUNK", "DIR", "hash_bytes", "hash_stream", "path_state"]

ABSENT = "absent"
DIR = "dir"
CHUNK = 1024 * 1024


def hash_stream(stream: BinaryIO) -> str:
    """``sha256:<hex>`` of everything left in ``stream``."""
    digest = hashlib.sha256()
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def hash_bytes(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``: the after-state of a file holding it."""
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def path_state(root: Path, rel: str) -> str | None:
    """Current state of ``root/rel``; ``None`` when it is reached through a symlink or unreadable.

    A file is its content's ``sha256:<hex>``; an empty folder is ``dir``; a folder with anything in
    it is ``dir:sha256:<hex>`` over every name, kind and content inside, at any depth, hidden ones
    included, so that any change within it since reads as a different state.
    """
    target = root / rel
    try:
        if os.path.realpath(target) != os.fspath(target):
            return None
        if target.is_dir():
            return _folder_state(target)
        if not target.exists():
            return ABSENT
        return _file_state(target)
    except OSError:
        return None


def _file_state(path: Path) -> str | None:
    # a named pipe must not make the history wait for a writer that never comes
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return None
        return hash_stream(stream)


def _folder_state(folder: Path) -> str | None:
    """``dir``, or ``dir:sha256:<hex>`` of what the folder holds.

    Contents are hashed rather than sizes and times compared: a rollback that restores a file the
    run overwrote inside a moved folder writes it anew (a new inode and time) with the same bytes,
    and the folder must then read as unchanged. Links are taken as their text, never followed;
    pipes, sockets and devices by kind only, never opened.
    """
    digest = hashlib.sha256()
    pending = [(folder, b"")]
    seen = False
    # a loop rather than recursion: a tree thousands of folders deep must not exhaust the stack
    while pending:
        current, prefix = pending.pop()
        with os.scandir(current) as scan:
            items = sorted(scan, key=lambda item: item.name)
        for item in items:
            seen = True
            name = prefix + os.fsencode(item.name)
            mode = item.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                kind, detail = b"dir", b""
                pending.append((Path(item.path), name + b"/"))
            elif stat.S_ISREG(mode):
                state = _file_state(Path(item.path))
                if state is None:
                    return None
                kind, detail = b"file", state.encode("ascii")
            elif stat.S_ISLNK(mode):
                kind, detail = b"link", os.fsencode(os.readlink(item.path))
            else:
                kind, detail = b"other", b""
            digest.update(name + b"\0" + kind + b"\0" + detail + b"\0")
    return f"{DIR}:sha256:{digest.hexdigest()}" if seen else DIR
