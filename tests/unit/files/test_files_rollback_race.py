"""A folder swapped for a link while a rollback runs: P-FILE-01, P-FILE-25, OD-P06.

The rollback checks each path (it still holds what the run left there, reached without a link) and
then acts on it. A gem's tool process may swap a folder on that path for a link to anywhere in
between; the rollback must then act on nothing outside the conversation folder. It walks to each
path from the folder itself, never following a link, and leaves the path alone (skipped, with the
reason) when a link has appeared on the way.

The swap is made to happen right after the check: the history's check is wrapped, which is the only
way to hit the window between the two deterministically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from notochord.files import history as history_module
from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of the user's outside the conversation, with a file the run never touched."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's own notes, elsewhere")
    return folder


def _swap_after_the_check(
    monkeypatch: pytest.MonkeyPatch, conversation: Path, outside: Path, *, of: str = "docs/notes.txt"
) -> None:
    """Once the rollback has checked the path ``of``, ``docs`` becomes a link to ``outside``."""
    real: Callable[[Path, str], str | None] = history_module.path_state

    def check_then_swap(root: Path, rel: str) -> str | None:
        state = real(root, rel)
        docs = conversation / "docs"
        if rel == of and docs.is_dir() and not docs.is_symlink():
            docs.rename(conversation / "docs-moved")
            docs.symlink_to(outside)
        return state

    monkeypatch.setattr(history_module, "path_state", check_then_swap)


def test_rolling_back_a_created_file_never_takes_away_a_file_behind_a_link_swapped_in(
    ws: Workspace, history: FileHistory, conversation: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-01: the file of the same name outside stays where it is; the rollback skips the path."""
    ws.write("workspace:docs/notes.txt", "the gem's")
    _swap_after_the_check(monkeypatch, conversation, outside)

    report = history.rollback_run("run-1")

    assert (outside / "notes.txt").read_text() == "the user's own notes, elsewhere"
    assert (conversation / "docs-moved" / "notes.txt").read_text() == "the gem's"
    assert "workspace:docs/notes.txt" in report.skipped
    why = report.reason("workspace:docs/notes.txt")
    assert why is not None and "link" in why


def test_rolling_back_an_overwrite_never_writes_behind_a_link_swapped_in(
    ws: Workspace, history: FileHistory, conversation: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (conversation / "docs").mkdir()
    (conversation / "docs" / "notes.txt").write_text("before")
    ws.write("workspace:docs/notes.txt", "after")
    _swap_after_the_check(monkeypatch, conversation, outside)

    report = history.rollback_run("run-1")

    assert (outside / "notes.txt").read_text() == "the user's own notes, elsewhere"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]
    assert (conversation / "docs-moved" / "notes.txt").read_text() == "after"
    assert report.skipped == ("workspace:docs/notes.txt",)


def test_rolling_back_a_move_never_moves_anything_out_from_behind_a_link_swapped_in(
    ws: Workspace, history: FileHistory, conversation: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (conversation / "notes.txt").write_text("mine")
    ws.move("workspace:notes.txt", "workspace:docs/notes.txt")
    _swap_after_the_check(monkeypatch, conversation, outside)

    report = history.rollback_run("run-1")

    assert (outside / "notes.txt").read_text() == "the user's own notes, elsewhere"
    assert not (conversation / "notes.txt").exists()
    assert "workspace:notes.txt" in report.skipped


def test_rolling_back_a_folder_the_run_made_never_removes_one_behind_a_link_swapped_in(
    ws: Workspace, history: FileHistory, conversation: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "empty").mkdir()
    ws.mkdir("workspace:docs/empty")
    _swap_after_the_check(monkeypatch, conversation, outside, of="docs/empty")

    history.rollback_run("run-1")

    assert (outside / "empty").is_dir()
