"""``ctx.files``: the conversation folder and the run folder, for one run of one gem.

Roots, decided afresh on every call (P-FILE-01, P-FILE-27, P-FILE-29):

- ``workspace:`` is the conversation folder the run was called from. Without a conversation it is
  the working folder the user chose for the gem, but only for a run registered as scheduled or
  event-triggered (:func:`start_run` with ``scheduled=True``), and only while that folder still
  passes the rules of P-FILE-31. Otherwise there is no ``workspace:`` and every use of it is
  ``E_PERM_DENIED``.
- ``run:`` (and a path without prefix) is the folder of the current run, registered by
  :func:`start_run`; none before that.

The path rules, dotfiles and race checks are :class:`~notochord.files.workspace.Workspace`'s. Every
change is recorded in the file history of the ``workspace:`` root (of the run folder's base when
there is none) with the run id and the actor ``gem:<id>`` (P-FILE-21). The history is kept under
the data directory, never inside the folder, so no gem can read or change it.

A tool reads a file of up to :data:`MAX_READ_BYTES`; a larger one is refused before it is read
(it would not fit the channel to the tool process, and would sit in notochord's memory whole).
Pipes, sockets and devices are never reported as files: ``list`` leaves them out and every other
call refuses them, without waiting on them.

Results are plain data: ``list`` and ``stat`` give ``{"name", "kind", "size", "modified"}`` with
``kind`` ``"file"`` or ``"dir"`` and nothing else, ``name`` UTF-8 text the gem can pass back, and
``modified`` as an ISO 8601 UTC string. Every method is a coroutine; the file work runs in a worker
thread.

The host side also finds here :func:`start_run` (a run folder around one run, P-FILE-03…14),
:func:`rollback_run` (undo a run's changes, P-FILE-25) and :func:`file_changes` (the history).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from notochord.clock import Clock, SystemClock, iso_utc
from notochord.errors import FileError, FilePermissionError
from notochord.files.history import Change, FileHistory, FolderTrash, HistoryUsage, RollbackReport
from notochord.files.runs import Outcome, RunFolder, RunFolders
from notochord.files.workspace import WORKSPACE_PREFIX, Entry, Workspace
from notochord.gems.context import CapabilityRequest
from notochord.gems.folders import GemFolders, history_dir, trash_dir
from notochord.knowledge.arguments import shown

__all__ = [
    "MAX_READ_BYTES",
    "FilesApi",
    "RunHandle",
    "file_changes",
    "history_usage",
    "make_files",
    "rollback_run",
    "start_run",
]

T = TypeVar("T")

MAX_READ_BYTES = 40 * 1024 * 1024
"""The largest file a tool reads in one call: its bytes cross to the tool process in one channel
message, as base64 (a third more), within the channel's 64 MB."""


