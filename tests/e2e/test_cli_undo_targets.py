"""Undo names what it undid: an unknown run is not found, a run that wrote nothing says so.

``changes revert --run`` and ``runs undo`` used to answer an unknown run, or one that never wrote,
as if its changes had been undone before (``already_reverted``, exit 0). A typo in a run id must
read as a typo (exit 3, as for every unknown object), and a run that wrote nothing must not claim
that someone undid it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def _silent_gem(root: Path) -> Path:
    """A gem whose only tool answers without writing anything."""
    folder = root / "silent"
    folder.mkdir(parents=True)
    (folder / "main.py").write_text('async def run(input, ctx):\n    return "nothing to do"\n', encoding="utf-8")
    manifest = {
        "id": "silent",
        "name": "silent",
        "version": "1.0.0",
        "tools": [{"name": "main", "entry": "main.py"}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


# ---------------------------------------------------------------- changes revert --run


def test_reverting_an_unknown_run_is_not_found_and_changes_nothing(cli: Cli) -> None:
    """K-CHG-03: ``revert --run`` of a run id no change carries exits 3 and names the run."""
    cli.run("facts", "put", "pref.food.like", "sushi", "--as-assistant", "--run", "nightly-2026-09-29")

    refused = cli.run("changes", "revert", "--run", "nightly-2026-09-30", code=3)

    message = " ".join(refused.stderr.split())
    assert "no change of run 'nightly-2026-09-30'" in message
    assert "notochord changes list" in message
    assert cli.values("self", "pref.food") == ["sushi"]
    assert [c["status"] for c in cli.json("changes", "list")] == ["applied"]


def test_reverting_an_unknown_run_with_json_reports_e_not_found(cli: Cli) -> None:
    """The JSON error carries the stable code and the exit code."""
    result = cli.run("changes", "revert", "--run", "no-such-run", "--json", code=3)
    error = json.loads(result.stderr)["error"]
    assert (error["code"], error["exitCode"]) == ("E_NOT_FOUND", 3)
    assert "no-such-run" in error["message"]


def test_reverting_a_run_whose_changes_are_reverted_still_says_already_reverted(cli: Cli) -> None:
    """K-CHG-03, OD-K44: a known run keeps its answer; only unknown runs became errors."""
    cli.run("facts", "put", "pref.food.like", "ramen", "--as-assistant", "--run", "batch-1")
    assert cli.json("changes", "revert", "--run", "batch-1") == {"status": "reverted", "count": 1}
    assert cli.json("changes", "revert", "--run", "batch-1") == {"status": "already_reverted", "count": 0}


# ---------------------------------------------------------------- runs undo


def test_undoing_a_run_that_wrote_nothing_says_it_made_no_changes(cli: Cli, tmp_path: Path) -> None:
    """A run with no knowledge or file changes is neither reverted nor "already reverted"."""
    cli.run("gem", "install", str(_silent_gem(tmp_path)))
    cli.run("gem", "run", "silent")
    [run] = [r["run"] for r in cli.json("runs", "list")]

    said = cli.run("runs", "undo", run).stdout
    undone = cli.json("runs", "undo", run)

    assert said.strip() == f"run {run} made no changes; there is nothing to undo"
    assert "already" not in said
    assert undone["run"] == run
    assert undone["knowledge"] == {"status": "no_changes", "count": 0}
    assert cli.json("changes", "list") == []


def test_undoing_an_unknown_run_is_not_found_and_points_at_runs_list(cli: Cli) -> None:
    """Exit 3, as every unknown object; the message says where the run ids are listed."""
    refused = cli.run("runs", "undo", "run-0000", code=3)
    message = " ".join(refused.stderr.split())
    assert "no run 'run-0000'" in message
    assert "notochord runs list" in message


def test_undoing_a_run_that_only_wrote_files_restores_them_and_claims_no_knowledge_undo(
    cli: Cli, tmp_path: Path
) -> None:
    """P-FILE-25: the files come back; the knowledge part says the run wrote none, not "already reverted"."""
    gem = _silent_gem(tmp_path)
    source = 'async def run(input, ctx):\n    await ctx.files.write("workspace:menu.md", "by the gem")\n'
    (gem / "main.py").write_text(source, encoding="utf-8")
    chat = tmp_path / "chat"
    chat.mkdir()
    (chat / "menu.md").write_text("mine", encoding="utf-8")
    cli.run("gem", "install", str(gem))
    cli.run("gem", "run", "silent", "--conversation", str(chat))
    [run] = [r["run"] for r in cli.json("runs", "list")]
    assert (chat / "menu.md").read_text(encoding="utf-8") == "by the gem"

    said = cli.run("runs", "undo", run).stdout
    again = cli.json("runs", "undo", run)

    assert said.strip() == f"run {run}: restored 1 file"
    assert (chat / "menu.md").read_text(encoding="utf-8") == "mine"
    assert again["knowledge"] == {"status": "no_changes", "count": 0}
    assert again["files"] == {"restored": [], "skipped": [], "reasons": {}}
