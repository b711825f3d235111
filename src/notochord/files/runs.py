"""Run folders: where one run of a tool, SOP or agent leaves its files (P-FILE-03…15, OD-P08).

Lifecycle:

- :meth:`RunFolders.start` creates ``<base>/runs/<name>-<YYYYMMDD-HHMMSS>/`` with an empty ``tmp/``.
  ``base`` is the conversation's working directory (a run called from a chat) or the gem's own data
  folder (a scheduled or event-triggered SOP). The time is the clock's *local* time; characters that
  are unsafe in a path (separators, ``:*?"<>|``, control characters, white space) become ``-`` and
  leading dots are dropped; an existing folder of the same name gets ``-2``, ``-3``, … appended.
- :meth:`RunFolder.finish` ends the run: ``tmp/`` is deleted after ``success`` and kept after
  ``failure`` or ``cancelled`` (P-FILE-09); a folder with no file left in it is deleted (P-FILE-11).
  The caller then receives ``{"output": <value>, "folder": "runs/…"}`` when files remain (``"reply"``
  instead of ``"output"`` for an exposed agent, P-FILE-14) and the value unchanged otherwise.
- Retries (P-FILE-10): a retry reruns from the start in the *same* folder
  (:meth:`RunFolders.resume`). :meth:`RunFolder.step` runs a named step once: its JSON result is
  written to the step journal ``.steps.json`` in the run folder, and a retry gets the recorded result
  back instead of running the step again. The journal's name starts with ``.``, so a gem never sees
  it. It is removed after a successful run; after a failure it is kept while it records a completed
  step, even when no other file is left, because the retry depends on it.

Nothing here records file history: these are the platform's own actions, not a gem's changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from notochord.clock import Clock
from notochord.errors import ClosedError, FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.full import disk_full

__all__ = ["JOURNAL_NAME", "Outcome", "RunFolder", "RunFolders", "safe_run_name"]

Outcome = Literal["success", "failure", "cancelled"]
JOURNAL_NAME = ".steps.json"
RUNS_DIR = "runs"
_MAX_NAME = 64
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
"""The largest step journal read back; the tool process could otherwise grow it without bound."""
_JOURNAL_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|\s]+')

T = TypeVar("T")


def safe_run_name(name: str) -> str:
    """``name`` with path-unsafe characters replaced by ``-`` (runs collapsed), never hidden or empty."""
    # Leading dots and dashes go entirely, so the result can never be hidden or start with "..".
    cleaned = _UNSAFE.sub("-", name).lstrip(".-").rstrip("-")
    return cleaned[:_MAX_NAME].rstrip("-") or "run"


class RunFolders:
    """Factory for run folders under a base folder."""

    @staticmethod
    def start(base: Path, name: str, *, clock: Clock) -> RunFolder:
        """Create a fresh run folder ``runs/<name>-<time>[-N]/`` with ``tmp/`` inside."""
        stamp = clock.now().astimezone(clock.tz).strftime("%Y%m%d-%H%M%S")
        stem = f"{safe_run_name(name)}-{stamp}"
        try:
            if not base.is_dir():
                raise FileNotFoundInWorkspaceError(f"the base folder {base} does not exist", path=str(base))
            runs = base / RUNS_DIR
            runs.mkdir(exist_ok=True)
            counter = 1
            while True:
                candidate = runs / (stem if counter == 1 else f"{stem}-{counter}")
                try:
                    candidate.mkdir()
                except FileExistsError:
                    counter += 1
                    continue
                break
            (candidate / "tmp").mkdir()
        except OSError as exc:
            full = disk_full(exc, f"a run folder in {base}")
            raise full or FileError(f"could not create a run folder in {base}: {exc.strerror}") from exc
        return RunFolder(base, candidate)

    @staticmethod
    def resume(base: Path, folder: str) -> RunFolder:
        """Reopen the folder of an earlier run (``folder`` as returned, ``runs/…``) for a retry."""
        parts = Path(folder).parts
        if len(parts) != 2 or parts[0] != RUNS_DIR or parts[1].startswith(".") or parts[1] in ("..", "."):
            raise FilePermissionError(f"{folder} is not a run folder (expected runs/<name>)", path=folder)
        path = base / RUNS_DIR / parts[1]
        if path.is_symlink() or not path.is_dir():
            raise FileNotFoundInWorkspaceError(f"the run folder {folder} does not exist", path=folder)
        with contextlib.suppress(FileExistsError, OSError):
            (path / "tmp").mkdir()
        return RunFolder(base, path)


class RunFolder:
    """One run's folder. Use :attr:`path` as the run's ``run:`` root; end with :meth:`finish`."""

    def __init__(self, base: Path, path: Path) -> None:
        self.base = base
        self.path = path
        self._finished = False

    @property
    def relative(self) -> str:
        """The folder relative to the base, as given to the caller: ``runs/<name>-<time>``."""
        return self.path.relative_to(self.base).as_posix()

    @property
    def tmp(self) -> Path:
        return self.path / "tmp"

    # -- steps -------------------------------------------------------------------------------

    def is_done(self, key: str) -> bool:
        """Whether step ``key`` completed in this run or an earlier try of it."""
        return key in self._journal()

    def step(self, key: str, action: Callable[[], T]) -> T:
        """Run ``action`` unless step ``key`` already succeeded; return its (recorded) result.

        The result must be JSON-serialisable: a retry gets back its JSON form (a tuple comes back
        as a list). A step that raises is not recorded, so the retry runs it again.

        Example::

            pages = run.step("download", lambda: fetch_pages(urls))
            run.step("summarise", lambda: write_summary(pages))
        """
        self._check_open()
        journal = self._journal()
        if key in journal:
            return cast(T, journal[key])
        result = action()
        journal[key] = result
        try:
            text = json.dumps(journal, ensure_ascii=False, allow_nan=False)
            # a lone surrogate (half of a UTF-16 pair) dumps, but no UTF-8 file can hold it
            text.encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise FileError(f"the result of step {key!r} is not JSON-serialisable, or holds a lone surrogate") from exc
        self._write_journal(text)
        return result

    def _journal(self) -> dict[str, Any]:
        # The tool process may write its run folder directly: the journal may have been replaced by
        # a named pipe (opening it would wait for ever), a link to a file elsewhere, or gigabytes.
        try:
            fd = os.open(self.path / JOURNAL_NAME, _JOURNAL_READ)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise FileError(f"the step journal of {self.relative} is damaged ({exc.strerror})") from exc
        try:
            with os.fdopen(fd, "rb") as stream:
                info = os.fstat(stream.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_JOURNAL_BYTES:
                    raise FileError(f"the step journal of {self.relative} is damaged (not a file of its size)")
                text = stream.read(MAX_JOURNAL_BYTES + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FileError(f"cannot read the step journal of {self.relative}") from exc
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise FileError(f"the step journal of {self.relative} is damaged") from exc
        if not isinstance(data, dict):
            raise FileError(f"the step journal of {self.relative} is damaged")
        return data

    def _write_journal(self, text: str) -> None:
        tmp = self.path / f".steps-{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path / JOURNAL_NAME)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            full = disk_full(exc, f"the step journal of {self.relative}")
            raise full or FileError(f"cannot write the step journal of {self.relative}: {exc.strerror}") from exc

    # -- finishing ---------------------------------------------------------------------------

    def finish(self, outcome: Outcome, output: object, *, agent: bool = False) -> object:
        """End the run and shape its result (P-FILE-09, 11, 12, 13, 14).

        Returns ``{"output": output, "folder": "runs/…"}`` (``"reply"`` when ``agent``) if files
        remain in the folder, else ``output`` unchanged.
        """
        if outcome not in ("success", "failure", "cancelled"):
            raise FileError(f"unknown run outcome {outcome!r} (success, failure or cancelled)")
        self._check_open()
        self._finished = True
        try:
            if outcome == "success":
                _remove_tree(self.tmp)
                _remove_tree(self.path / JOURNAL_NAME)
            keep_journal = outcome != "success" and self._has_journal()
            if not keep_journal and not _has_files(self.path):
                shutil.rmtree(self.path)
                with contextlib.suppress(OSError):
                    (self.base / RUNS_DIR).rmdir()
                return output
        except OSError as exc:
            raise FileError(f"could not tidy the run folder {self.relative}: {exc.strerror}") from exc
        if not _has_files(self.path):
            return output
        return {"reply" if agent else "output": output, "folder": self.relative}

    def _has_journal(self) -> bool:
        """Whether a usable journal records a completed step; a damaged one cannot serve a retry."""
        try:
            return bool(self._journal())
        except FileError:
            return False

    def _check_open(self) -> None:
        if self._finished:
            raise ClosedError(f"the run folder {self.relative} was finished; start or resume a run")


def _remove_tree(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        # the tool may have put a link, a file or a pipe where tmp/ was: it goes all the same
        path.unlink()


def _has_files(folder: Path) -> bool:
    """Whether anything but folders and hidden bookkeeping (the journal) is left."""
    return any(not name.startswith(".") for _top, _dirs, files in os.walk(folder) for name in files)
