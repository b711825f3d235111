"""File history, old versions, trash and rollback: P-FILE-21…26, OD-P07."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from notochord.clock import FixedClock
from notochord.errors import FileError
from notochord.files.history import VERSION_LIMIT, FileHistory, FolderTrash
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]
MakeHistory = Callable[..., FileHistory]


def _ops(history: FileHistory, run_id: str | None = None) -> list[tuple[str, str, str | None]]:
    return [(c.op, c.display, c.dest_display) for c in history.changes(run_id)]


def test_version_limit_is_100_mebibytes() -> None:
    """OD-P07: "100 MB" is 100 × 1024 × 1024 bytes."""
    assert VERSION_LIMIT == 100 * 1024 * 1024


def test_every_change_is_recorded_with_run_actor_time_and_paths(
    ws: Workspace, history: FileHistory, clock: FixedClock, conversation: Path
) -> None:
    """P-FILE-21: create, overwrite, mkdir, move and delete each leave one record."""
    ws.write("workspace:a.txt", "one")
    clock.advance(timedelta(seconds=5))
    ws.write("workspace:a.txt", "two")
    ws.mkdir("workspace:archive")
    ws.move("workspace:a.txt", "workspace:archive/a.txt")
    ws.delete("workspace:archive/a.txt")
    assert _ops(history) == [
        ("create", "workspace:a.txt", None),
        ("overwrite", "workspace:a.txt", None),
        ("mkdir", "workspace:archive", None),
        ("move", "workspace:a.txt", "workspace:archive/a.txt"),
        ("delete", "workspace:archive/a.txt", None),
    ]
    changes = history.changes()
    assert {c.run_id for c in changes} == {"run-1"}
    assert {c.actor for c in changes} == {"gem:demo"}
    assert changes[1].at - changes[0].at == timedelta(seconds=5)
    assert all(c.status == "applied" for c in changes)


def test_parent_folders_created_by_a_write_are_recorded_as_mkdir(ws: Workspace, history: FileHistory) -> None:
    ws.write("workspace:out/2026/r.md", "r")
    assert _ops(history) == [
        ("mkdir", "workspace:out", None),
        ("mkdir", "workspace:out/2026", None),
        ("create", "workspace:out/2026/r.md", None),
    ]


def test_overwrite_saves_the_old_version_before_the_change(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-22: the replaced content is in the history."""
    (conversation / "notes.txt").write_text("user's words")
    ws.write("workspace:notes.txt", "gem's words")
    [change] = history.changes()
    assert change.op == "overwrite"
    assert change.old_in_history
    assert history.old_version(change.id) == b"user's words"


