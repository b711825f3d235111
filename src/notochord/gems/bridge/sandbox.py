"""Confine the current process before gem code runs: no network of its own, files only where allowed.

Standard library only: this module runs inside the tool process, before the gem's code is loaded.

- **Network**: a new, empty network namespace (``unshare(CLONE_NEWNET)``; as an unprivileged user,
  together with a new user namespace). Inside it there is only a loopback interface that is down, so
  every connection fails and all traffic must go through ``ctx.http`` on the host.
- **Processes**: a new PID namespace (``unshare(CLONE_NEWPID)``; as an unprivileged user, together
  with a new user namespace), so that every process the tool starts ends with the run, whatever
  process group or session it moved to (see :func:`contain_processes`). Where the kernel allows it,
  the namespace also gets a ``/proc`` of its own, so the tool sees none of the machine's processes:
  not notochord's, whose environment may hold API keys and passwords, nor the user's other programs.
- **Privileges**: every capability is dropped, from the bounding set too, so that a tool run by root
  (a container, a service account) cannot load a kernel module or change its user id, nor can a
  program it starts gain them back (see :func:`drop_privileges`).
- **Files**: Landlock (Linux ≥ 5.13): reading is allowed only below the given read-only roots (the
  Python or node installation, system libraries, the gem's code) and writing only below the given
  read-write roots (the run folder, the conversation folder). The data directory, with the space's
  database and master key, is outside both.

Each step reports what it achieved; where the kernel refuses, the process is still isolated by being
a separate process that holds no database handle, key or host object, and what it forks is ended
with its process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import platform
import resource
import select
import signal
from collections.abc import Iterable
from typing import NoReturn

__all__ = ["confine_files", "contain_processes", "die_with_parent", "drop_privileges", "isolate_network"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18

# Landlock syscalls are numbered alike on every architecture that has them (asm-generic).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_CAPABILITY_WORDS = 2  # version 3 holds 64 capabilities in two 32-bit words per set
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


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    # once: find_library may run ldconfig in a subprocess, which contain_processes must not do once
    # it has unshared (that child would become the namespace's first process)
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


def contain_processes() -> str:
    """Run the rest of this program in a new PID namespace, which ends with this process; returns
    what was achieved.

    Only the tool's process returns from here. ``unshare(CLONE_NEWPID)`` moves only the children
    made afterwards, so this process forks twice:

    - it stays what the host started and watches (same pid, process group and session), waits for
      the namespace's first process and ends as the tool ended (:func:`_relay`);
    - its child is the namespace's first process (pid 1): it ends with the relay
      (``PR_SET_PDEATHSIG``), reaps orphans, and ends as soon as the tool does (:func:`_init`);
    - that one's child, pid 2, runs the gem's code (or execs node) and returns from here.

    When pid 1 ends, for whatever reason, the kernel kills every process in the namespace, whatever
    process group or session it moved to (``os.setsid``, a double fork), so a run's processes end
    with the run however it or the host ends: the host's SIGKILL of the group, of the relay alone,
    or the host's own death (the relay dies with the host, pid 1 with the relay).

    The gem's code is not pid 1 because the kernel shields a namespace's first process from any
    signal sent from inside the namespace that it has no handler for: a tool that sends itself
    ``SIGTERM`` would run on. As pid 2 it behaves as it would anywhere. Pids inside the namespace
    are its own (``os.getpid()`` is 2), and so is ``/proc`` where the kernel lets the namespace's
    first process mount one in a mount namespace of its own (:func:`_own_proc`): it lists the
    namespace's processes only. Where it does not, ``/proc`` is the machine's and the report says so.

    Where the kernel refuses (no user namespaces for unprivileged users, a container's seccomp
    filter), nothing forks and the tool runs in this process as before.
    """
    libc = _libc()
    if libc is None:
        return "processes: not contained (no Linux namespaces on this system)"
    if libc.unshare(_CLONE_NEWPID) == 0:
        how = "new PID namespace"
    elif libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID) == 0:
        how = "new user and PID namespace"
    else:
        return f"processes: not contained ({os.strerror(ctypes.get_errno())})"
    # From here on this process cannot start a thread (the kernel refuses one whose children would
    # be in another PID namespace), so there is no going back to running the tool here: a failed
    # fork ends the tool process with its traceback in the run's log.
    report_read, report_write = os.pipe()
    init = os.fork()
    if init:
        os.close(report_write)
        _relay(init, report_read)
    os.close(report_read)
    proc = _init(libc, report_write)
    return f"processes: contained ({how}, {proc})"


def _own_proc(libc: ctypes.CDLL) -> str:
    """Mount a ``/proc`` of this PID namespace in a mount namespace of this process's own; returns
    what was achieved. Called by the namespace's first process, before the tool is forked."""
    if libc.unshare(_CLONE_NEWNS) != 0:
        return f"/proc is the machine's: {os.strerror(ctypes.get_errno())}"
    # private first: on a shared / the new mount would propagate back over the host's own /proc
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return f"/proc is the machine's: {os.strerror(ctypes.get_errno())}"
    if libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None) != 0:
        # a container that masks parts of its /proc forbids a fresh, unmasked one
        return f"/proc is the machine's: {os.strerror(ctypes.get_errno())}"
    return "own /proc"


