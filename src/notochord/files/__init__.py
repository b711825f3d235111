"""Files a gem may touch, their history, run folders and the gem's private storage.

- :mod:`~notochord.files.workspace`: ``workspace:`` and ``run:`` paths and the operations on them.
- :mod:`~notochord.files.history`: every change recorded, old versions kept, run rollback; with
  :mod:`~notochord.files.states` (a path's recorded state), :mod:`~notochord.files.restoring`
  (putting one path back), :mod:`~notochord.files.trash` and :mod:`~notochord.files.versions` (the
  saved versions, within a bound on their size).
- :mod:`~notochord.files.opening` and :mod:`~notochord.files.oserrors`: opening a name inside a
  checked folder, and an ``OSError`` in the words a gem gets.
- :mod:`~notochord.files.runs`: the run-folder lifecycle and step journal for retries.
- :mod:`~notochord.files.working_folders`: which folders may be chosen as a working folder.
- :mod:`~notochord.files.noreplace`: a rename that never replaces what is at its target.
- :mod:`~notochord.files.private`: a gem's encrypted private storage, on the fenced SQL connections
  of :mod:`~notochord.files.private_sql` (imported on their own, as they load SQLCipher and
  ``cryptography``).

The core is synchronous; the gem-facing ``ctx.files`` wraps it in async calls.
"""

from notochord.files.history import (
    VERSION_LIMIT,
    Change,
    FileHistory,
    FolderTrash,
    RollbackReport,
    Trash,
)
from notochord.files.runs import RunFolder, RunFolders
from notochord.files.working_folders import check_working_folder
from notochord.files.workspace import RUN_PREFIX, WORKSPACE_PREFIX, Entry, Workspace

__all__ = [
    "RUN_PREFIX",
    "VERSION_LIMIT",
    "WORKSPACE_PREFIX",
    "Change",
    "Entry",
    "FileHistory",
    "FolderTrash",
    "RollbackReport",
    "RunFolder",
    "RunFolders",
    "Trash",
    "Workspace",
    "check_working_folder",
]
