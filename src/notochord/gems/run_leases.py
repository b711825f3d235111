"""Run leases: whether a run recorded as ``running`` still has a live process behind it.

The process that runs a run holds an exclusive ``flock`` on the run's lease file from before the
run is recorded ``running`` until after its end is recorded. The operating system drops that lock
when the process ends, however it ends (``SIGKILL``, a crash, a power cut), so a lease nobody holds
means nobody runs the run any more. A lock, unlike a process id, cannot be inherited by an unrelated
program that was given the same id later.

Rules:

- A lease file is ``<folder>/<digest of the run id>.lease``; the digest keeps any run id a safe
  file name.
- Whoever holds the lock on the file *at that path* speaks for the run. A holder and a prober both
  check, after locking, that the path still names the file they locked: the lease may have been
  removed, and made anew by a retry of the same run id, in between.
- A holder removes the file only after the run's end is recorded (:meth:`Lease.release` with
  ``remove=True``); a lease given up without that record is left for the next prober, so the run
  is still found abandoned.
- A prober that finds a lease free keeps it locked while its caller records the run as
  interrupted, then removes the file; a holder of the same run id waits for that moment.
- Locks are ``flock`` locks, which belong to one open file: a second open in the same process is
  refused like any other, so a listing in the process that runs the run sees it held. The
  descriptor is close-on-exec and a tool process is started without inherited descriptors, so a
  tool process that outlives its host does not keep the run alive.
- Where the platform has no ``flock``, nothing can be proven: every lease reads as held.

A gem's installed code has a lock of its own, ``<folder>/code-<digest of the gem id>.lock``: every
run of one of its tools shares it (:meth:`RunLeases.use_code`) from before it reads the manifest
until its process has ended, and an upgrade or uninstall takes it alone
(:meth:`RunLeases.change_code`) while it replaces or removes the code, so a running tool never has
its code swapped or removed under it. Either side waits a few seconds for the other, then gives up
with :class:`~notochord.errors.BusyError`: a run may last minutes, and an upgrade that waited that
long would look hung. An uninstall removes the lock file while it still holds it alone
(:meth:`CodeHold.release` with ``remove=True``). Whoever waited on the file it removed then locks a
file no path names any more, so every side checks, after locking, that the path still names the
file it locked, and otherwise opens the path again (making the file anew): two holders never lock
two different files.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import anyio

from notochord.errors import BusyError, GemError

__all__ = ["CodeHold", "Lease", "LeaseState", "RunLeases"]

_SUFFIX = ".lease"
# a prober holds a free lease only while it records one run; a holder waits at most this long for it
_WAIT_FOR_PROBER_S = 5.0
_RETRY_S = 0.01
# an upgrade or uninstall waits this long for the gem's runs to end before it is refused as busy
_WAIT_FOR_RUNS_S = 3.0
# a run waits this long for an upgrade (which may download the gem's resources) to finish
_WAIT_FOR_CHANGE_S = 10.0

try:
    import fcntl

    _FLOCK = True
except ImportError:  # no advisory locks on this platform (Windows)
    _FLOCK = False


class LeaseState(enum.Enum):
    """What a probe found."""

    HELD = "held"
    """A live process holds the lease, or nothing can be proven."""
    FREE = "free"
    """The lease file exists and no process holds it: its holder ended before the run did."""
    MISSING = "missing"
    """No lease file: the run was recorded elsewhere (another machine, an older version)."""


class Lease:
    """One run's lease, held by this process until :meth:`release`."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    def release(self, *, remove: bool) -> None:
        """Give the lease up; ``remove`` only once the run's end is recorded."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if remove:
                # still locked here, so no prober can mistake the run for abandoned in between
                with contextlib.suppress(OSError):
                    self.path.unlink()
        finally:
            os.close(fd)


class CodeHold:
    """A hold on the lock of one gem's installed code (shared by a run, alone by a change)."""

    def __init__(self, fd: int | None, path: Path | None = None) -> None:
        self._fd = fd
        self._path = path

    @property
    def held(self) -> bool:
        """Whether a lock is held (``False`` where nothing can be locked, or once released)."""
        return self._fd is not None

    def release(self, *, remove: bool = False) -> None:
        """Give the hold up; ``remove`` (a hold taken alone, for a gem no longer installed) also
        removes the lock file, while it is still held, so nobody else holds the file removed."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if remove and self._path is not None:
                with contextlib.suppress(OSError):
                    self._path.unlink()
        finally:
            os.close(fd)

    def __enter__(self) -> CodeHold:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class RunLeases:
    """The lease files of one space's runs, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, run_id: str) -> Path:
        return self.folder / (hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:40] + _SUFFIX)

    def hold(self, run_id: str) -> Lease:
        """Take the lease of ``run_id`` for this process.

        Raises:
            GemError: another live process runs a run with this id, or the lease file cannot be made.
        """
        path = self.path(run_id)
        if not _FLOCK:
            return Lease(path, None)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GemError(f"cannot make the folder of run leases {self.folder}: {exc.strerror}") from exc
        deadline = time.monotonic() + _WAIT_FOR_PROBER_S
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise GemError(f"cannot make the lease file of run {run_id} in {self.folder}: {exc.strerror}") from exc
            try:
                locked = _try_lock(fd)
            except OSError as exc:
                os.close(fd)
                raise GemError(f"cannot lock the lease file of run {run_id} in {self.folder}: {exc.strerror}") from exc
            if locked:
                if _names(path, fd):
                    return Lease(path, fd)
                os.close(fd)  # a prober removed the file we locked; lock the one at the path now
                continue
            os.close(fd)
            if time.monotonic() >= deadline:
                raise GemError(
                    f"run {run_id} is already running in another process; wait for it to end, "
                    "or start this run under another run id"
                )
            time.sleep(_RETRY_S)

    @contextlib.contextmanager
    def probe(self, run_id: str) -> Iterator[LeaseState]:
        """Whether a live process holds the lease of ``run_id``.

        While the block runs after :attr:`LeaseState.FREE`, the caller holds the lease, so no retry
        of the run can start in between; the file is removed when the block ends.
        """
        path = self.path(run_id)
        if not _FLOCK:
            yield LeaseState.HELD
            return
        try:
            # read-write: on NFS an exclusive flock needs a file open for writing
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            yield LeaseState.MISSING
            return
        except OSError:
            yield LeaseState.HELD  # cannot be opened (a read-only vault): nothing proven
            return
        try:
            try:
                locked = _try_lock(fd) and _names(path, fd)
            except OSError:
                locked = False  # a file system without locks: nothing proven
            if not locked:
                # held; or its holder ended the run and removed it, or a retry made it anew, just now
                yield LeaseState.HELD
                return
            yield LeaseState.FREE
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)

    def code_lock_path(self, gem_id: str) -> Path:
        return self.folder / f"code-{hashlib.sha256(gem_id.encode('utf-8')).hexdigest()[:40]}.lock"

    async def use_code(self, gem_id: str) -> CodeHold:
        """Share the lock of ``gem_id``'s installed code for one run, until :meth:`CodeHold.release`.

        Waits without holding a thread, so a run cancelled while it waits holds nothing.

        Raises:
            BusyError: the gem's code is being upgraded or removed and was not done in time.
        """
        deadline = time.monotonic() + _WAIT_FOR_CHANGE_S
        while (hold := self._lock_code(gem_id, shared=True, wait=0)) is None:
            if time.monotonic() >= deadline:
                raise BusyError(
                    f"gem {gem_id} is being upgraded or uninstalled; run it again in a moment",
                    retry_after=max(1, round(_WAIT_FOR_CHANGE_S)),
                )
            await anyio.sleep(_RETRY_S * 5)
        return hold

    def change_code(self, gem_id: str, *, running: Callable[[], Sequence[str]]) -> CodeHold:
        """Take the lock of ``gem_id``'s installed code alone, to replace or remove it; ``running``
        names the gem's runs in progress for the refusal.

        Raises:
            BusyError: a run of the gem (named) did not end in time; nothing was changed.
        """
        hold = self._lock_code(gem_id, shared=False, wait=_WAIT_FOR_RUNS_S)
        if hold is None:
            names = ", ".join(running()) or "one started in another process"
            raise BusyError(
                f"gem {gem_id} is running (run {names}); its code cannot change under a running tool, so "
                "nothing was changed. Try again once the run has ended, or stop it first",
                retry_after=max(1, round(_WAIT_FOR_RUNS_S)),
            )
        return hold

    def try_change_code(self, gem_id: str) -> CodeHold | None:
        """Take the lock of ``gem_id``'s installed code alone without waiting, or ``None`` when
        anybody holds it or it cannot be locked at all (nothing is guarded then)."""
        hold = self._lock_code(gem_id, shared=False, wait=0)
        if hold is None or not hold.held:
            return None
        return hold

    def _lock_code(self, gem_id: str, *, shared: bool, wait: float) -> CodeHold | None:
        """The hold, or ``None`` when the other side still held the lock after ``wait`` seconds.

        Where nothing can be locked (no ``flock``, a read-only or lockless file system), nothing can
        be guarded either: the hold is an empty one rather than a refusal of all work.
        """
        if not _FLOCK:
            return CodeHold(None)
        path = self.code_lock_path(gem_id)
        deadline = time.monotonic() + wait
        while True:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                return CodeHold(None)
            try:
                while not _try_lock(fd, shared=shared):
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        return None
                    time.sleep(_RETRY_S * 5)
            except OSError:
                os.close(fd)
                return CodeHold(None)
            if _names(path, fd):
                return CodeHold(fd, path)
            # an uninstall removed the file this one waited on: the lock that counts is the path's
            os.close(fd)


def _try_lock(fd: int, *, shared: bool = False) -> bool:
    """Lock ``fd`` without waiting; ``False`` when another open file holds the lock.

    Raises:
        OSError: the file system cannot lock at all.
    """
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        on_disk = path.stat()
    except OSError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)
