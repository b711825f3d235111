"""Run folders around a run, and scheduled runs with a working folder: P-FILE-03…15, 25, 27, 29."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace

from notochord.errors import FileNotFoundInWorkspaceError, FilePermissionError
from notochord.gems.api.files import file_changes, rollback_run, start_run

pytestmark = pytest.mark.anyio

STAMP = "20260929-100000"
"""The fixed clock's 08:00 UTC in Amsterdam local time (OD-P08)."""


async def test_a_run_from_a_chat_gets_its_folder_in_the_conversation(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-03, P-FILE-07, P-FILE-09, P-FILE-12: results stay in ``runs/…``; ``tmp/`` goes on success."""
    ctx = gem_space.ctx(gem, conversation=chat)
    run = start_run(gem_space.request(ctx), name="weekly report")
    assert run.relative == f"runs/weekly-report-{STAMP}"
    assert (chat / run.relative / "tmp").is_dir()

    await ctx.files.write("run:tmp/draft.md", "draft")
    await ctx.files.write("output/report.md", "# Report")
    assert (chat / run.relative / "output" / "report.md").read_text() == "# Report"

    result = run.finish("success", {"pages": 3})

    assert result == {"output": {"pages": 3}, "folder": f"runs/weekly-report-{STAMP}"}
    assert not (chat / run.relative / "tmp").exists()
    assert await ctx.files.read_text(f"workspace:{run.relative}/output/report.md") == "# Report"


async def test_a_run_that_leaves_no_files_passes_its_output_through(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-11, P-FILE-13: the empty folder is deleted and the output is unchanged."""
    ctx = gem_space.ctx(gem, conversation=chat)
    run = start_run(gem_space.request(ctx), name="lookup")
    await ctx.files.write("run:tmp/scratch.txt", "scratch")
    assert run.finish("success", "answer") == "answer"
    assert not (chat / "runs").exists()
    with pytest.raises(FilePermissionError):
        await ctx.files.read("run:tmp/scratch.txt")


async def test_a_failed_run_keeps_tmp_for_a_retry_in_the_same_folder(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-09, P-FILE-10: ``tmp/`` stays after a failure; the retry skips steps that succeeded."""
    ctx = gem_space.ctx(gem, conversation=chat)
    run = start_run(gem_space.request(ctx), name="import")
    calls: list[str] = []

    def download(label: str, result: str) -> str:
        calls.append(label)
        return result

    run.step("download", lambda: download("download", "pages"))
    await ctx.files.write("run:tmp/page-1.html", "<html>")
    failed = run.finish("failure", None)
    assert failed == {"output": None, "folder": run.relative}
    assert (chat / run.relative / "tmp" / "page-1.html").exists()

    retry_ctx = gem_space.ctx(gem, conversation=chat)
    retry = start_run(gem_space.request(retry_ctx), name="import", resume=run.relative)
    assert retry.path == run.path
    assert retry.step("download", lambda: download("download again", "other")) == "pages"
    assert calls == ["download"]
    assert await retry_ctx.files.read_text("run:tmp/page-1.html") == "<html>"
    assert retry.finish("success", "done") == "done"


async def test_an_exposed_agent_returns_reply_and_folder(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-04, P-FILE-14."""
    ctx = gem_space.ctx(gem, conversation=chat)
    run = start_run(gem_space.request(ctx), name="researcher")
    await ctx.files.write("run:output/notes.md", "notes")
    assert run.finish("success", "I wrote notes", agent=True) == {
        "reply": "I wrote notes",
        "folder": f"runs/researcher-{STAMP}",
    }


async def test_tools_called_from_a_sop_share_its_run_folder(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-06: a second start for the same run joins the folder; only the SOP's finish ends it."""
    sop_ctx = gem_space.ctx(gem, conversation=chat, run_id="run-sop")
    sop = start_run(gem_space.request(sop_ctx), name="sop")
    tool_ctx = gem_space.ctx(gem, conversation=chat, run_id="run-sop")
    tool = start_run(gem_space.request(tool_ctx), name="tool")
    assert tool.path == sop.path
    await tool_ctx.files.write("run:output/part.md", "part")
    assert tool.finish("success", "tool output") == "tool output"
    assert await sop_ctx.files.read_text("run:output/part.md") == "part"
    assert sop.finish("success", "sop output") == {"output": "sop output", "folder": sop.relative}


async def test_publishing_from_the_run_folder_is_recorded_and_rolled_back(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-21, P-FILE-25: a move from ``run:`` into the conversation is one change of the run."""
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-publish")
    run = start_run(gem_space.request(ctx), name="publish")
    await ctx.files.write("run:log.md", "published the report")
    await ctx.files.write("run:output/report.md", "# Report")
    await ctx.files.move("run:output/report.md", "workspace:report.md")
    assert (chat / "report.md").read_text() == "# Report"
    assert [c.op for c in file_changes(gem_space.data_dir, chat, run_id="run-publish")][-1] == "move"
    run.finish("success", None)

    report = rollback_run(gem_space.data_dir, chat, "run-publish")
    assert not (chat / "report.md").exists()
    assert not (run.path / "output").exists()
    assert not (run.path / "log.md").exists()
    assert report.skipped == ()


async def test_another_gem_cannot_use_a_run_folder_by_its_run_id(gem_space: GemSpace, gem: str, chat: Path) -> None:
    gem_space.install("other")
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-shared-id")
    run = start_run(gem_space.request(ctx), name="mine")
    await ctx.files.write("run:output/secret.md", "mine")
    intruder = gem_space.ctx("other", run_id="run-shared-id")
    with pytest.raises(FilePermissionError):
        await intruder.files.read("run:output/secret.md")
    run.finish("success", None)


# -- runs without a conversation ---------------------------------------------------------------


async def test_a_scheduled_run_gets_its_folder_in_the_gems_own_folder(gem_space: GemSpace, gem: str) -> None:
    """P-FILE-05, P-STOR-10: plain files under ``<data_dir>/gems/<space>/<gem>/runs/``."""
    ctx = gem_space.ctx(gem)
    run = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    assert run.path == gem_space.data_dir.resolve() / "gems" / "personal" / gem / "runs" / f"nightly-{STAMP}"
    await ctx.files.write("run:output/summary.md", "summary")
    assert (run.path / "output" / "summary.md").read_text() == "summary"
    assert run.finish("success", 1) == {"output": 1, "folder": f"runs/nightly-{STAMP}"}


async def test_a_scheduled_run_without_a_working_folder_has_no_workspace(gem_space: GemSpace, gem: str) -> None:
    """P-FILE-27, P-FILE-29: no folder chosen, no ``workspace:``."""
    ctx = gem_space.ctx(gem)
    run = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    with pytest.raises(FilePermissionError) as raised:
        await ctx.files.write("workspace:out.md", "x")
    assert raised.value.code == "E_PERM_DENIED"
    run.finish("success", None)


async def test_a_scheduled_run_uses_the_working_folder_chosen_for_the_gem(
    gem_space: GemSpace, gem: str, tmp_path: Path
) -> None:
    """P-FILE-29, P-FILE-33: ``workspace:`` is the chosen folder; changes are recorded and undoable."""
    project = tmp_path / "projects" / "invoices"
    project.mkdir(parents=True)
    (project / "ledger.csv").write_text("a,b\n")
    (project / ".secret").write_text("hidden")
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)

    ctx = gem_space.ctx(gem, run_id="run-nightly")
    run = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    assert [e["name"] for e in await ctx.files.list("workspace:")] == ["ledger.csv"]
    await ctx.files.write("workspace:ledger.csv", "a,b\n1,2\n")
    await ctx.files.write("run:output/log.md", "updated the ledger")
    assert (project / "ledger.csv").read_text() == "a,b\n1,2\n"
    run.finish("success", None)

    changes = file_changes(gem_space.data_dir, project, run_id="run-nightly")
    assert [(c.op, c.display) for c in changes] == [
        ("overwrite", "workspace:ledger.csv"),
        ("mkdir", "run:output"),
        ("create", "run:output/log.md"),
    ]
    rollback_run(gem_space.data_dir, project, "run-nightly")
    assert (project / "ledger.csv").read_text() == "a,b\n"


async def test_a_working_folder_that_now_leads_into_home_is_refused_at_use(
    gem_space: GemSpace, gem: str, tmp_path: Path, home: Path
) -> None:
    """P-FILE-31: the rules are applied again each time the folder is used."""
    project = tmp_path / "projects" / "shared"
    project.mkdir(parents=True)
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)
    project.rmdir()
    project.symlink_to(home)

    ctx = gem_space.ctx(gem)
    run = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    with pytest.raises(FilePermissionError, match=r"home folder"):
        await ctx.files.list("workspace:")
    await ctx.files.write("run:output/note.md", "the run folder still works")
    run.finish("success", None)


async def test_a_working_folder_that_was_deleted_is_refused_at_use(
    gem_space: GemSpace, gem: str, tmp_path: Path
) -> None:
    project = tmp_path / "projects" / "old"
    project.mkdir(parents=True)
    gem_space.folders.set_working_folder(gem, project, core=gem_space.space.core)
    os.rmdir(project)
    ctx = gem_space.ctx(gem)
    run = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    with pytest.raises(FilePermissionError, match="can no longer be used"):
        await ctx.files.read("workspace:a.txt")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await ctx.files.read("run:missing.txt")
    run.finish("success", None)


async def test_uninstall_deletes_run_folders_in_the_gem_folder_but_keeps_those_in_conversations(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """P-FILE-15."""
    chat_ctx = gem_space.ctx(gem, conversation=chat)
    chat_run = start_run(gem_space.request(chat_ctx), name="chat")
    await chat_ctx.files.write("run:output/kept.md", "the user's file")
    chat_run.finish("success", None)
    ctx = gem_space.ctx(gem)
    scheduled = start_run(gem_space.request(ctx), name="nightly", scheduled=True)
    await ctx.files.write("run:output/gone.md", "the gem's file")
    scheduled.finish("success", None)

    gem_space.uninstall(gem)

    assert (chat / chat_run.relative / "output" / "kept.md").read_text() == "the user's file"
    assert not scheduled.path.exists()
    assert not gem_space.folders.folder(gem).exists()
