"""Paths a hostile gem or a careless caller may give ``ctx.files``: P-FILE-01, 17…24, OD-P06.

Every refusal here is a :class:`~notochord.errors.FileError` that says what is wrong and what to
do, and leaves the folder and the file history exactly as they were.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import FileError, FileExistsInWorkspaceError, FilePermissionError
from notochord.files import workspace as workspace_module
from notochord.files.history import FileHistory
from notochord.files.noreplace import can_exchange, can_rename_noreplace
from notochord.files.versions import Incoming, Versions
from notochord.files.workspace import Workspace

MakeWorkspace = Callable[..., Workspace]

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.fixture
def project(conversation: Path) -> Path:
    (conversation / "A" / "sub").mkdir(parents=True)
    (conversation / "A" / "plan.txt").write_text("plan")
    return conversation


# -- moving a folder into itself ---------------------------------------------------------------


@pytest.mark.parametrize("dest", ["workspace:A/B", "workspace:A/sub/B", "workspace:A/new/deeper/B"])
def test_moving_a_folder_into_itself_is_refused_in_words_and_creates_nothing(
    ws: Workspace, history: FileHistory, project: Path, dest: str
) -> None:
    """P-FILE-24: no missing folder on the way is created for a move that cannot happen."""
    before = _tree(project)
    with pytest.raises(FileError, match=f"cannot move workspace:A into itself \\({dest} is inside it\\)"):
        ws.move("workspace:A", dest)
    assert _tree(project) == before
    assert history.changes() == []


def test_moving_a_folder_into_itself_through_a_link_is_refused_too(
    ws: Workspace, history: FileHistory, project: Path
) -> None:
    """P-FILE-24, OD-P06: the check is made on real locations, after links are followed."""
    (project / "alias").symlink_to(project / "A")
    with pytest.raises(FileError, match="into itself"):
        ws.move("workspace:A", "workspace:alias/B")
    assert history.changes() == []


def test_moving_the_folder_that_holds_the_run_folder_into_it_is_refused(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-03: the run folder lives in the conversation, so ``workspace:runs`` contains ``run:``;
    the move is refused, as every move of the folder that holds the run's own."""
    run = conversation / "runs" / "tool-20260929-101500"
    run.mkdir(parents=True)
    ws = make_workspace(run_root=run)
    with pytest.raises(FileError, match="this run's own folder"):
        ws.move("workspace:runs", "run:old/runs")
    assert _tree(conversation) == ["runs", "runs/tool-20260929-101500"]
    assert history.changes() == []


@pytest.mark.parametrize(
    "call",
    [
        lambda ws: ws.move("workspace:runs/tool-20260929-101500", "workspace:kept"),
        lambda ws: ws.move("workspace:runs", "workspace:old-runs"),
        lambda ws: ws.delete("workspace:runs/tool-20260929-101500"),
    ],
    ids=["move the run folder", "move the folder holding it", "delete it"],
)
def test_a_run_cannot_move_or_delete_its_own_run_folder_while_it_runs(
    make_workspace: MakeWorkspace, history: FileHistory, conversation: Path, call: Callable[[Workspace], object]
) -> None:
    """P-FILE-11/12: the host reports and tidies the run folder where it made it; a gem that took it
    away through ``workspace:`` would leave the caller a folder that is not there."""
    run = conversation / "runs" / "tool-20260929-101500"
    run.mkdir(parents=True)
    ws = make_workspace(run_root=run)
    with pytest.raises(FilePermissionError, match="this run's own folder") as refused:
        call(ws)
    assert "its files can be" in str(refused.value)
    assert _tree(conversation) == ["runs", "runs/tool-20260929-101500"]
    assert history.changes() == []
    ws.write("run:result.txt", "still here")
    assert (run / "result.txt").read_text() == "still here"


def test_another_runs_folder_may_be_moved(make_workspace: MakeWorkspace, conversation: Path) -> None:
    """P-FILE-16: results left by earlier runs are the user's files like any other."""
    (conversation / "runs" / "older-run").mkdir(parents=True)
    run = conversation / "runs" / "tool-20260929-101500"
    run.mkdir()
    ws = make_workspace(run_root=run)
    ws.move("workspace:runs/older-run", "workspace:archive")
    assert (conversation / "archive").is_dir()


