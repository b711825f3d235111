"""The first steps the README and docs/gems.md walk a new user through, checked as that user meets
them: what a command prints is what the person can act on as printed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from notochord.cli import handoff

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RECIPE = {"id": "1", "dish": "Tomato beef stew", "recipe": "Brown the beef…"}


async def _profile_through(config: dict[str, object], env: dict[str, str]) -> str:
    """The ``profile`` tool's answer from the server that an MCP client starts from ``config``."""
    servers = config["mcpServers"]
    assert isinstance(servers, dict)
    entry = servers["notochord"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answer = await session.call_tool("profile", {"prefix": "location.home"})
    assert not answer.is_error, answer
    return json.dumps(answer.structured_content)


def test_the_desktop_configuration_mcp_connect_prints_serves_that_vault_from_the_clients_environment(
    tmp_path: Path,
) -> None:
    """Pasted as printed, the stdio configuration works for a client that has neither the
    virtual environment on its PATH nor ``NOTOCHORD_DATA_DIR``: it reaches the vault connected."""
    cli = initialised(tmp_path / "vault")
    cli.run("facts", "put", "location.home.city", "Utrecht")
    printed = cli.run("mcp", "connect", "claude-desktop").stdout
    config = json.loads(next(line for line in printed.splitlines() if '"mcpServers"' in line))
    cli.run("gem", "grant", "claude-desktop", "facts.read:self:location.home.*")

    home = tmp_path / "home"  # the per-user data directory there holds no vault
    home.mkdir()
    client_env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "NOTOCHORD_EMBEDDER": "none"}
    assert "Utrecht" in asyncio.run(_profile_through(config, client_env))
    # --json carries the same configuration
    assert cli.json("mcp", "connect", "other-desktop")["stdioConfig"]["mcpServers"]["notochord"]["args"][-2:] == [
        "--data-dir",
        str(cli.data_dir),
    ]


def _failing_gem(tmp_path: Path) -> Path:
    folder = tmp_path / "failing"
    folder.mkdir()
    manifest = {"id": "failing", "name": "failing", "tools": [{"name": "go", "entry": "go.py"}]}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "go.py").write_text("def run(input, ctx):\n    raise ValueError('no luck')\n", encoding="utf-8")
    return folder


def test_a_failed_run_names_the_command_that_shows_it_on_one_line(tmp_path: Path) -> None:
    """The run id is long, so the line is wider than a terminal: it must still paste as one command."""
    cli = initialised(tmp_path / "vault")
    cli.run("gem", "install", str(_failing_gem(tmp_path)))
    failed = cli.run("gem", "run", "failing", code=1)
    run_id = cli.json("runs", "list", "--gem", "failing")[0]["run"]
    assert f"see it with notochord runs show {run_id}\n" in failed.stderr


def test_uninstalling_with_its_data_counts_what_went_in_words(tmp_path: Path) -> None:
    """docs/gems.md's recipe gem end to end: one fact, one document and one collection deleted."""
    cli = initialised(tmp_path / "vault")
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    cli.run(
        "gem", "grant", "recipes", "facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create"
    )
    cli.run("gem", "run", "recipes", "--input", json.dumps(RECIPE))
    gone = cli.run("gem", "uninstall", "recipes", "--delete-data").stdout
    assert gone.startswith("uninstalled recipes and deleted 1 fact, 1 document, 1 collection; undo with: ")


def test_uninstalling_with_its_data_a_gem_that_wrote_nothing_prints_no_undo_command(tmp_path: Path) -> None:
    """docs/gems.md: "undo that with the printed changes revert command". With nothing deleted there
    is nothing to undo, so no command is printed that would answer "not found" (K-UNINST-09)."""
    cli = initialised(tmp_path / "vault")
    cli.run("gem", "install", str(EXAMPLES / "weather"))
    gone = cli.run("gem", "uninstall", "weather", "--delete-data").stdout
    assert "changes revert" not in gone
    assert gone.startswith("uninstalled weather; nothing it wrote was left to delete")


def test_an_import_with_background_embedding_does_not_send_the_person_to_reindex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: passages a command writes are embedded in the background "without asking"."""
    handed: list[Path] = []

    def hand_off(data_dir: Path, spaces: object, model_id: str) -> bool:
        # no real worker: this test is about what the import says, not about embedding
        handed.append(data_dir)
        return True

    monkeypatch.setattr(handoff, "hand_off", hand_off)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stew.md").write_text("# Stew\n\nBraise it slowly for three hours.\n", encoding="utf-8")
    cli = Cli(tmp_path / "vault", env={"NOTOCHORD_INDEX_IN_BACKGROUND": "true"})
    cli.run("init")
    handed.clear()

    imported = cli.run("docs", "import", str(notes)).stdout
    assert "run: notochord reindex" not in imported
    assert "searchable by meaning as well as by words once embedded in the background" in imported
    assert handed == [cli.data_dir]
