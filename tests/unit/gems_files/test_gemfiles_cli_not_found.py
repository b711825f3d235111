"""``notochord files``: an unknown run or a missing folder is not found, never an empty success.

P-FILE-21 (the history is visible), P-FILE-25 (a run can be undone). A mistyped run id or folder
used to answer exit 0 with "changed nothing" or an empty history, which reads as if there were
nothing to undo. Both now exit 3, as every unknown object does, name what was not found and say
where to look; they change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace
from typer.testing import CliRunner, Result

from notochord.cli import files_cmd

pytestmark = pytest.mark.anyio


def _invoke(data_dir: Path, *args: str) -> Result:
    return CliRunner().invoke(files_cmd.app, [*args, "--data-dir", str(data_dir)])


def _said(result: Result) -> str:
    return " ".join(result.stderr.split())


async def test_rolling_back_an_unknown_run_is_not_found_and_leaves_the_folder_alone(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    (chat / "menu.md").write_text("original")
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-edit")
    await ctx.files.write("workspace:menu.md", "changed by the gem")

    result = _invoke(gem_space.data_dir, "rollback", str(chat), "run-typo")

    assert result.exit_code == 3, result.output
    assert "run 'run-typo'" in _said(result)
    assert f"notochord files history {chat}" in _said(result)
    assert (chat / "menu.md").read_text() == "changed by the gem"
    history = json.loads(_invoke(gem_space.data_dir, "history", str(chat), "--json").stdout)
    assert [c["status"] for c in history] == ["applied"]


def test_rolling_back_in_a_folder_no_gem_changed_is_not_found(gem_space: GemSpace, chat: Path) -> None:
    result = _invoke(gem_space.data_dir, "rollback", str(chat), "run-edit")

    assert result.exit_code == 3, result.output
    assert "run 'run-edit'" in _said(result)


async def test_rolling_back_a_run_again_still_answers_that_nothing_is_left(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    """A known run whose files were restored is no error: the second rollback restores nothing."""
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-edit")
    await ctx.files.write("workspace:menu.md", "written by the gem")
    assert _invoke(gem_space.data_dir, "rollback", str(chat), "run-edit").exit_code == 0

    again = _invoke(gem_space.data_dir, "rollback", str(chat), "run-edit", "--json")

    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == {"runId": "run-edit", "restored": [], "skipped": [], "reasons": {}}


@pytest.mark.parametrize("command", [("history",), ("rollback",)], ids=["history", "rollback"])
def test_a_missing_folder_is_not_found_and_named(gem_space: GemSpace, tmp_path: Path, command: tuple[str]) -> None:
    missing = tmp_path / "no-such-chat"
    args = [*command, str(missing)] + (["run-edit"] if command == ("rollback",) else [])

    result = _invoke(gem_space.data_dir, *args)

    assert result.exit_code == 3, result.output
    assert f"the folder {missing} does not exist" in _said(result)
    assert not missing.exists()


def test_a_missing_folder_with_json_reports_e_not_found(gem_space: GemSpace, tmp_path: Path) -> None:
    result = _invoke(gem_space.data_dir, "history", str(tmp_path / "gone"), "--json")

    assert result.exit_code == 3, result.output
    error = json.loads(result.stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_NOT_FOUND", 3)


async def test_the_history_of_a_folder_deleted_since_is_still_shown(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """What gems did stays readable (and undoable) after the folder itself is gone."""
    ctx = gem_space.ctx(gem, conversation=chat, run_id="run-edit")
    await ctx.files.write("workspace:menu.md", "written by the gem")
    (chat / "menu.md").unlink()
    chat.rmdir()

    result = _invoke(gem_space.data_dir, "history", str(chat), "--json")

    assert result.exit_code == 0, result.output
    assert [c["runId"] for c in json.loads(result.stdout)] == ["run-edit"]
