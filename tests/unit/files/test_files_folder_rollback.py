"""Rolling back a run that moved a folder: P-FILE-21, P-FILE-24, P-FILE-25.

Rollback of a change undoes that change only. A folder moved by a run goes back only while it holds
exactly what the move put there; once another run, the user or any program has added, removed or
changed something inside it, the move is left alone and reported as skipped, as a single file
changed since is (the rule of P-FILE-25 for files changed elsewhere). Rolling back the later change
first makes the move undoable again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def _project(conversation: Path) -> None:
    (conversation / "A" / "sub").mkdir(parents=True)
    (conversation / "A" / "plan.txt").write_text("plan")
    (conversation / "A" / "sub" / "notes.txt").write_text("notes")


def test_rollback_of_a_folder_move_leaves_a_file_a_later_run_added_inside_where_it_is(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: the later run's B/new.txt is not carried back to A; the move is reported skipped."""
    _project(conversation)
    make_workspace(run_id="run-1").move("workspace:A", "workspace:B")
    make_workspace(run_id="run-2").write("workspace:B/new.txt", "later")

    report = history.rollback_run("run-1")

    assert not (conversation / "A").exists()
    assert _tree(conversation) == {"B/new.txt": "later", "B/plan.txt": "plan", "B/sub/notes.txt": "notes"}
    assert report.restored == ()
    assert report.skipped == ("workspace:A", "workspace:B")
    assert [c.status for c in history.changes("run-1")] == ["applied"], "still undoable later"


def test_rollback_of_a_folder_move_spares_a_file_the_user_added_inside_afterwards(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: files changed elsewhere (outside notochord) since the move are left alone."""
    _project(conversation)
    ws.move("workspace:A", "workspace:B")
    (conversation / "B" / "sub" / "mine.txt").write_text("the user's")

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:A", "workspace:B")
    assert (conversation / "B" / "sub" / "mine.txt").read_text() == "the user's"
    assert not (conversation / "A").exists()


def test_rollback_of_a_folder_move_spares_a_file_edited_inside_afterwards(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    _project(conversation)
    ws.move("workspace:A", "workspace:B")
    (conversation / "B" / "plan.txt").write_text("edited by the user")

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:A", "workspace:B")
    assert (conversation / "B" / "plan.txt").read_text() == "edited by the user"


def test_rollback_of_a_folder_move_is_refused_while_another_run_changed_a_file_inside_even_if_undone_by_hand(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: as for a single file, another run's recorded change inside the folder supersedes
    the move until that run is rolled back, whatever the disk shows now."""
    _project(conversation)
    make_workspace(run_id="run-1").move("workspace:A", "workspace:B")
    make_workspace(run_id="run-2").write("workspace:B/new.txt", "later")
    (conversation / "B" / "new.txt").unlink()

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:A", "workspace:B")
    assert (conversation / "B" / "plan.txt").read_text() == "plan"


def test_rolling_back_the_later_run_first_lets_the_folder_move_be_rolled_back(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: undo in reverse order and every change comes back out, exactly."""
    _project(conversation)
    make_workspace(run_id="run-1").move("workspace:A", "workspace:B")
    make_workspace(run_id="run-2").write("workspace:B/new.txt", "later")

    assert history.rollback_run("run-2").restored == ("workspace:B/new.txt",)
    report = history.rollback_run("run-1")

    assert report.restored == ("workspace:A", "workspace:B")
    assert _tree(conversation) == {"A/plan.txt": "plan", "A/sub/notes.txt": "notes"}


def test_a_run_that_moved_a_folder_and_then_changed_it_is_rolled_back_whole(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: the run's own later changes inside the folder are undone first (newest first), so
    the folder is as the move left it and goes back."""
    _project(conversation)
    ws.move("workspace:A", "workspace:B")
    ws.write("workspace:B/new.txt", "mine")
    ws.write("workspace:B/plan.txt", "rewritten")
    ws.delete("workspace:B/sub/notes.txt")

    report = history.rollback_run("run-1")

    assert report.skipped == ()
    assert _tree(conversation) == {"A/plan.txt": "plan", "A/sub/notes.txt": "notes"}


def test_rollback_of_a_move_out_of_a_folder_another_run_moved_since_is_skipped(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-24, P-FILE-25: the moved file's new home, and the folder the run made for it, were moved
    by later runs since (a move of a folder moves what is in it): nothing is pulled out of it."""
    (conversation / "a.txt").write_text("a")
    make_workspace(run_id="run-1").move("workspace:a.txt", "workspace:box/a.txt")
    make_workspace(run_id="run-2").move("workspace:box", "workspace:crate")
    make_workspace(run_id="run-3").move("workspace:crate", "workspace:box")

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:a.txt", "workspace:box/a.txt", "workspace:box")
    assert report.restored == ()
    assert (conversation / "box" / "a.txt").read_text() == "a"
