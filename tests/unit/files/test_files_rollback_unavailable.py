"""Rolling back a change whose earlier version cannot be had: P-FILE-22, P-FILE-25, P-FILE-26, OD-P07.

An old version larger than the history's limit goes to the trash instead of the history. Rolling the
change back takes it out of the trash again; when the trash no longer holds it (the user emptied
it), or this installation has no trash to take it from, or a saved copy went missing from the
history, the rollback of that file is skipped: the run's version stays where it is, untouched, and
the report says why and, for a version in the trash, where it was put.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from notochord.files.history import FileHistory
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]
MakeHistory = Callable[..., FileHistory]

ORIGINAL = b"0123456789" * 3  # larger than the limit of 10 bytes the tests give the history


def _overwrite_a_large_file(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> str:
    """The run replaces big.bin, whose old version goes to the trash; returns where it lies there."""
    history = make_history(limit=10)
    (conversation / "big.bin").write_bytes(ORIGINAL)
    make_workspace(history=history).write("workspace:big.bin", b"tiny")
    (trashed,) = trash_dir.iterdir()
    assert trashed.read_bytes() == ORIGINAL
    return str(trashed)


def test_an_overwrite_whose_large_old_version_left_the_trash_keeps_the_runs_version(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-25, OD-P07: the user emptied the trash; the file the run wrote is not taken away too."""
    location = _overwrite_a_large_file(make_history, make_workspace, conversation, trash_dir)
    shutil.rmtree(trash_dir)

    history = make_history(limit=10)
    report = history.rollback_run("run-1")

    assert (conversation / "big.bin").read_bytes() == b"tiny"
    assert not trash_dir.exists() or list(trash_dir.iterdir()) == []
    assert report.restored == ()
    assert report.skipped == ("workspace:big.bin",)
    why = report.reason("workspace:big.bin")
    assert why is not None and location in why and "trash" in why
    assert [c.status for c in history.changes("run-1")] == ["applied"]


def test_without_a_trash_a_rollback_names_where_the_large_old_version_is_and_keeps_the_file(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-26, OD-P07: a history opened without a trash cannot take the old version back; the
    run's version is not deleted for good in its place, and the report names the trash location."""
    location = _overwrite_a_large_file(make_history, make_workspace, conversation, trash_dir)

    report = make_history(headless=True, limit=10).rollback_run("run-1")

    assert (conversation / "big.bin").read_bytes() == b"tiny"
    assert Path(location).read_bytes() == ORIGINAL
    assert report.skipped == ("workspace:big.bin",)
    why = report.reason("workspace:big.bin")
    assert why is not None and location in why


def test_a_deletion_whose_large_file_left_the_trash_is_skipped_not_reported_restored(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-23, P-FILE-25: nothing came back, so nothing is reported restored."""
    history = make_history(limit=10)
    (conversation / "big.bin").write_bytes(ORIGINAL)
    make_workspace(history=history).delete("workspace:big.bin")
    shutil.rmtree(trash_dir)

    report = history.rollback_run("run-1")

    assert report.restored == ()
    assert report.skipped == ("workspace:big.bin",)
    assert report.reason("workspace:big.bin") is not None
    assert not (conversation / "big.bin").exists()


def test_an_overwrite_whose_saved_copy_went_missing_from_the_history_keeps_the_runs_version(
    ws: Workspace, history: FileHistory, conversation: Path, tmp_path: Path
) -> None:
    """P-FILE-22, P-FILE-25: a copy that cannot be read back is found missing before anything moves."""
    (conversation / "notes.txt").write_text("before")
    ws.write("workspace:notes.txt", "after")
    shutil.rmtree(tmp_path / "history" / "blobs")

    report = history.rollback_run("run-1")

    assert (conversation / "notes.txt").read_text() == "after"
    assert report.skipped == ("workspace:notes.txt",)
    why = report.reason("workspace:notes.txt")
    assert why is not None and "history" in why


def test_a_restored_large_version_leaves_the_runs_version_in_the_trash(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """OD-P07: the ordinary case still works: the old version comes back, the run's goes to the trash."""
    location = _overwrite_a_large_file(make_history, make_workspace, conversation, trash_dir)

    report = make_history(limit=10).rollback_run("run-1")

    assert report.restored == ("workspace:big.bin",)
    assert report.reason("workspace:big.bin") is None
    assert (conversation / "big.bin").read_bytes() == ORIGINAL
    assert not Path(location).exists()
    assert [p.read_bytes() for p in trash_dir.iterdir()] == [b"tiny"]


def test_a_skipped_folder_move_names_the_later_run_and_the_path_in_the_way(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: the report says which later run's change holds the move back, so the user knows
    what to roll back first."""
    (conversation / "A").mkdir()
    (conversation / "A" / "plan.txt").write_text("plan")
    make_workspace(run_id="run-1").move("workspace:A", "workspace:B")
    make_workspace(run_id="run-2").write("workspace:B/new.txt", "later")

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:A", "workspace:B")
    for shown in report.skipped:
        why = report.reason(shown)
        assert why is not None and "run-2" in why and "workspace:B/new.txt" in why
    assert (conversation / "B" / "new.txt").read_text() == "later"


def test_a_file_changed_outside_since_is_skipped_with_that_reason(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: files changed elsewhere since are left alone, and the report says so."""
    ws.write("workspace:a.txt", "gem")
    (conversation / "a.txt").write_text("user")

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:a.txt",)
    why = report.reason("workspace:a.txt")
    assert why is not None and "changed since" in why
