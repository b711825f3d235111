"""``notochord files rollback`` says why each path it left alone was skipped: P-FILE-25.

A skipped path is not a failure, but the user has to know what to do about it: which later run is
in the way (roll that one back first), or that the file changed outside since (it stays as it is).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemfiles_fixtures import GemSpace
from typer.testing import CliRunner

from notochord.cli import files_cmd

pytestmark = pytest.mark.anyio


def _rollback(data_dir: Path, chat: Path, run_id: str, *extra: str) -> str:
    result = CliRunner().invoke(files_cmd.app, ["rollback", str(chat), run_id, "--data-dir", str(data_dir), *extra])
    assert result.exit_code == 0, f"{result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result.stdout


async def test_a_skipped_folder_move_names_the_later_run_in_the_way(gem_space: GemSpace, gem: str, chat: Path) -> None:
    """P-FILE-25: the folder stays, with the later run's file in it, and the text says which run to
    roll back first."""
    (chat / "drafts").mkdir()
    (chat / "drafts" / "plan.md").write_text("plan")
    await gem_space.ctx(gem, conversation=chat, run_id="run-tidy").files.move("workspace:drafts", "workspace:done")
    await gem_space.ctx(gem, conversation=chat, run_id="run-add").files.write("workspace:done/new.md", "later")

    text = _rollback(gem_space.data_dir, chat, "run-tidy")

    assert "skipped  workspace:done (run run-add later changed workspace:done/new.md; roll that run back first)" in text
    assert (chat / "done" / "new.md").read_text() == "later"
    assert not (chat / "drafts").exists()


async def test_the_json_answer_gives_the_reason_of_every_skipped_path(
    gem_space: GemSpace, gem: str, chat: Path
) -> None:
    (chat / "menu.md").write_text("original")
    await gem_space.ctx(gem, conversation=chat, run_id="run-edit").files.write("workspace:menu.md", "by the gem")
    (chat / "menu.md").write_text("edited by the user")

    report = json.loads(_rollback(gem_space.data_dir, chat, "run-edit", "--json"))

    assert report["skipped"] == ["workspace:menu.md"]
    assert list(report["reasons"]) == ["workspace:menu.md"]
    assert "changed since" in report["reasons"]["workspace:menu.md"]
    assert (chat / "menu.md").read_text() == "edited by the user"
