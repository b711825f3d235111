"""``notochord files``: history, rollback and the working folder from the command line.

P-FILE-21 (the history is visible), P-FILE-25 (a run can be undone), P-FILE-29/31 (choosing a
working folder, refusals exit with code 4 like every permission refusal).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gemfiles_fixtures import GemSpace
from typer.testing import CliRunner

from notochord.cli import files_cmd

pytestmark = pytest.mark.anyio


def _run(data_dir: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(files_cmd.app, [*args, "--data-dir", str(data_dir)])
    assert result.exit_code == code, f"{args}: {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _json(data_dir: Path, *args: str) -> Any:
    return json.loads(_run(data_dir, *args, "--json"))


async def test_history_lists_the_changes_of_a_folder_and_of_one_run(gem_space: GemSpace, gem: str, chat: Path) -> None:
    first = gem_space.ctx(gem, conversation=chat, run_id="run-one")
    await first.files.write("workspace:a.txt", "one")
    second = gem_space.ctx(gem, conversation=chat, run_id="run-two")
    await second.files.move("workspace:a.txt", "workspace:b.txt")

    everything = _json(gem_space.data_dir, "history", str(chat))
    assert [(c["runId"], c["op"], c["path"], c["to"]) for c in everything] == [
        ("run-one", "create", "workspace:a.txt", None),
        ("run-two", "move", "workspace:a.txt", "workspace:b.txt"),
    ]
    assert {c["actor"] for c in everything} == {"gem:recipes"}
    assert [c["runId"] for c in _json(gem_space.data_dir, "history", str(chat), "--run", "run-two")] == ["run-two"]
    assert "workspace:a.txt -> workspace:b.txt" in _run(gem_space.data_dir, "history", str(chat))


def test_history_of_an_untouched_folder_is_empty(gem_space: GemSpace, chat: Path) -> None:
    assert _json(gem_space.data_dir, "history", str(chat)) == []
    assert "no changes recorded" in _run(gem_space.data_dir, "history", str(chat))


async def test_rollback_restores_a_runs_files(gem_space: GemSpace, gem: str, chat: Path) -> None:
    (chat / "menu.md").write_text("original")
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-edit")
    await ctx.files.write("workspace:menu.md", "changed by the gem")

    report = _json(gem_space.data_dir, "rollback", str(chat), "run-edit")

    assert report == {"runId": "run-edit", "restored": ["workspace:menu.md"], "skipped": [], "reasons": {}}
    assert (chat / "menu.md").read_text() == "original"
    assert "changed nothing to restore" in _run(gem_space.data_dir, "rollback", str(chat), "run-edit")
    statuses = [c["status"] for c in _json(gem_space.data_dir, "history", str(chat))]
    assert statuses == ["rolled_back"]


def test_working_folder_can_be_chosen_shown_and_cleared(gem_space: GemSpace, gem: str, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "invoices"
    project.mkdir(parents=True)
    data_dir = gem_space.data_dir

    assert _json(data_dir, "working-folder", gem) == {"gem": gem, "workingFolder": None}
    chosen = _json(data_dir, "working-folder", gem, str(project))
    assert chosen == {"gem": gem, "workingFolder": str(project.resolve())}
    assert gem_space.folders.working_folder(gem, core=gem_space.space.core) == project.resolve()
    assert "is " + str(project.resolve()) in _run(data_dir, "working-folder", gem)
    assert _json(data_dir, "working-folder", gem, "--clear") == {"gem": gem, "workingFolder": None}
    assert gem_space.folders.working_folder(gem, core=gem_space.space.core) is None


def test_a_refused_working_folder_exits_with_the_permission_code(gem_space: GemSpace, gem: str, home: Path) -> None:
    """P-FILE-31: exit code 4, the rule named, nothing stored."""
    result = CliRunner().invoke(
        files_cmd.app, ["working-folder", gem, str(home), "--data-dir", str(gem_space.data_dir)]
    )
    assert result.exit_code == 4
    assert "(home folder)" in result.stderr
    assert gem_space.folders.working_folder(gem, core=gem_space.space.core) is None


def test_working_folder_of_an_unknown_gem_is_not_found(gem_space: GemSpace, tmp_path: Path) -> None:
    """An unknown gem is "not found", exit code 3."""
    _run(gem_space.data_dir, "working-folder", "ghost", str(tmp_path), code=3)
