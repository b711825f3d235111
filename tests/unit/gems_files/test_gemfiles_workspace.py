"""``ctx.files`` in a conversation: P-FILE-01, 02, 16…27, OD-P06, OD-P13."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import (
    FileError,
    FileExistsInWorkspaceError,
    FileNotFoundInWorkspaceError,
    FilePermissionError,
)
from notochord.gems.api.files import file_changes, rollback_run
from notochord.gems.folders import history_dir

pytestmark = pytest.mark.anyio


async def test_every_tool_has_files_without_asking_and_writes_land_in_the_conversation(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-02, P-FILE-17: no permission is switched on; ``workspace:`` is the conversation folder."""
    ctx = gem_space.ctx(gem, conversation=chat)
    await ctx.files.write("workspace:notes/today.md", "# Today\n")
    assert (chat / "notes" / "today.md").read_text(encoding="utf-8") == "# Today\n"
    assert await ctx.files.read_text("workspace:notes/today.md") == "# Today\n"
    assert await ctx.files.read("workspace:notes/today.md") == b"# Today\n"


async def test_list_and_stat_return_plain_data_with_iso_times(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-19: ``list`` gives the entries for the gem to handle itself."""
    (chat / "inbox").mkdir()
    (chat / "inbox" / "invoice.pdf").write_bytes(b"%PDF-1.7")
    ctx = gem_space.ctx(gem, conversation=chat)

    entries = await ctx.files.list("workspace:")
    assert entries == [{"name": "inbox", "kind": "dir", "size": 0, "modified": entries[0]["modified"]}]
    listed = await ctx.files.list("workspace:inbox/")
    assert [(e["name"], e["kind"], e["size"]) for e in listed] == [("invoice.pdf", "file", 8)]
    info = await ctx.files.stat("workspace:inbox/invoice.pdf")
    assert info["size"] == 8
    assert info["kind"] == "file"
    assert isinstance(info["modified"], str)
    assert info["modified"].endswith("Z")


async def test_every_change_is_recorded_with_the_run_and_the_gem(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-21…24: write, overwrite, move, delete and mkdir each leave a history entry."""
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-history")
    await ctx.files.write("workspace:a.txt", "one")
    await ctx.files.write("workspace:a.txt", "two")
    await ctx.files.mkdir("workspace:archive")
    await ctx.files.move("workspace:a.txt", "workspace:archive/a.txt")
    await ctx.files.delete("workspace:archive/a.txt")

    changes = file_changes(gem_space.data_dir, chat, run_id="run-history")
    assert [(c.op, c.display, c.dest_display) for c in changes] == [
        ("create", "workspace:a.txt", None),
        ("overwrite", "workspace:a.txt", None),
        ("mkdir", "workspace:archive", None),
        ("move", "workspace:a.txt", "workspace:archive/a.txt"),
        ("delete", "workspace:archive/a.txt", None),
    ]
    assert {c.actor for c in changes} == {"gem:recipes"}
    assert {c.status for c in changes} == {"applied"}
    assert changes[1].old_in_history, "the replaced version is saved before overwriting (P-FILE-22)"
    assert changes[4].old_in_history
    assert changes[4].old_in_trash, "delete moves the file to the trash and keeps a copy (P-FILE-23)"


async def test_history_is_kept_outside_the_conversation_where_no_gem_can_see_it(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    ctx = gem_space.ctx(gem, conversation=chat)
    await ctx.files.write("workspace:a.txt", "one")
    store = history_dir(gem_space.data_dir, chat)
    assert (store / "history.db").is_file()
    assert not store.is_relative_to(chat.resolve())
    assert sorted(p.name for p in chat.iterdir()) == ["a.txt"]


async def test_move_onto_an_existing_file_is_refused(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-24."""
    (chat / "a.txt").write_text("a")
    (chat / "b.txt").write_text("b")
    ctx = gem_space.ctx(gem, conversation=chat)
    with pytest.raises(FileExistsInWorkspaceError) as raised:
        await ctx.files.move("workspace:a.txt", "workspace:b.txt")
    assert raised.value.code == "E_EXISTS"
    assert (chat / "b.txt").read_text() == "b"


async def test_rollback_of_a_run_restores_what_it_changed_and_spares_later_edits(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-25: the run's files go back to their state before it; files changed since stay."""
    (chat / "kept.txt").write_text("original")
    (chat / "edited.txt").write_text("original")
    (chat / "gone.txt").write_text("original")
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-branch")
    await ctx.files.write("workspace:kept.txt", "by the gem")
    await ctx.files.write("workspace:edited.txt", "by the gem")
    await ctx.files.write("workspace:new.txt", "by the gem")
    await ctx.files.delete("workspace:gone.txt")
    (chat / "edited.txt").write_text("by the user afterwards")

    report = rollback_run(gem_space.data_dir, chat, "run-branch")

    assert (chat / "kept.txt").read_text() == "original"
    assert (chat / "gone.txt").read_text() == "original"
    assert not (chat / "new.txt").exists()
    assert (chat / "edited.txt").read_text() == "by the user afterwards"
    assert set(report.restored) == {"workspace:kept.txt", "workspace:new.txt", "workspace:gone.txt"}
    assert report.skipped == ("workspace:edited.txt",)
    assert rollback_run(gem_space.data_dir, chat, "run-branch").restored == (), "not undone twice"


async def test_rollback_of_a_folder_without_history_changes_nothing(gem_space: GemSpace, chat: Path) -> None:
    report = rollback_run(gem_space.data_dir, chat, "run-unknown")
    assert (report.restored, report.skipped) == ((), ())
    assert not history_dir(gem_space.data_dir, chat).exists()


async def test_dotfiles_do_not_exist_for_a_gem(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-20, OD-P06: not listed; reading is E_NOT_FOUND; writing is E_PERM_DENIED."""
    (chat / ".env").write_text("TOKEN=secret")
    (chat / ".git").mkdir()
    (chat / ".git" / "config").write_text("[core]")
    (chat / "visible.txt").write_text("hello")
    ctx = gem_space.ctx(gem, conversation=chat)

    assert [e["name"] for e in await ctx.files.list("workspace:")] == ["visible.txt"]
    for hidden in ("workspace:.env", "workspace:.git/config"):
        with pytest.raises(FileNotFoundInWorkspaceError):
            await ctx.files.read(hidden)
        with pytest.raises(FileNotFoundInWorkspaceError):
            await ctx.files.stat(hidden)
    with pytest.raises(FilePermissionError):
        await ctx.files.write("workspace:.env", "TOKEN=stolen")
    with pytest.raises(FilePermissionError):
        await ctx.files.delete("workspace:.env")
    with pytest.raises(FilePermissionError):
        await ctx.files.move("workspace:visible.txt", "workspace:.hidden")
    with pytest.raises(FilePermissionError):
        await ctx.files.mkdir("workspace:.cache")
    assert (chat / ".env").read_text() == "TOKEN=secret"
    assert (chat / "visible.txt").exists()


@pytest.mark.parametrize(
    "path",
    [
        "workspace:../outside.txt",
        "workspace:notes/../../outside.txt",
        "workspace:/etc/passwd",
        "workspace:C:\\Windows\\win.ini",
        "workspace:escape/outside.txt",
        "worksapce:outside.txt",
    ],
)
async def test_escape_attempts_are_refused(gem_space: GemSpace, gem: str, chat: Path, path: str) -> None:
    """P-FILE-01, OD-P06: absolute paths, ``..`` above the root, links out and unknown prefixes."""
    outside = chat.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "outside.txt").write_text("private")
    (chat / "escape").symlink_to(outside)
    ctx = gem_space.ctx(gem, conversation=chat)
    with pytest.raises(FilePermissionError) as raised:
        await ctx.files.read(path)
    assert raised.value.code == "E_PERM_DENIED"
    with pytest.raises(FilePermissionError):
        await ctx.files.write(path, "overwritten")
    assert (outside / "outside.txt").read_text() == "private"


async def test_without_a_conversation_workspace_is_refused(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-27, OD-P13: a call started from a page gets E_PERM_DENIED for ``workspace:``."""
    ctx = gem_space.ctx(gem)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: ctx.files.list("workspace:"),
        lambda: ctx.files.write("workspace:a.txt", "x"),
        lambda: ctx.files.read("a.txt"),
    ]
    for call in calls:
        with pytest.raises(FilePermissionError) as raised:
            await call()
        assert raised.value.code == "E_PERM_DENIED"
        assert "E_PERM_DENIED" in str(raised.value)
    assert not (gem_space.data_dir / "history").exists(), "a refused call leaves no trace"


async def test_a_working_folder_does_not_open_workspace_to_calls_that_are_not_scheduled(
    gem_space: GemSpace, gem: str, tmp_path: Path
) -> None:
    """P-FILE-27/29: the chosen folder is the ``workspace:`` of scheduled SOPs only."""
    project = tmp_path / "projects" / "invoices"
    project.mkdir(parents=True)
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)
    ctx = gem_space.ctx(gem)
    with pytest.raises(FilePermissionError):
        await ctx.files.list("workspace:")


async def test_writes_are_refused_with_wrong_argument_types(gem_space: GemSpace, gem: str, chat: Path) -> None:
    ctx = gem_space.ctx(gem, conversation=chat)
    with pytest.raises(FileError, match="text or bytes"):
        await ctx.files.write("workspace:a.txt", {"not": "bytes"})
    assert os.listdir(chat) == []


async def test_a_conversation_folder_holding_the_data_directory_is_refused(gem_space: GemSpace, gem: str) -> None:
    """P-FILE-01: the history, the trash and every gem's storage stay out of reach."""
    parent = gem_space.data_dir.parent
    ctx = gem_space.ctx(gem, conversation=parent)
    with pytest.raises(FilePermissionError, match="contains notochord's data directory"):
        await ctx.files.list("workspace:")
    with pytest.raises(FilePermissionError):
        await ctx.files.read(f"workspace:{gem_space.data_dir.name}/master.key")