def test_a_file_is_still_renamed_next_to_itself(ws: Workspace, conversation: Path) -> None:
    """Only a folder has an inside: ``a.txt`` → ``a.txt.bak`` is an ordinary rename."""
    (conversation / "a.txt").write_text("a")
    ws.move("workspace:a.txt", "workspace:a.txt.bak")
    assert (conversation / "a.txt.bak").read_text() == "a"


# -- names and paths longer than the system allows ----------------------------------------------


@pytest.mark.parametrize("name", ["x" * 256, "é" * 128], ids=["256-ascii-bytes", "128-two-byte-characters"])
def test_a_name_longer_than_a_file_system_holds_is_refused_before_anything_is_created(
    ws: Workspace, history: FileHistory, conversation: Path, name: str
) -> None:
    """OD-P06: the length is counted in UTF-8 bytes; the error quotes the name cut short."""
    calls: list[Callable[[], object]] = [
        lambda: ws.write(f"workspace:newdir/{name}", "x"),
        lambda: ws.mkdir(f"workspace:newdir/{name}"),
        lambda: ws.read(f"workspace:{name}"),
    ]
    for call in calls:
        with pytest.raises(
            FileError, match="is longer than the 255 bytes a name may have; choose a shorter name"
        ) as info:
            call()
        assert len(str(info.value)) < 300
    assert _tree(conversation) == []
    assert history.changes() == []


def test_a_name_of_exactly_255_bytes_is_written(ws: Workspace, conversation: Path) -> None:
    ws.write("workspace:" + "x" * 255, "x")
    assert (conversation / ("x" * 255)).read_text() == "x"