def test_old_versions_above_the_limit_go_to_the_trash(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-22, OD-P07: strictly larger than the limit → trash; exactly the limit → history."""
    history = make_history(limit=10)
    ws = make_workspace(history=history)
    (conversation / "big.bin").write_bytes(b"x" * 11)
    (conversation / "edge.bin").write_bytes(b"y" * 10)
    ws.write("workspace:big.bin", b"new")
    ws.write("workspace:edge.bin", b"new")
    big, edge = history.changes()
    assert not big.old_in_history
    assert big.old_in_trash
    assert [p.read_bytes() for p in trash_dir.iterdir()] == [b"x" * 11]
    assert edge.old_in_history
    assert history.old_version(edge.id) == b"y" * 10
    with pytest.raises(FileError, match="no old version"):
        history.old_version(big.id)


def test_without_a_trash_large_old_versions_stay_in_the_history(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """P-FILE-26: headless keeps even a large old version rather than losing it."""
    history = make_history(headless=True, limit=10)
    ws = make_workspace(history=history)
    (conversation / "big.bin").write_bytes(b"x" * 11)
    ws.write("workspace:big.bin", b"new")
    [change] = history.changes()
    assert history.old_version(change.id) == b"x" * 11


def test_delete_moves_to_the_trash_and_keeps_a_copy(
    ws: Workspace, history: FileHistory, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-23: delete → user's trash, plus a copy in the history."""
    (conversation / "draft.md").write_text("draft")
    ws.delete("workspace:draft.md")
    assert not (conversation / "draft.md").exists()
    assert [p.read_text() for p in trash_dir.iterdir()] == ["draft"]
    [change] = history.changes()
    assert change.old_in_history
    assert change.old_in_trash
    assert history.old_version(change.id) == b"draft"


def test_headless_delete_is_permanent_but_can_be_rolled_back(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, trash_dir: Path
) -> None:
    """P-FILE-26: no trash → file gone for good, yet the history copy restores it."""
    history = make_history(headless=True)
    ws = make_workspace(history=history)
    (conversation / "draft.md").write_text("draft")
    ws.delete("workspace:draft.md")
    assert not (conversation / "draft.md").exists()
    assert not trash_dir.exists()
    report = history.rollback_run("run-1")
    assert report.restored == ("workspace:draft.md",)
    assert (conversation / "draft.md").read_text() == "draft"


def test_move_records_only_the_path_change(ws: Workspace, history: FileHistory, conversation: Path) -> None:
    """P-FILE-24: no copy of the content is kept for a move."""
    (conversation / "a.txt").write_text("a")
    ws.move("workspace:a.txt", "workspace:b.txt")
    [change] = history.changes()
    assert (change.op, change.display, change.dest_display) == ("move", "workspace:a.txt", "workspace:b.txt")
    assert not change.old_in_history
    assert not change.old_in_trash


def test_rollback_restores_every_file_the_run_changed(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: files changed on the branch return to their state before the run."""
    (conversation / "keep.txt").write_text("original")
    (conversation / "gone.txt").write_text("deleted by the run")
    (conversation / "moved.txt").write_text("moved by the run")
    ws = make_workspace(run_id="run-7")
    ws.write("workspace:keep.txt", "changed")
    ws.write("workspace:keep.txt", "changed twice")
    ws.write("workspace:new/created.txt", "new")
    ws.delete("workspace:gone.txt")
    ws.move("workspace:moved.txt", "workspace:archive/moved.txt")

    report = history.rollback_run("run-7")

    assert (conversation / "keep.txt").read_text() == "original"
    assert (conversation / "gone.txt").read_text() == "deleted by the run"
    assert (conversation / "moved.txt").read_text() == "moved by the run"
    assert sorted(p.name for p in conversation.iterdir()) == ["gone.txt", "keep.txt", "moved.txt"]
    assert report.skipped == ()
    assert set(report.restored) >= {"workspace:keep.txt", "workspace:gone.txt", "workspace:new/created.txt"}
    assert {c.status for c in history.changes("run-7")} == {"rolled_back"}


def test_rollback_leaves_files_changed_since_by_another_run_alone(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: a file another run changed after this run is skipped, others are restored."""
    (conversation / "shared.txt").write_text("original")
    (conversation / "mine.txt").write_text("original")
    first = make_workspace(run_id="run-1")
    second = make_workspace(run_id="run-2")
    first.write("workspace:shared.txt", "run-1")
    first.write("workspace:mine.txt", "run-1")
    second.write("workspace:shared.txt", "run-2")

    report = history.rollback_run("run-1")

    assert report.restored == ("workspace:mine.txt",)
    assert report.skipped == ("workspace:shared.txt",)
    assert (conversation / "shared.txt").read_text() == "run-2"
    assert (conversation / "mine.txt").read_text() == "original"


def test_rollback_leaves_files_changed_outside_alone(ws: Workspace, history: FileHistory, conversation: Path) -> None:
    """P-FILE-25: a change made outside notochord (by the user) is detected by content hash."""
    (conversation / "a.txt").write_text("original")
    ws.write("workspace:a.txt", "gem")
    ws.write("workspace:b.txt", "gem")
    (conversation / "a.txt").write_text("user edited")
    (conversation / "b.txt").unlink()

    report = history.rollback_run("run-1")

    assert report.skipped == ("workspace:b.txt", "workspace:a.txt")
    assert report.restored == ()
    assert (conversation / "a.txt").read_text() == "user edited"


def test_rollback_skips_older_changes_to_a_path_once_a_newer_one_is_skipped(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    (conversation / "a.txt").write_text("v0")
    ws.write("workspace:a.txt", "v1")
    ws.write("workspace:a.txt", "v2")
    (conversation / "a.txt").write_text("v1")  # the user went back to v1 by hand
    report = history.rollback_run("run-1")
    assert report.skipped == ("workspace:a.txt",)
    assert (conversation / "a.txt").read_text() == "v1"


def test_rollback_restores_a_large_old_version_from_the_trash(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """OD-P07: a version kept in the trash is brought back from there."""
    history = make_history(limit=4)
    ws = make_workspace(history=history)
    (conversation / "big.bin").write_bytes(b"0123456789")
    ws.write("workspace:big.bin", b"tiny")
    report = history.rollback_run("run-1")
    assert report.restored == ("workspace:big.bin",)
    assert (conversation / "big.bin").read_bytes() == b"0123456789"


def test_rollback_keeps_a_folder_someone_else_filled(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    ws = make_workspace(run_id="run-1")
    ws.mkdir("workspace:out")
    (conversation / "out" / "user.txt").write_text("mine")
    report = history.rollback_run("run-1")
    assert report.skipped == ("workspace:out",)
    assert (conversation / "out" / "user.txt").read_text() == "mine"


def test_rollback_never_writes_through_a_symlink(
    ws: Workspace, history: FileHistory, conversation: Path, tmp_path: Path
) -> None:
    """A folder replaced by a link after the run is treated as changed since."""
    outside = tmp_path / "outside"
    outside.mkdir()
    ws.write("workspace:docs/a.txt", "gem")
    (conversation / "docs" / "a.txt").unlink()
    (conversation / "docs").rmdir()
    (conversation / "docs").symlink_to(outside)
    (outside / "a.txt").write_text("gem")
    report = history.rollback_run("run-1")
    assert "workspace:docs/a.txt" in report.skipped
    assert (outside / "a.txt").read_text() == "gem"


def test_rollback_twice_does_nothing_the_second_time(ws: Workspace, history: FileHistory, conversation: Path) -> None:
    ws.write("workspace:a.txt", "gem")
    assert history.rollback_run("run-1").restored == ("workspace:a.txt",)
    again = history.rollback_run("run-1")
    assert (again.restored, again.skipped) == ((), ())


def test_history_survives_reopening(
    make_history: MakeHistory, make_workspace: MakeWorkspace, conversation: Path, history: FileHistory
) -> None:
    (conversation / "a.txt").write_text("v0")
    make_workspace().write("workspace:a.txt", "v1")
    reopened = make_history()
    assert reopened.rollback_run("run-1").restored == ("workspace:a.txt",)
    assert (conversation / "a.txt").read_text() == "v0"


def test_identical_old_versions_are_stored_once(
    ws: Workspace, history: FileHistory, conversation: Path, tmp_path: Path
) -> None:
    """Version blobs are content-addressed by sha256."""
    for name in ("a.txt", "b.txt"):
        (conversation / name).write_text("same")
        ws.write(f"workspace:{name}", "new")
    blobs = [p for p in (tmp_path / "history" / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 1


def test_folder_trash_restores_only_its_own_items(tmp_path: Path) -> None:
    trash = FolderTrash(tmp_path / "trash")
    (tmp_path / "a.txt").write_text("a")
    location = trash.put(tmp_path / "a.txt")
    with pytest.raises(FileError, match="not an item of this trash"):
        trash.restore(str(tmp_path / "elsewhere"), tmp_path / "b.txt")
    trash.restore(location, tmp_path / "back" / "a.txt")
    assert (tmp_path / "back" / "a.txt").read_text() == "a"


def test_an_unusable_store_folder_is_a_file_error(tmp_path: Path, clock: FixedClock) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(FileError, match="cannot open the file history"):
        FileHistory(blocker / "history", clock=clock, trash=None)
