"""The Runs pages as data: every gem's runs a page at a time, and one run with what it changed.

A run's page lists its knowledge changes (``space.changes``, undone together by "Undo this run")
and the file changes it made in its conversation's folder (``space.files.history``, restored by
"Roll back its files", P-FILE-21, P-FILE-25). A run started without a conversation changed no
conversation's files, so it has no file changes to show or roll back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from notochord.access.sentences import Lang
from notochord.app import Space
from notochord.clock import iso_utc
from notochord.console.forms import FieldValueError, shown, whole_number
from notochord.console.i18n import LABELS, text
from notochord.console.refusal_words import refusal
from notochord.console.views.changes import ChangeRow, change_row, gem_choices
from notochord.errors import FileError
from notochord.files.history import RollbackReport, SkipReason
from notochord.gems.runner import RunRecord

__all__ = [
    "CHANGES_SHOWN",
    "GEM_RUNS_SHOWN",
    "PAGE_SIZE",
    "FileChangeRow",
    "RunItem",
    "RunPage",
    "RunsPage",
    "gem_runs",
    "parse_page",
    "run_page",
    "runs_page",
    "skipped_paths",
]

PAGE_SIZE: Final = 25
GEM_RUNS_SHOWN: Final = 5
CHANGES_SHOWN: Final = 100
_MAX_PAGE: Final = 1000
_STATUSES: Final = frozenset({"running", "succeeded", "failed", "timeout", "cancelled", "interrupted"})
_GEM_ID: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class RunItem:
    id: str
    gem_id: str
    tool: str | None
    status: str
    status_key: str | None
    """The label key of the status, ``None`` for a status this console does not know (shown as is)."""
    started_at: str
    finished_at: str | None
    conversation: str | None


@dataclass(frozen=True)
class RunsPage:
    runs: list[RunItem]
    gem: str | None
    page: int
    has_newer: bool
    has_older: bool
    gems: list[tuple[str, str]]


@dataclass(frozen=True)
class FileChangeRow:
    op: str
    path: str
    to: str | None
    at: str
    status: str


@dataclass(frozen=True)
class RunPage:
    run: RunItem
    error: str | None
    changes: list[ChangeRow]
    more_changes: bool
    undoable: int
    files: list[FileChangeRow]
    rollbackable: int
    files_problem: str | None = None
    """Why the file history could not be read (the folder became a file, say), in the page's language, or ``None``."""
    gem_installed: bool = True
    """Whether the run's gem is still installed: an uninstalled gem's runs stay, its page does not."""


def parse_page(text: str) -> int:
    """A page number from a query string (blank: 1).

    Raises:
        FieldValueError: not a whole number from 1 to 1000.
    """
    text = text.strip() or "1"
    page = whole_number(text)
    if page is None or not 1 <= page <= _MAX_PAGE:
        raise FieldValueError("refused_page", value=shown(text), max=_MAX_PAGE)
    return page


def _item(record: RunRecord) -> RunItem:
    return RunItem(
        id=record.id,
        gem_id=record.gem_id,
        tool=record.tool,
        status=record.status,
        status_key=f"run_status_{record.status}" if record.status in _STATUSES else None,
        started_at=record.started_at,
        finished_at=record.finished_at,
        conversation=record.conversation,
    )


def runs_page(space: Space, *, gem: str | None, page: int) -> RunsPage:
    """One page of runs, newest first; only ``gem``'s when given."""
    gem = gem if gem and _GEM_ID.match(gem) else None
    # one more than the page holds says whether an older page exists
    found = space.gems.runner.list(gem_id=gem, limit=page * PAGE_SIZE + 1)
    start = (page - 1) * PAGE_SIZE
    return RunsPage(
        runs=[_item(r) for r in found[start : start + PAGE_SIZE]],
        gem=gem,
        page=page,
        has_newer=page > 1,
        has_older=len(found) > start + PAGE_SIZE,
        gems=gem_choices(space, gem),
    )


def gem_runs(space: Space, gem_id: str) -> tuple[list[RunItem], bool]:
    """The gem's latest runs for its page, and whether it has more."""
    found = space.gems.runner.list(gem_id=gem_id, limit=GEM_RUNS_SHOWN + 1)
    return [_item(r) for r in found[:GEM_RUNS_SHOWN]], len(found) > GEM_RUNS_SHOWN


def run_page(space: Space, run_id: str, *, lang: Lang) -> RunPage:
    """The run's page, its words in ``lang``; raises ``GemNotFoundError`` when the space has no such run."""
    record = space.gems.runner.get(run_id)
    found = space.changes.list(run_id=run_id, limit=CHANGES_SHOWN + 1)
    rows = [change_row(c) for c in found[:CHANGES_SHOWN]]
    files: list[FileChangeRow] = []
    problem = None
    if record.conversation:
        try:
            history = space.files.history(record.conversation, run_id=run_id)
        except FileError as unreadable:
            history, problem = [], refusal(unreadable, lang)
        files = [
            FileChangeRow(op=c.op, path=c.display, to=c.dest_display, at=iso_utc(c.at), status=c.status)
            for c in history
        ]
    error = record.error.get("message") if isinstance(record.error, dict) else None
    return RunPage(
        run=_item(record),
        error=str(error) if error is not None else None,
        changes=rows,
        more_changes=len(found) > CHANGES_SHOWN,
        undoable=sum(1 for r in rows if r.can_undo),
        files=files,
        rollbackable=sum(1 for f in files if f.status == "applied"),
        files_problem=problem,
        gem_installed=any(gem.id == record.gem_id for gem in space.gems.list()),
    )


def _skip_sentence(reason: SkipReason, lang: Lang) -> str:
    key = f"skip_{reason.code}"
    values = dict(reason.values)
    try:
        return text(key, lang, **values) if key in LABELS else reason.text
    except KeyError:
        # a code whose values changed since these words were written: its English still says why
        return reason.text


def skipped_paths(report: RollbackReport, lang: Lang) -> list[tuple[str, str]]:
    """Each path a rollback left alone with why, in ``lang``; a reason of a code this console has no
    words for (or ``other``) keeps its English sentence."""
    return [(path, _skip_sentence(reason, lang)) for path, reason in report.skip_reasons]