class FilesApi:
    """``ctx.files`` of one run. Paths are ``workspace:<relative>`` or ``run:<relative>``."""

    __slots__ = ("_clock", "_conversation", "_folders", "_gem_id", "_run_id", "_working")

    def __init__(
        self,
        *,
        gem_id: str,
        run_id: str,
        conversation: Path | None,
        working_folder: Path | None,
        folders: GemFolders,
        clock: Clock,
    ) -> None:
        self._gem_id = gem_id
        self._run_id = run_id
        self._conversation = conversation
        self._working = working_folder
        self._folders = folders
        self._clock = clock

    def __repr__(self) -> str:
        return f"<ctx.files gem={self._gem_id} run={self._run_id}>"

    async def read(self, path: str) -> bytes:
        """The bytes of a file, up to :data:`MAX_READ_BYTES`. E_NOT_FOUND for a missing or hidden file."""
        return await self._call(lambda ws: ws.read(path, max_bytes=MAX_READ_BYTES), path)

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The text of a file in ``encoding`` (a text encoding Python knows: ``utf-8``, ``latin-1``, …)."""
        codec = _text_encoding(encoding)
        data = await self._call(lambda ws: ws.read(path, max_bytes=MAX_READ_BYTES), path)
        try:
            return data.decode(codec)
        except UnicodeError:  # every codec's refusal of these bytes, not only UnicodeDecodeError
            raise FileError(f"{path} is not {codec} text") from None

    readText = read_text  # noqa: N815  (the seed's name)

    async def write(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (text is written as UTF-8); the old version is kept (P-FILE-22)."""
        if not isinstance(data, bytes | bytearray | memoryview | str):
            raise FileError(f"{path}: write takes text or bytes, not {type(data).__name__}")
        payload = data if isinstance(data, str) else bytes(data)
        await self._call(lambda ws: ws.write(path, payload), path)

    async def list(self, path: str) -> list[dict[str, Any]]:
        """The entries of a folder, sorted by name; hidden entries are left out (P-FILE-19/20)."""
        return await self._call(lambda ws: [_plain(e) for e in ws.list(path)], path)

    async def stat(self, path: str) -> dict[str, Any]:
        """A file's or folder's entry; E_FILE for a pipe, socket or device, which is neither."""
        return await self._call(lambda ws: _plain(ws.stat(path)), path)

    async def delete(self, path: str) -> None:
        """Delete a file (to the trash, with a copy in the history, P-FILE-23) or an empty folder."""
        await self._call(lambda ws: ws.delete(path), path)

    async def move(self, src: str, dst: str) -> None:
        """Rename; E_EXISTS when ``dst`` exists (P-FILE-24). May publish from ``run:`` to ``workspace:``."""
        await self._call(lambda ws: ws.move(src, dst), src, dst)

    async def mkdir(self, path: str) -> None:
        await self._call(lambda ws: ws.mkdir(path), path)

    # -- internals ---------------------------------------------------------------------------

    async def _call(self, action: Callable[[Workspace], T], *paths: str) -> T:
        for path in paths:
            if not isinstance(path, str):
                raise FileError(f"a path must be a string like 'workspace:notes.txt', not {shown(path)}")
        return await anyio.to_thread.run_sync(lambda: self._run(action, paths))

    def _run(self, action: Callable[[Workspace], T], paths: tuple[str, ...]) -> T:
        run = self._folders.run(self._gem_id, self._run_id)
        run_root = run.folder.path if run is not None else None
        workspace = self._workspace_root(scheduled=run is not None and run.scheduled, paths=paths)
        history_root = workspace or (run.folder.base if run is not None else None)
        if history_root is None:
            raise FilePermissionError(
                f"{paths[0]}: this call has no conversation folder and no run folder (it was not started "
                "from a conversation, and no working folder is chosen on the gem's page)",
                path=paths[0],
            )
        history = self._folders.history(history_root, clock=self._clock)
        try:
            workspace_api = Workspace(
                workspace,
                history=history,
                actor=f"gem:{self._gem_id}",
                run_id=self._run_id,
                run_root=run_root,
            )
            return action(workspace_api)
        finally:
            history.close()

    def _workspace_root(self, *, scheduled: bool, paths: tuple[str, ...]) -> Path | None:
        if self._conversation is not None:
            real = Path(os.path.realpath(self._conversation))
            if self._folders.data_dir.resolve().is_relative_to(real):
                # Its history, the trash and every gem's storage would be inside reach.
                _refuse_workspace(paths, "the conversation folder contains notochord's data directory")
                return None
            return real
        if not scheduled or self._working is None:
            return None
        try:
            return self._folders.check_working_folder(self._working)
        except FileError as exc:
            # The folder was valid when chosen; refuse rather than follow wherever it leads now.
            _refuse_workspace(
                paths,
                f"the working folder chosen for this gem can no longer be used ({exc.message}); "
                "choose another on the gem's page",
            )
            return None


def _text_encoding(encoding: object) -> str:
    """The name of the text encoding ``encoding`` names, or a refusal that says what to give."""
    refused = FileError(
        f"read_text needs the name of a text encoding such as 'utf-8' or 'latin-1', not {shown(encoding)}"
    )
    if not isinstance(encoding, str):
        raise refused
    try:
        codec = codecs.lookup(encoding)
    except (LookupError, ValueError):  # unknown, or a name holding NUL or a lone surrogate
        raise refused from None
    # a codec from bytes to bytes ('hex', 'zlib') or one that decodes nothing ('undefined') is no text encoding
    if not getattr(codec, "_is_text_encoding", True) or codec.name == "undefined":
        raise refused
    return codec.name


def _refuse_workspace(paths: tuple[str, ...], why: str) -> None:
    """No ``workspace:`` for this call; an error if the call uses it."""
    used = next((p for p in paths if p.startswith(WORKSPACE_PREFIX)), None)
    if used is not None:
        raise FilePermissionError(f"{used}: {why}", path=used)


def _plain(entry: Entry) -> dict[str, Any]:
    return {"name": entry.name, "kind": entry.kind, "size": entry.size, "modified": iso_utc(entry.modified)}


def make_files(request: CapabilityRequest) -> FilesApi:
    """The ``files`` capability factory: register as ``space.gems.factories["files"]``."""
    folders = request.folders()
    working = folders.working_folder(request.gem_id, core=request.core) if request.conversation is None else None
    return FilesApi(
        gem_id=request.gem_id,
        run_id=request.run_id,
        conversation=request.conversation,
        working_folder=working,
        folders=folders,
        clock=request.clock,
    )


# -- run folders ------------------------------------------------------------------------------


