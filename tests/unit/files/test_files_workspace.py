"""Workspace paths and operations: P-FILE-01, 17…20, 27, OD-P06, OD-P13."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from notochord.errors import (
    FileError,
    FileExistsInWorkspaceError,
    FileNotFoundInWorkspaceError,
    FilePermissionError,
    StorageFullError,
)
from notochord.files.history import FileHistory
from notochord.files.workspace import Entry, Workspace

MakeWorkspace = Callable[..., Workspace]


def _listing(entries: list[Entry]) -> list[tuple[str, str]]:
    return [(e.name, e.kind) for e in entries]


# -- addressing -------------------------------------------------------------------------------


def test_workspace_prefix_addresses_the_conversation_folder(ws: Workspace, conversation: Path) -> None:
    """P-FILE-17: ``workspace:inbox/invoice.pdf`` is a file inside the conversation folder."""
    (conversation / "inbox").mkdir()
    (conversation / "inbox" / "invoice.pdf").write_bytes(b"%PDF")
    assert ws.read("workspace:inbox/invoice.pdf") == b"%PDF"


def test_workspace_prefix_alone_is_the_top_level(ws: Workspace, conversation: Path) -> None:
    """P-FILE-17, P-FILE-19: ``workspace:`` lists the top level; the gem walks entries itself."""
    (conversation / "a.txt").write_text("a")
    (conversation / "docs").mkdir()
    assert _listing(ws.list("workspace:")) == [("a.txt", "file"), ("docs", "dir")]
    top = ws.stat("workspace:")
    assert top.kind == "dir"
    assert top.name == ""


def test_run_prefix_and_bare_paths_address_the_run_folder(make_workspace: MakeWorkspace, tmp_path: Path) -> None:
    """P-FILE-01: the run folder is the second place a gem may touch; a bare path means it too."""
    run = tmp_path / "run"
    run.mkdir()
    ws = make_workspace(run_root=run)
    ws.write("run:output/report.md", "# Report")
    assert (run / "output" / "report.md").read_text() == "# Report"
    assert ws.read_text("output/report.md") == "# Report"


def test_unknown_prefix_is_refused_instead_of_written_to_the_run_folder(
    make_workspace: MakeWorkspace, tmp_path: Path
) -> None:
    ws = make_workspace(run_root=tmp_path)
    with pytest.raises(FilePermissionError, match="unknown prefix worksapce"):
        ws.write("worksapce:notes.txt", "x")


def test_entry_reports_name_kind_size_and_modified_time(ws: Workspace, conversation: Path) -> None:
    (conversation / "notes.txt").write_bytes(b"12345")
    entry = ws.stat("workspace:notes.txt")
    assert (entry.name, entry.kind, entry.size) == ("notes.txt", "file", 5)
    assert entry.modified.tzinfo is not None


def test_paths_are_normalised_before_use(ws: Workspace, conversation: Path) -> None:
    """OD-P06: ``.``, empty segments, backslashes and inner ``..`` are normalised first."""
    (conversation / "a").mkdir()
    (conversation / "a" / "b.txt").write_text("b")
    assert ws.read_text("workspace:./a//x/../b.txt") == "b"
    assert ws.read_text("workspace:a\\b.txt") == "b"


# -- escaping the root ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["workspace:/etc/passwd", "workspace:C:\\Windows\\win.ini", "/etc/passwd"],
    ids=["posix-absolute", "windows-absolute", "bare-absolute"],
)
def test_absolute_paths_are_denied(make_workspace: MakeWorkspace, tmp_path: Path, path: str) -> None:
    """OD-P06, OD-P13: absolute paths → E_PERM_DENIED, with the code in the message."""
    ws = make_workspace(run_root=tmp_path)
    with pytest.raises(FilePermissionError, match="E_PERM_DENIED") as info:
        ws.read(path)
    assert info.value.code == "E_PERM_DENIED"


@pytest.mark.parametrize("path", ["workspace:..", "workspace:../secret.txt", "workspace:a/../../secret.txt"])
def test_dotdot_escaping_the_root_is_denied(ws: Workspace, tmp_path: Path, path: str) -> None:
    """OD-P06: ``..`` that climbs above the conversation folder → E_PERM_DENIED."""
    (tmp_path / "secret.txt").write_text("secret")
    with pytest.raises(FilePermissionError):
        ws.read(path)
    with pytest.raises(FilePermissionError):
        ws.write(path, "x")


def test_symlink_leading_outside_is_denied_for_read_and_write(
    ws: Workspace, conversation: Path, tmp_path: Path
) -> None:
    """P-FILE-01, OD-P06: symlinks are resolved before the check; one leading outside is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (conversation / "link").symlink_to(outside)
    (conversation / "file-link").symlink_to(outside / "secret.txt")
    with pytest.raises(FilePermissionError):
        ws.read("workspace:link/secret.txt")
    with pytest.raises(FilePermissionError):
        ws.read("workspace:file-link")
    with pytest.raises(FilePermissionError):
        ws.write("workspace:link/new.txt", "x")
    assert not (outside / "new.txt").exists()