def test_a_path_longer_than_the_system_allows_is_refused_before_anything_is_created(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-25: a path past the system's limit could be neither opened by the user's programs
    nor rolled back, so a gem may not create one."""
    deep = "/".join(["d" * 200] * 25)
    with pytest.raises(
        FileError,
        match=r"is longer than the \d+ bytes a path may have here \(counting the folder's own location\); choose a",
    ):
        ws.write(f"workspace:{deep}/f.txt", "x")
    assert _tree(conversation) == []
    assert history.changes() == []


# -- a trailing slash names a folder -----------------------------------------------------------


def test_writing_to_a_path_ending_in_a_slash_is_refused_rather_than_creating_a_file_of_that_name(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-18: the AI passes folders as ``"inbox/"``; a file named ``inbox`` is never what it meant."""
    with pytest.raises(FileError, match="workspace:reports/ ends with /, which names a folder; give the file's name"):
        ws.write("workspace:reports/", "x")
    assert _tree(conversation) == []
    assert history.changes() == []


def test_moving_a_file_to_a_path_ending_in_a_slash_is_refused_rather_than_renaming_it_to_the_folder_name(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-24: ``move`` renames; it does not drop a file into a folder."""
    (conversation / "a.txt").write_text("a")
    with pytest.raises(FileError, match="workspace:archive/ ends with /, which names a folder; give the full new path"):
        ws.move("workspace:a.txt", "workspace:archive/")
    assert _tree(conversation) == ["a.txt"]
    assert history.changes() == []


@pytest.mark.parametrize("call", ["read", "stat", "delete", "move"])
def test_a_file_named_with_a_trailing_slash_is_refused_as_not_a_folder(
    ws: Workspace, history: FileHistory, conversation: Path, call: str
) -> None:
    """P-FILE-18: ``a.txt/`` names a folder; the call is refused, not quietly read as ``a.txt``."""
    (conversation / "a.txt").write_text("a")
    actions: dict[str, Callable[[], object]] = {
        "read": lambda: ws.read("workspace:a.txt/"),
        "stat": lambda: ws.stat("workspace:a.txt/"),
        "delete": lambda: ws.delete("workspace:a.txt/"),
        "move": lambda: ws.move("workspace:a.txt/", "workspace:b.txt"),
    }
    with pytest.raises(
        FileError, match=r"workspace:a\.txt/ ends with /, which names a folder, but a\.txt is a file; leave out the /"
    ):
        actions[call]()
    assert _tree(conversation) == ["a.txt"]
    assert history.changes() == []


def test_folders_may_be_named_with_a_trailing_slash(ws: Workspace, conversation: Path) -> None:
    """P-FILE-18: ``{ "folder": "inbox/" }`` keeps working for every folder call."""
    ws.mkdir("workspace:inbox/")
    ws.write("workspace:inbox/a.txt", "a")
    assert [e.name for e in ws.list("workspace:inbox/")] == ["a.txt"]
    assert ws.stat("workspace:inbox/").kind == "dir"
    ws.move("workspace:inbox/", "workspace:archive/")
    ws.delete("workspace:archive/a.txt")
    ws.delete("workspace:archive/")
    assert _tree(conversation) == []


# -- Unicode forms ------------------------------------------------------------------------------


def test_a_name_differing_only_in_unicode_form_is_not_created_beside_an_existing_one(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-17: two names that look the same would leave the user unable to tell which is which."""
    (conversation / f"{NFC}.txt").write_text("the user's")
    (conversation / NFC).mkdir()
    (conversation / "a.txt").write_text("a")
    calls: list[Callable[[], object]] = [
        lambda: ws.write(f"workspace:{NFD}.txt", "lookalike"),
        lambda: ws.mkdir(f"workspace:{NFD}"),
        lambda: ws.write(f"workspace:{NFD}/inner.txt", "inside a lookalike folder"),
        lambda: ws.move("workspace:a.txt", f"workspace:{NFD}.txt"),
    ]
    for call in calls:
        with pytest.raises(
            FileExistsInWorkspaceError, match="in another Unicode form; use the name exactly as list gives it"
        ):
            call()
    assert _tree(conversation) == sorted(["a.txt", NFC, f"{NFC}.txt"])
    assert (conversation / f"{NFC}.txt").read_text() == "the user's"
    assert history.changes() == []


def test_the_exact_name_of_an_entry_still_reaches_it(ws: Workspace, conversation: Path) -> None:
    """P-FILE-17: the name as ``list`` gives it, decomposed or not, reaches the entry."""
    (conversation / f"{NFD}.txt").write_text("decomposed")
    ws.write(f"workspace:{NFD}.txt", "replaced")
    assert (conversation / f"{NFD}.txt").read_text() == "replaced"


# -- names that show as another name -----------------------------------------------------------

DECEPTIVE = {
    "right-to-left override": ("invoice\u202efdp.exe", "U+202E"),
    "right-to-left isolate": ("report\u2067txt.exe", "U+2067"),
    "right-to-left mark": ("notes\u200f.txt", "U+200F"),
    "newline": ("summary\n.txt", "U+000A"),
    "terminal escape": ("plan\x1b[2J.txt", "U+001B"),
    "delete": ("old\x7f.txt", "U+007F"),
}


@pytest.mark.parametrize(("name", "code"), list(DECEPTIVE.values()), ids=list(DECEPTIVE))
def test_a_new_name_with_a_control_or_direction_character_is_refused_and_creates_nothing(
    ws: Workspace, history: FileHistory, conversation: Path, name: str, code: str
) -> None:
    """P-FILE-17: ``invoice\u202efdp.exe`` shows as ``invoiceexe.pdf``; a gem may not name the user's
    files so that they read as something else, nor put line breaks or escapes in a listing."""
    (conversation / "a.txt").write_text("a")
    calls: list[Callable[[], object]] = [
        lambda: ws.write(f"workspace:{name}", "x"),
        lambda: ws.mkdir(f"workspace:{name}"),
        lambda: ws.write(f"workspace:new/{name}/inner.txt", "x"),
        lambda: ws.move("workspace:a.txt", f"workspace:{name}"),
    ]
    for call in calls:
        with pytest.raises(FileError, match="control or text-direction character") as refused:
            call()
        assert code in str(refused.value)
        assert "choose a name without it" in str(refused.value)
        # the message itself carries no raw control or direction character
        assert str(refused.value).isprintable()
    assert _tree(conversation) == ["a.txt"]
    assert history.changes() == []


def test_a_name_the_user_gave_with_such_a_character_stays_reachable(ws: Workspace, conversation: Path) -> None:
    """P-FILE-19: only new names are refused; what the user made keeps working."""
    name = DECEPTIVE["right-to-left override"][0]
    (conversation / name).mkdir()
    (conversation / name / "old.txt").write_text("old")
    assert [e.name for e in ws.list(f"workspace:{name}")] == ["old.txt"]
    ws.write(f"workspace:{name}/old.txt", "replaced")
    ws.write(f"workspace:{name}/new.txt", "new")
    ws.move(f"workspace:{name}/new.txt", f"workspace:{name}/newer.txt")
    assert sorted(p.name for p in (conversation / name).iterdir()) == ["newer.txt", "old.txt"]


# -- names that are not text --------------------------------------------------------------------


def test_a_change_through_a_link_to_a_name_that_is_not_text_is_refused_in_words(
    ws: Workspace, history: FileHistory, conversation: Path
) -> None:
    """P-FILE-21: the history records every change by name; a name it cannot hold is refused
    before anything changes, and the link can still be read."""
    target = conversation / os.fsdecode(b"r\xe9sum\xe9.txt")
    target.write_bytes(b"cv")
    (conversation / "cv.txt").symlink_to(target)
    changes: list[Callable[[], object]] = [
        lambda: ws.write("workspace:cv.txt", "new"),
        lambda: ws.delete("workspace:cv.txt"),
        lambda: ws.move("workspace:cv.txt", "workspace:moved.txt"),
    ]
    for call in changes:
        with pytest.raises(
            FileError, match=r"leads to a name that is not UTF-8 text \('r\\udce9sum\\udce9\.txt'\)"
        ) as info:
            call()
        assert str(conversation) not in str(info.value), "a gem is not told where the user keeps the folder"
    assert target.read_bytes() == b"cv"
    assert ws.read("workspace:cv.txt") == b"cv"
    assert history.changes() == []


def test_a_folder_whose_own_path_is_not_text_is_refused_in_words(
    make_workspace: MakeWorkspace, history: FileHistory, tmp_path: Path
) -> None:
    """P-FILE-21: the words never show the folder's location, which a gem is not told."""
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    ws = make_workspace(root=folder)
    with pytest.raises(FileError, match="the location of this folder holds a name that is not UTF-8 text") as info:
        ws.write("workspace:a.txt", "x")
    assert str(tmp_path) not in str(info.value), "a gem is not told where the user keeps the folder"
    assert list(folder.iterdir()) == []
    assert history.changes() == []


# -- links the tool's own process made -----------------------------------------------------------


def test_a_link_that_loops_is_refused_as_a_loop_not_as_a_race(
    make_workspace: MakeWorkspace, conversation: Path
) -> None:
    """OD-P06: the tool process can leave any link in its run folder; the error says what it is."""
    run = conversation / "runs" / "t"
    run.mkdir(parents=True)
    (run / "loop").symlink_to("loop")
    (run / "a").symlink_to("b")
    (run / "b").symlink_to("a")
    ws = make_workspace(run_root=run)
    for path in ("run:loop", "run:a", "run:loop/inner.txt"):
        for call in (ws.read, ws.stat, lambda p: ws.write(p, "x")):
            with pytest.raises(FilePermissionError, match=f"{path} goes through a link that leads round in a loop"):
                call(path)


# -- concurrent writers --------------------------------------------------------------------------


def test_list_survives_an_entry_removed_while_the_folder_is_listed(
    ws: Workspace, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-19: another run deleting a file mid-listing must not make the whole folder "not exist"."""
    (conversation / "a.txt").write_text("a")
    (conversation / "b.txt").write_text("b")
    real_scandir = os.scandir

    def scandir_then_delete(fd: int) -> Iterator[os.DirEntry[str]]:
        with real_scandir(fd) as scan:
            entries = list(scan)
        (conversation / "a.txt").unlink()
        yield from entries

    class Scan:
        def __init__(self, fd: int) -> None:
            self._entries = scandir_then_delete(fd)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return self._entries

        def __exit__(self, *_exc: object) -> None:
            return None

    monkeypatch.setattr("notochord.files.workspace.os.scandir", Scan)
    assert [e.name for e in ws.list("workspace:")] == ["b.txt"]


def test_a_file_appearing_while_a_new_file_is_written_is_not_replaced_without_a_copy(
    ws: Workspace, history: FileHistory, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-22: only a version saved first may be replaced. A file the user creates after the
    write looked and found nothing must survive, and the gem is told to write again."""
    real_lstat = workspace_module._lstat

    def the_user_saves_first(name: str, parent: int) -> os.stat_result | None:
        if name != "report.md":
            return real_lstat(name, parent)
        if real_lstat(name, parent) is None:
            (conversation / "report.md").write_text("the user's report")
        return None

    monkeypatch.setattr(workspace_module, "_lstat", the_user_saves_first)
    with pytest.raises(FileExistsInWorkspaceError, match=r"workspace:report\.md appeared while it was written"):
        ws.write("workspace:report.md", "the gem's report")
    assert _tree(conversation) == ["report.md"], "no temporary file is left behind"
    assert (conversation / "report.md").read_text() == "the user's report"
    assert history.changes() == []


@pytest.mark.skipif(not can_rename_noreplace(), reason="the system has no rename that refuses an existing target")
def test_a_folder_appearing_at_the_target_between_the_check_and_the_move_is_not_replaced(
    ws: Workspace, history: FileHistory, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-24: the rename itself refuses an existing target; a check before it is not enough,
    since another run may create the target in between."""
    real_lstat = workspace_module._lstat

    def another_run_creates_the_target(name: str, parent: int) -> os.stat_result | None:
        if name != "B":
            return real_lstat(name, parent)
        # every check looks before the other run's mkdir lands; an empty folder is what rename()
        # would silently replace
        if real_lstat(name, parent) is None:
            os.mkdir("B", dir_fd=parent)
        return None

    monkeypatch.setattr(workspace_module, "_lstat", another_run_creates_the_target)
    with pytest.raises(FileExistsInWorkspaceError):
        ws.move("workspace:A", "workspace:B")
    assert (project / "A" / "plan.txt").read_text() == "plan"
    assert (project / "B").is_dir()
    assert history.changes() == []


@pytest.mark.skipif(not can_exchange(), reason="the system has no rename that swaps two files")
def test_an_edit_the_user_saves_while_a_gem_overwrites_the_file_is_what_the_history_keeps(
    ws: Workspace, history: FileHistory, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-22: the history keeps the version the write actually replaced. The user's editor may
    save the file after the old version was read into the history and before the new one lands;
    that edit must be in the history, so that rolling the run back brings it back."""
    (conversation / "notes.md").write_text("the first notes")
    real_save_old = Workspace._save_old

    def the_user_saves_meanwhile(self: Workspace, *args: Any) -> bool:
        kept = real_save_old(self, *args)
        (conversation / "notes.md").write_text("the user's latest edit")
        return kept

    monkeypatch.setattr(Workspace, "_save_old", the_user_saves_meanwhile)
    ws.write("workspace:notes.md", "the gem's notes")
    assert (conversation / "notes.md").read_text() == "the gem's notes"
    assert _tree(conversation) == ["notes.md"], "no temporary file is left behind"
    [change] = history.changes()
    assert history.old_version(change.id) == b"the user's latest edit"
    report = history.rollback_run(change.run_id)
    assert report.restored == ("workspace:notes.md",)
    assert (conversation / "notes.md").read_text() == "the user's latest edit"


@pytest.mark.skipif(not can_exchange(), reason="the system has no rename that swaps two files")
def test_when_the_edit_saved_meanwhile_cannot_be_kept_the_write_fails_and_leaves_the_edit_in_place(
    ws: Workspace, history: FileHistory, conversation: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-FILE-22: a version no history holds is never replaced; the gem is told the write failed."""
    (conversation / "notes.md").write_text("the first notes")
    real_save_old = Workspace._save_old
    real_write = Versions.write

    def the_user_saves_meanwhile(self: Workspace, *args: Any) -> bool:
        kept = real_save_old(self, *args)
        (conversation / "notes.md").write_text("the user's latest edit")
        monkeypatch.setattr(Versions, "write", the_disk_fills)
        return kept

    def the_disk_fills(self: Versions, source: Any) -> Incoming:
        raise FileError("the disk is full")

    monkeypatch.setattr(Workspace, "_save_old", the_user_saves_meanwhile)
    with pytest.raises(FileError, match="the disk is full"):
        ws.write("workspace:notes.md", "the gem's notes")
    monkeypatch.setattr(Versions, "write", real_write)
    assert (conversation / "notes.md").read_text() == "the user's latest edit"
    assert _tree(conversation) == ["notes.md"], "no temporary file is left behind"
    assert history.changes() == []
