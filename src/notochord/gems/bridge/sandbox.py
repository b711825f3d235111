"""Confine the current process before gem code runs: no network of its own, files only where allowed.

Standard library only: this module runs inside the tool process, before the gem's code is loaded.

- **Network**: a new, empty network namespace (``unshare(CLONE_NEWNET)``; as an unprivileged user,
  together with a new user namespace). Inside it there is only a loopback interface that is down, so
  every connection fails and all traffic must go through ``ctx.http`` on the host.
- **Files**: Landlock (Linux ≥ 5.13): reading is allowed only below the given read-only roots (the
  Python or node installation, system libraries, the gem's code) and writing only below the given
  read-write roots (the run folder, the conversation folder). The data directory, with the space's
  database and master key, is outside both.

Each step reports what it achieved; where the kernel refuses, the process is still isolated by being
a separate process that holds no database handle, key or host object.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Iterable

__all__ = ["confine_files", "die_with_parent", "isolate_network"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000

# Landlock syscalls are numbered alike on every architecture that has them (asm-generic).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9

# filesystem access rights, ABI 1…3
_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3

_READ = _EXECUTE | _READ_FILE | _READ_DIR
_WRITE = (
    _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_CHAR
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SOCK
    | _MAKE_FIFO
    | _MAKE_BLOCK
    | _MAKE_SYM
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL | None:
    if platform.system() != "Linux":
        return None
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the host that started it) ends, however it ends.

    The tool process runs in a process group of its own, so a signal to the host's group (Ctrl-C, a
    closed terminal, a ``kill`` of the group) no longer reaches it; without this it would run on
    after a host killed outright. ``parent`` is the host's pid as read at start: if the host is gone
    already, the process exits at once.
    """
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def isolate_network() -> str:
    """Move this process into an empty network namespace; returns what was achieved."""
    libc = _libc()
    if libc is None:
        return "network: not isolated (no Linux namespaces on this system)"
    if libc.unshare(_CLONE_NEWNET) == 0:
        return "network: isolated (new network namespace)"
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        return "network: isolated (new user and network namespace)"
    return f"network: not isolated ({os.strerror(ctypes.get_errno())})"


def confine_files(*, read_only: Iterable[str], read_write: Iterable[str]) -> str:
    """Restrict file access with Landlock; returns what was achieved."""
    libc = _libc()
    if libc is None:
        return "files: not confined (Landlock needs Linux)"
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 1:
        return f"files: not confined (Landlock unavailable: {os.strerror(ctypes.get_errno())})"
    write = _WRITE | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    handled = _READ | write
    attr = _RulesetAttr(handled)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        return f"files: not confined ({os.strerror(ctypes.get_errno())})"
    try:
        for roots, access in ((read_only, _READ), (read_write, _READ | write)):
            for root in roots:
                if not os.path.exists(root):
                    continue
                fd = os.open(root, os.O_PATH | os.O_CLOEXEC)
                try:
                    # files take only file rights; directories take all
                    rights = (
                        access
                        if os.path.isdir(root)
                        else access & (_EXECUTE | _READ_FILE | _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0))
                    )
                    rule = _PathBeneathAttr(rights, fd)
                    if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) < 0:
                        return f"files: not confined (adding {root}: {os.strerror(ctypes.get_errno())})"
                finally:
                    os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"files: not confined ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) < 0:
            return f"files: not confined ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return f"files: confined by Landlock (ABI {abi})"
