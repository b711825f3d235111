"""``notochord runs undo RUN`` says why each file it left alone was skipped, as ``files rollback`` does.

Covers P-FILE-25 (files changed since by anything else are left alone and named) through the
command a person reaches for first: the later run in the way (roll that one back first), or a
change made outside since (it stays as it is). ``--json`` gives a ``reasons`` object, path to
reason, beside ``restored`` and ``skipped``, in the shape ``files rollback --json`` answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

from one_tool_gem import WRITES_EACH_NAME, one_tool_gem


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


@pytest.fixture
def chat(cli: Cli, tmp_path: Path) -> Path:
    """A conversation folder, and the gem ``writer`` installed: its tool writes each name of its
    input there with the text given."""
    cli.run("gem", "install", str(one_tool_gem(tmp_path / "writer", "writer", WRITES_EACH_NAME)))
    conversation = tmp_path / "chat"
    conversation.mkdir()
    return conversation


def _run(cli: Cli, chat: Path, run_id: str, files: dict[str, str]) -> None:
    cli.run("gem", "run", "writer", "--conversation", str(chat), "--run-id", run_id, "--input", json.dumps(files))


def test_p_file_25_runs_undo_names_the_later_run_in_the_way_and_the_change_made_outside(cli: Cli, chat: Path) -> None:
    """Each skipped path on a line of its own with its reason; the restored one is restored."""
    _run(cli, chat, "run-first", {"menu.md": "first", "plan.md": "first", "notes.md": "first"})
    _run(cli, chat, "run-later", {"plan.md": "later"})
    (chat / "menu.md").write_text("edited by me", encoding="utf-8")

    said = cli.run("runs", "undo", "run-first").stdout

    lines = said.splitlines()
    assert lines[0] == "run run-first: restored 1 file; left 2 files alone"
    assert sorted(lines[1:]) == [
        "skipped  workspace:menu.md (it changed since (by the user or another program), so it stays as it is)",
        "skipped  workspace:plan.md (run run-later later changed workspace:plan.md; roll that run back first)",
    ]
    assert "changed since alone" not in said
    assert not (chat / "notes.md").exists()
    assert (chat / "menu.md").read_text(encoding="utf-8") == "edited by me"
    assert (chat / "plan.md").read_text(encoding="utf-8") == "later"


def test_p_file_25_runs_undo_json_gives_the_reason_of_every_skipped_path(cli: Cli, chat: Path) -> None:
    _run(cli, chat, "run-first", {"menu.md": "first", "notes.md": "first"})
    (chat / "menu.md").write_text("edited by me", encoding="utf-8")

    undone = cli.json("runs", "undo", "run-first")

    files = undone["files"]
    assert files["restored"] == ["workspace:notes.md"]
    assert files["skipped"] == ["workspace:menu.md"]
    assert list(files["reasons"]) == ["workspace:menu.md"]
    assert "changed since" in files["reasons"]["workspace:menu.md"]
    again = cli.json("runs", "undo", "run-first")
    assert again["files"] == {
        "restored": [],
        "skipped": ["workspace:menu.md"],
        "reasons": {"workspace:menu.md": files["reasons"]["workspace:menu.md"]},
    }


def test_runs_undo_json_of_a_run_that_wrote_nothing_has_the_same_shape(cli: Cli, chat: Path) -> None:
    """A run called from a conversation that wrote no file: empty lists and no reasons, not a
    shape of its own that a script would have to special-case."""
    _run(cli, chat, "run-idle", {})
    assert cli.json("runs", "undo", "run-idle")["files"] == {"restored": [], "skipped": [], "reasons": {}}
