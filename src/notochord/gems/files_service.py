"""``space.files``: the host's view of what gems changed in the user's folders, and undoing a run.

Rules (P-FILE-21…26):

- A folder's file history is kept under the data directory, keyed by the folder's real location, so
  every spelling of a folder (relative, through a symlink) reaches the same history. A folder no gem
  ever changed has no history: :meth:`FilesService.history` gives an empty list and
  :meth:`FilesService.rollback` restores nothing; neither creates anything on disk.
- :meth:`FilesService.rollback` restores every file the run changed in that folder to its state
  before the run; a file changed since by another run, by the user or by any other program is left
  alone and reported as skipped. A second rollback of the same run restores nothing.
- Headless (no system trash, P-FILE-26): deletions of gems were permanent, but their history
  copies are restored all the same.

This is a thin host-side facade over :func:`~notochord.gems.api.files.file_changes` and
:func:`~notochord.gems.api.files.rollback_run`; it lives in ``gems`` because the history's location
is the gem folders' business, and ``files`` must not import ``gems``.
"""

from __future__ import annotations

import os
from pathlib import Path

from notochord.clock import Clock
from notochord.errors import FileError
from notochord.files.history import Change, RollbackReport
from notochord.gems.api.files import file_changes, rollback_run

__all__ = ["FilesService"]


class FilesService:
    """The file history of every folder gems changed, for one data directory.

    Example::

        files = FilesService(data_dir)
        for change in files.history(chat_folder, run_id="run-42"):
            print(change.op, change.display)
        report = files.rollback("run-42", conversation=chat_folder)
    """

    def __init__(self, data_dir: Path, *, headless: bool = False, clock: Clock | None = None) -> None:
        self._data_dir = Path(data_dir)
        self._headless = headless
        self._clock = clock

    def history(self, path: str | os.PathLike[str], *, run_id: str | None = None) -> list[Change]:
        """The recorded changes in a conversation or working folder, oldest first.

        Args:
            path: the folder (a conversation's folder, or the working folder chosen for a gem).
            run_id: only the changes of this run.

        Raises:
            FileError: ``path`` exists but is not a folder, or the history cannot be read.
        """
        return file_changes(self._data_dir, self._folder(path), run_id=run_id)

    def rollback(self, run_id: str, *, conversation: str | os.PathLike[str]) -> RollbackReport:
        """Undo what run ``run_id`` changed in ``conversation``, sparing files changed since (P-FILE-25).

        Raises:
            FileError: ``run_id`` is empty, ``conversation`` exists but is not a folder, or the
                history cannot be read.
        """
        if not isinstance(run_id, str) or not run_id.strip():
            raise FileError(f"a run id is needed to roll back, not {run_id!r}")
        return rollback_run(
            self._data_dir, self._folder(conversation), run_id, headless=self._headless, clock=self._clock
        )

    @staticmethod
    def _folder(path: str | os.PathLike[str]) -> Path:
        folder = Path(os.path.realpath(path))
        if folder.exists() and not folder.is_dir():
            raise FileError(
                f"{path} is a file; give the folder whose history to use",
                reason="history_folder_is_file",
                values={"path": str(path)},
            )
        return folder

    def __repr__(self) -> str:
        return f"<FilesService {self._data_dir}>"