def test_symlink_inside_the_root_is_followed(ws: Workspace, conversation: Path) -> None:
    (conversation / "real").mkdir()
    (conversation / "real" / "a.txt").write_text("a")
    (conversation / "alias").symlink_to(conversation / "real")
    assert ws.read_text("workspace:alias/a.txt") == "a"
    assert _listing(ws.list("workspace:")) == [("alias", "dir"), ("real", "dir")]


def test_list_leaves_out_symlinks_that_lead_outside(ws: Workspace, conversation: Path, tmp_path: Path) -> None:
    (conversation / "escape").symlink_to(tmp_path)
    (conversation / "ok.txt").write_text("ok")
    assert _listing(ws.list("workspace:")) == [("ok.txt", "file")]


def test_directory_swapped_for_a_symlink_after_the_check_is_refused(
    ws: Workspace, conversation: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OD-P06 TOCTOU: the path is walked again with O_NOFOLLOW, so a swap after the check fails."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (conversation / "docs").mkdir()
    real_realpath = os.path.realpath

    def swap_after_check(path: str | os.PathLike[str]) -> str:
        result = real_realpath(path)
        if str(path).endswith("note.txt") and (conversation / "docs").is_dir():
            (conversation / "docs").rmdir()
            (conversation / "docs").symlink_to(outside)
        return result

    monkeypatch.setattr("notochord.files.workspace.os.path.realpath", swap_after_check)
    with pytest.raises(FilePermissionError):
        ws.write("workspace:docs/note.txt", "x")
    assert list(outside.iterdir()) == []


def test_file_swapped_for_a_symlink_after_the_check_is_not_read(
    ws: Workspace, conversation: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OD-P06 TOCTOU: the final component is opened with O_NOFOLLOW."""
    (tmp_path / "secret.txt").write_text("secret")
    (conversation / "note.txt").write_text("note")
    real_realpath = os.path.realpath

    def swap_after_check(path: str | os.PathLike[str]) -> str:
        result = real_realpath(path)
        target = conversation / "note.txt"
        if str(path).endswith("note.txt") and not target.is_symlink():
            target.unlink()
            target.symlink_to(tmp_path / "secret.txt")
        return result

    monkeypatch.setattr("notochord.files.workspace.os.path.realpath", swap_after_check)
    with pytest.raises(FilePermissionError):
        ws.read("workspace:note.txt")


# -- hidden names -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["workspace:.env", "workspace:.git/config", "workspace:sub/.hidden"])
def test_hidden_paths_read_exactly_like_missing_files(ws: Workspace, conversation: Path, path: str) -> None:
    """P-FILE-20, OD-P06: reading or stat of a dot path → E_NOT_FOUND, the same as a missing file."""
    (conversation / ".env").write_text("TOKEN=1")
    (conversation / ".git").mkdir()
    (conversation / ".git" / "config").write_text("[core]")
    (conversation / "sub").mkdir()
    (conversation / "sub" / ".hidden").write_text("h")
    with pytest.raises(FileNotFoundInWorkspaceError) as hidden:
        ws.read(path)
    with pytest.raises(FileNotFoundInWorkspaceError) as missing:
        ws.read(path.replace(".", "missing-", 1))
    assert hidden.value.code == missing.value.code == "E_NOT_FOUND"
    assert str(hidden.value) == str(missing.value).replace("missing-", ".")
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.stat(path)


def test_hidden_paths_cannot_be_written_deleted_or_moved(ws: Workspace, conversation: Path) -> None:
    """P-FILE-20, OD-P06: writing, deleting, moving → E_PERM_DENIED."""
    (conversation / ".env").write_text("TOKEN=1")
    (conversation / "a.txt").write_text("a")
    with pytest.raises(FilePermissionError):
        ws.write("workspace:.env", "overwritten")
    with pytest.raises(FilePermissionError):
        ws.delete("workspace:.env")
    with pytest.raises(FilePermissionError):
        ws.move("workspace:.env", "workspace:env.txt")
    with pytest.raises(FilePermissionError):
        ws.move("workspace:a.txt", "workspace:.git/a.txt")
    with pytest.raises(FilePermissionError):
        ws.mkdir("workspace:.cache")
    assert (conversation / ".env").read_text() == "TOKEN=1"
    assert not (conversation / ".git").exists()


def test_list_leaves_hidden_entries_out(ws: Workspace, conversation: Path) -> None:
    """P-FILE-20: ``.env`` and ``.git`` are never listed."""
    (conversation / ".env").write_text("x")
    (conversation / ".git").mkdir()
    (conversation / "visible.txt").write_text("v")
    assert _listing(ws.list("workspace:")) == [("visible.txt", "file")]
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.list("workspace:.git")


def test_symlink_to_a_hidden_file_inside_the_root_does_not_expose_it(ws: Workspace, conversation: Path) -> None:
    (conversation / ".env").write_text("TOKEN=1")
    (conversation / "env.txt").symlink_to(conversation / ".env")
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.read("workspace:env.txt")
    assert ws.list("workspace:") == []


# -- no conversation --------------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["read", "write", "list", "stat", "delete", "mkdir", "move"])
def test_every_workspace_call_without_a_conversation_is_denied(
    make_workspace: MakeWorkspace, tmp_path: Path, operation: str
) -> None:
    """P-FILE-27, P-FILE-29, OD-P13: no conversation and no chosen folder → E_PERM_DENIED."""
    ws = make_workspace(root=None, run_root=tmp_path)
    calls: dict[str, Callable[[], object]] = {
        "read": lambda: ws.read("workspace:a.txt"),
        "write": lambda: ws.write("workspace:a.txt", "x"),
        "list": lambda: ws.list("workspace:"),
        "stat": lambda: ws.stat("workspace:"),
        "delete": lambda: ws.delete("workspace:a.txt"),
        "mkdir": lambda: ws.mkdir("workspace:d"),
        "move": lambda: ws.move("run:a.txt", "workspace:a.txt"),
    }
    with pytest.raises(FilePermissionError, match=r"E_PERM_DENIED: .*no conversation folder"):
        calls[operation]()


def test_run_folder_still_works_without_a_conversation(make_workspace: MakeWorkspace, tmp_path: Path) -> None:
    """P-FILE-05: a scheduled SOP without a working folder still has its run folder."""
    ws = make_workspace(root=None, run_root=tmp_path)
    ws.write("run:out.md", "ok")
    assert ws.read_text("run:out.md") == "ok"


# -- operations ------------------------------------------------------------------------------


def test_write_creates_missing_parent_folders(ws: Workspace, conversation: Path) -> None:
    ws.write("workspace:reports/2026/q3.md", b"# Q3")
    assert (conversation / "reports" / "2026" / "q3.md").read_bytes() == b"# Q3"


def test_write_leaves_no_temporary_file_behind(ws: Workspace, conversation: Path) -> None:
    ws.write("workspace:a.txt", "one")
    ws.write("workspace:a.txt", "two")
    assert sorted(p.name for p in conversation.iterdir()) == ["a.txt"]


def test_reading_a_missing_file_is_not_found(ws: Workspace) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError, match="E_NOT_FOUND"):
        ws.read("workspace:nope.txt")
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.list("workspace:nowhere")


def test_reading_a_folder_or_writing_over_one_is_a_file_error(ws: Workspace, conversation: Path) -> None:
    (conversation / "docs").mkdir()
    with pytest.raises(FileError, match="is a folder"):
        ws.read("workspace:docs")
    with pytest.raises(FileError, match="is a folder"):
        ws.write("workspace:docs", "x")
    with pytest.raises(FileError, match="is a folder"):
        ws.read("workspace:")


def test_read_text_refuses_bytes_that_are_not_utf8(ws: Workspace, conversation: Path) -> None:
    (conversation / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(FileError, match="not utf-8 text"):
        ws.read_text("workspace:bin")


def test_move_onto_an_existing_path_is_rejected(ws: Workspace, conversation: Path) -> None:
    """P-FILE-24: a move onto an existing path → E_EXISTS, both files untouched."""
    (conversation / "a.txt").write_text("a")
    (conversation / "b.txt").write_text("b")
    with pytest.raises(FileExistsInWorkspaceError, match="E_EXISTS") as info:
        ws.move("workspace:a.txt", "workspace:b.txt")
    assert info.value.code == "E_EXISTS"
    assert (conversation / "a.txt").read_text() == "a"
    assert (conversation / "b.txt").read_text() == "b"


def test_move_renames_files_and_folders(ws: Workspace, conversation: Path) -> None:
    (conversation / "a.txt").write_text("a")
    (conversation / "dir").mkdir()
    (conversation / "dir" / "x").write_text("x")
    ws.move("workspace:a.txt", "workspace:archive/a.txt")
    ws.move("workspace:dir", "workspace:dir2")
    assert (conversation / "archive" / "a.txt").read_text() == "a"
    assert (conversation / "dir2" / "x").read_text() == "x"
    assert not (conversation / "a.txt").exists()


def test_tools_called_from_a_sop_share_its_run_folder(make_workspace: MakeWorkspace, tmp_path: Path) -> None:
    """P-FILE-06, P-FILE-07: every tool of a SOP run addresses the same run folder."""
    run = tmp_path / "run"
    run.mkdir()
    sop = make_workspace(run_root=run, actor="gem:digest")
    tool = make_workspace(run_root=run, actor="gem:digest")
    sop.write("run:output/data.json", "[]")
    assert tool.read_text("run:output/data.json") == "[]"
    assert (run / "output" / "data.json").read_text() == "[]"


def test_move_publishes_a_result_from_the_run_folder(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    run = conversation / "runs" / "tool-20260929-101500"
    run.mkdir(parents=True)
    ws = make_workspace(run_root=run)
    ws.write("run:output/report.md", "r")
    ws.move("run:output/report.md", "workspace:report.md")
    assert (conversation / "report.md").read_text() == "r"
    history.rollback_run("run-1")
    assert not (conversation / "report.md").exists()
    assert not run.joinpath("output").exists()


def test_move_of_a_missing_file_is_not_found(ws: Workspace) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.move("workspace:ghost.txt", "workspace:b.txt")


def test_mkdir_creates_and_refuses_existing(ws: Workspace, conversation: Path) -> None:
    ws.mkdir("workspace:a/b")
    assert (conversation / "a" / "b").is_dir()
    with pytest.raises(FileExistsInWorkspaceError):
        ws.mkdir("workspace:a/b")


def test_delete_removes_files_and_empty_folders_only(ws: Workspace, conversation: Path) -> None:
    (conversation / "full").mkdir()
    (conversation / "full" / "f").write_text("f")
    (conversation / "empty").mkdir()
    ws.delete("workspace:empty")
    assert not (conversation / "empty").exists()
    with pytest.raises(FileError, match="not empty"):
        ws.delete("workspace:full")
    with pytest.raises(FilePermissionError):
        ws.delete("workspace:")
    with pytest.raises(FileNotFoundInWorkspaceError):
        ws.delete("workspace:ghost")


def test_a_folder_holding_only_hidden_entries_is_not_deleted_and_the_refusal_says_why(
    ws: Workspace, conversation: Path, history: FileHistory
) -> None:
    """P-FILE-20: ``list`` shows the folder empty, so "not empty" would be a riddle; its hidden
    entries are the user's and stay, with the folder."""
    (conversation / "project").mkdir()
    (conversation / "project" / ".git").mkdir()
    assert ws.list("workspace:project") == []
    with pytest.raises(FileError, match=r"holds only hidden entries \(names starting with \.\)"):
        ws.delete("workspace:project")
    assert (conversation / "project" / ".git").is_dir()
    assert history.changes() == [], "a refused delete records nothing"


def test_a_system_refusal_becomes_a_permission_error(
    ws: Workspace, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every OSError is translated; none escapes."""
    (conversation / "a.txt").write_text("a")

    def refuse(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("notochord.files.workspace.os.open", refuse)
    with pytest.raises(FilePermissionError, match="the system refused access"):
        ws.read("workspace:a.txt")


def test_a_full_disk_fails_the_write_cleanly(
    ws: Workspace, history: FileHistory, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails leaves the old file, no temporary file and no history record."""
    (conversation / "a.txt").write_text("old")

    def disk_full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("notochord.files.workspace.os.replace", disk_full)
    with pytest.raises(StorageFullError, match="the disk is full"):
        ws.write("workspace:a.txt", "new")
    assert sorted(p.name for p in conversation.iterdir()) == ["a.txt"]
    assert (conversation / "a.txt").read_text() == "old"
    assert history.changes() == []


def test_failed_change_leaves_no_history_record(ws: Workspace, history: FileHistory, conversation: Path) -> None:
    """P-FILE-21: only changes that happened are recorded."""
    (conversation / "full").mkdir()
    (conversation / "full" / "f").write_text("f")
    with pytest.raises(FileError):
        ws.delete("workspace:full")
    assert history.changes() == []


def test_a_pipe_in_the_conversation_is_neither_read_nor_replaced_and_nothing_waits_on_it(
    ws: Workspace, conversation: Path
) -> None:
    """P-FILE-17, P-FILE-22: opening a named pipe for reading waits for a writer; the workspace opens
    without waiting and refuses it, for a read and for a write that would first save its old version."""
    os.mkfifo(conversation / "pipe")
    with pytest.raises(FileError, match="workspace:pipe is not a file but a pipe, socket or device"):
        ws.read("workspace:pipe")
    with pytest.raises(FileError, match="workspace:pipe is a pipe, socket or device, not a file"):
        ws.write("workspace:pipe", "text")
    assert (conversation / "pipe").is_fifo()


def test_a_read_bounded_by_size_refuses_a_larger_file_before_reading_it(ws: Workspace, conversation: Path) -> None:
    (conversation / "big.bin").write_bytes(b"x" * 2048)
    assert ws.read("workspace:big.bin", max_bytes=2048) == b"x" * 2048
    with pytest.raises(FileError, match=r"workspace:big\.bin is 1 MB, more than a tool may read at once"):
        ws.read("workspace:big.bin", max_bytes=2047)