def _relay(init: int, report: int) -> NoReturn:
    """Wait for the namespace's first process and end as the tool ended: the host sees this process."""
    _leave_the_channel()
    # a signal that ends this process ends the tool too (pid 1 dies with it): no traceback for it
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _, status = os.waitpid(init, 0)
    # Pid 1 is gone, and the namespace with it, so nothing holds the pipe's other end: this read
    # does not block. Empty when pid 1 was killed before the tool ended; then its own end is told.
    told = os.read(report, 32)
    _end_as(int(told) if told else status)


def _init(libc: ctypes.CDLL, report: int) -> str:
    """As the namespace's first process, mount the namespace's ``/proc`` (a procfs shows the PID
    namespace of the process that mounts it), run the tool as pid 2, which returns what
    :func:`_own_proc` achieved, then reap until it ends, tell the relay how it ended and exit, which
    ends the rest of the namespace."""
    libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    # The relay may have died before the line above took effect; the signal would never come. Its
    # pid means nothing here, but the pipe tells: no reader left is an error on the writing end.
    watch = select.poll()
    watch.register(report, select.POLLOUT)
    if any(events & select.POLLERR for _, events in watch.poll(0)):
        os._exit(1)
    proc = _own_proc(libc)
    tool = os.fork()
    if tool == 0:
        os.close(report)
        return proc
    _leave_the_channel()
    # Only SIGKILL from the host reaches pid 1; a Python handler would let the tool end its own run
    # by a SIGINT to pid 1 through a KeyboardInterrupt here.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:
        # orphans of the tool's children land here; reaping them as they come keeps the
        # namespace's process table clean, and the loop ends with the tool, not with them
        ended, status = os.waitpid(-1, 0)
        if ended == tool:
            break
    with contextlib.suppress(OSError):  # the relay is gone: nobody left to tell
        os.write(report, str(status).encode())
    os._exit(0)


def _leave_the_channel() -> None:
    """Give up this process's copies of the channel's ends: the tool's alone decide when it closes."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)


def _end_as(status: int) -> NoReturn:
    """End this process as the wait status ``status`` says another one ended: same code or signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        # no core file: this process did not fail, it passes on the tool's end
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep their action anyway
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # a signal that does not end a process by default
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


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


def drop_privileges() -> str:
    """Give up every capability this process holds and could pass on; returns what was achieved.

    The bounding set goes first (it needs ``CAP_SETPCAP``, dropped last): it caps what any later
    ``exec`` gains, even root's. Then the ambient set, then the effective, permitted and inheritable
    sets. A process that never held any (an ordinary user without a user namespace) cannot shrink
    its bounding set, and needs not: ``no_new_privs`` (set with Landlock) already keeps an ``exec``
    from gaining any.
    """
    libc = _libc()
    if libc is None:
        return "privileges: not dropped (no Linux capabilities on this system)"
    bounding_kept = False
    for cap in range(64):
        held = libc.prctl(_PR_CAPBSET_READ, cap, 0, 0, 0)
        if held < 0:  # past the last capability this kernel knows
            break
        if held and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            bounding_kept = True
            break
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    empty = (_CapData * _CAPABILITY_WORDS)()
    if libc.capset(ctypes.byref(header), empty) != 0:
        return f"privileges: not dropped ({os.strerror(ctypes.get_errno())})"
    held_now = (_CapData * _CAPABILITY_WORDS)()
    if libc.capget(ctypes.byref(header), held_now) != 0 or any(w.effective or w.permitted for w in held_now):
        return "privileges: not dropped (capabilities remain after dropping them)"
    if bounding_kept:
        return "privileges: none held"
    return "privileges: none (every capability dropped)"
