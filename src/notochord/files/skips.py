"""Why a rollback left a path alone: a stable code and its values, and the English sentence.

The code and values let each place that shows a reason say it in its own words (the console in the
reader's language); ``text`` is the sentence the command line prints, word for word as before codes
existed. A code is never renamed, and a reader that does not know a code shows ``text``.

Codes and their values (every value is text):

- ``state_unknown``: what the path held right after the change was not recorded.
- ``later_run_changed`` (``run``, ``path``) and ``later_run_moved`` (``run``, ``path``, ``to``):
  another run changed or moved it later; that run must be rolled back first.
- ``changed_since``: the path changed since, by the user or another program.
- ``move_origin_taken`` (``path``, ``to``): the place a move took it from is taken again.
- ``moved_changed_since`` and ``moved_folder_changed_since``: what a move put in place changed since.
- ``no_earlier_version``: no earlier version was kept.
- ``version_dropped`` (``setting``): one was kept, then dropped to keep the file history within the
  size that setting names.
- ``in_trash_no_trash`` (``location``): the earlier version is in the trash, and there is no trash here.
- ``in_trash_unavailable`` (``location``, ``detail``): it cannot be taken back out of the trash.
- ``history_copy_missing``: the history's copy of the earlier version is gone.
- ``folder_became_link``: a folder on the path was replaced by a link.
- ``not_put_back`` (``detail``): the system refused to put it back (``detail`` is its own words).
- ``other`` (``detail``): any other refusal, in English only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from notochord.errors import FileError

__all__ = ["CODES", "NotPutBackError", "SkipReason"]

CODES: Final = (
    "state_unknown",
    "later_run_changed",
    "later_run_moved",
    "changed_since",
    "move_origin_taken",
    "moved_changed_since",
    "moved_folder_changed_since",
    "no_earlier_version",
    "version_dropped",
    "in_trash_no_trash",
    "in_trash_unavailable",
    "history_copy_missing",
    "folder_became_link",
    "not_put_back",
    "other",
)
"""Every code a reason may carry, as listed above."""


@dataclass(frozen=True)
class SkipReason:
    """One path's reason for being left alone: ``code`` with ``values``, and ``text`` in English."""

    code: str
    text: str
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, code: str, text: str, **values: str) -> SkipReason:
        return cls(code=code, text=text, values=tuple(values.items()))


class NotPutBackError(FileError):
    """A path a rollback was allowed to undo could not be put back, and nothing changed at it:
    ``skip`` says why (its earlier version cannot be had, a link stands in its way), and ``reason``
    is its code, as every :class:`~notochord.errors.FileError` carries one."""

    def __init__(self, reason: SkipReason) -> None:
        super().__init__(reason.text, reason=reason.code, values=dict(reason.values))
        self.skip = reason