@dataclass
class RunHandle:
    """One run's folder as the runtime holds it. End it with :meth:`finish`.

    A handle that joined the folder of a run already in progress (a tool called from a SOP,
    P-FILE-06) does not own it: its :meth:`finish` passes the output through and leaves the folder
    to the run that created it.
    """

    folders: GemFolders
    gem_id: str
    run_id: str
    folder: RunFolder
    owner: bool

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def relative(self) -> str:
        """``runs/<name>-<time>``, relative to the conversation's working directory (P-FILE-12)."""
        return self.folder.relative

    def step(self, key: str, action: Callable[[], T]) -> T:
        """Run a named step once across retries of this run (P-FILE-10)."""
        return self.folder.step(key, action)

    def finish(self, outcome: Outcome, output: object, *, agent: bool = False) -> object:
        """End the run: ``{"output": …, "folder": "runs/…"}`` when files remain, else ``output``.

        ``tmp/`` goes after ``success`` and stays after ``failure`` or ``cancelled``; an empty folder
        goes (P-FILE-09, 11…14). ``agent`` makes the key ``"reply"`` (P-FILE-14).
        """
        if not self.owner:
            return output
        try:
            return self.folder.finish(outcome, output, agent=agent)
        finally:
            self.folders.release_run(self.gem_id, self.run_id)


def start_run(
    request: CapabilityRequest, *, name: str, scheduled: bool = False, resume: str | None = None
) -> RunHandle:
    """Create (or, for a retry, reopen) the run folder of ``request``'s run.

    Args:
        request: the run's capability request (the same gem id and run id as its ``ctx``).
        name: the SOP's, tool's or agent's name; unsafe characters become ``-`` (OD-P08).
        scheduled: a schedule or an event started the run; without a conversation, its
            ``workspace:`` is then the gem's working folder (P-FILE-29).
        resume: ``runs/<name>-<time>`` of an earlier try, to retry in the same folder (P-FILE-10).

    The folder is ``runs/<name>-<time>/`` in the conversation (P-FILE-03/04) or, with no
    conversation, in the gem's own folder (P-FILE-05). A run id that already has a folder shares it
    (P-FILE-06).
    """
    folders = request.folders()
    existing = folders.run(request.gem_id, request.run_id)
    if existing is not None:
        return RunHandle(folders, request.gem_id, request.run_id, existing.folder, owner=False)
    if request.conversation is not None:
        base = request.conversation
    else:
        base = folders.prepare(request.gem_id, key=request.registry.key(request.gem_id, "storage"))
    folder = (
        RunFolders.resume(base, resume) if resume is not None else RunFolders.start(base, name, clock=request.clock)
    )
    folders.register_run(request.gem_id, request.run_id, folder, scheduled=scheduled and request.conversation is None)
    return RunHandle(folders, request.gem_id, request.run_id, folder, owner=True)


# -- history, for the host --------------------------------------------------------------------


def _open_history(data_dir: Path, folder: Path, *, headless: bool, clock: Clock | None) -> FileHistory | None:
    store = history_dir(data_dir, folder)
    if not store.is_dir():
        return None
    return FileHistory(
        store,
        clock=clock or SystemClock(),
        trash=None if headless else FolderTrash(trash_dir(data_dir)),
    )


def file_changes(data_dir: Path, folder: Path, *, run_id: str | None = None) -> list[Change]:
    """The recorded changes to ``folder`` (a conversation or working folder), oldest first."""
    history = _open_history(data_dir, folder, headless=True, clock=None)
    if history is None:
        return []
    try:
        return history.changes(run_id)
    finally:
        history.close()


def history_usage(data_dir: Path, folder: Path, *, max_bytes: int) -> HistoryUsage:
    """How much space the saved versions in ``folder``'s history take, against ``max_bytes``."""
    store = history_dir(data_dir, folder)
    if not store.is_dir():
        return HistoryUsage(used_bytes=0, max_bytes=max_bytes, versions=0, dropped=0)
    history = FileHistory(store, clock=SystemClock(), trash=None, max_bytes=max_bytes)
    try:
        return history.usage()
    finally:
        history.close()


def rollback_run(
    data_dir: Path, conversation: Path, run_id: str, *, headless: bool = False, clock: Clock | None = None
) -> RollbackReport:
    """Restore the files run ``run_id`` changed in ``conversation`` to their earlier state (P-FILE-25).

    Files changed since by another run or outside notochord are left alone and reported as skipped.
    """
    history = _open_history(data_dir, conversation, headless=headless, clock=clock)
    if history is None:
        return RollbackReport(run_id=run_id, restored=(), skipped=())
    try:
        return history.rollback_run(run_id)
    finally:
        history.close()
