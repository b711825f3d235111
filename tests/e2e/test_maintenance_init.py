"""``notochord init`` given careless input: an organization id it refuses, a folder that already holds
other files, a second run.

Bad input is refused before anything is created (OD-K47: a space is a store of its own, made only
when asked for by a well-formed name).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli


@pytest.mark.parametrize(
    "org",
    ["Acme", "a b", "../etc", "x" * 64, "-lead", "caf\u00e9", "a\x1b[2Jb", ""],
    ids=["capitals", "space", "path", "too-long", "leading-dash", "accent", "escape", "empty"],
)
def test_init_with_a_malformed_organization_id_creates_no_vault(tmp_path: Path, org: str) -> None:
    """Before, the personal space and the master key were created first, and the id refused after:
    the folder was left holding a vault the user never meant to make."""
    folder = tmp_path / "fresh"
    out = Cli(folder).run("init", "--org", org, code=2)
    assert "lowercase letters, digits, - or _" in " ".join(out.stderr.split())
    assert "\x1b" not in out.stderr
    assert not folder.exists()


def test_init_with_a_malformed_organization_id_in_a_folder_of_other_files_leaves_them_alone(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("buy bread\n")
    error = json.loads(Cli(folder).run("init", "--org", "Acme", "--json", code=2).stderr)["error"]
    assert error["code"] == "E_CONFIG"
    assert sorted(p.name for p in folder.iterdir()) == ["todo.txt"]


def test_init_twice_and_then_with_an_organization_keeps_what_was_made(tmp_path: Path) -> None:
    """``init`` is idempotent: a second run, and one adding an organization, keep the first run's key
    and spaces, and the other files in the folder."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("buy bread\n")
    cli = Cli(folder)
    cli.run("init")
    key = (folder / "master.key").read_bytes()
    cli.run("init")
    made = json.loads(cli.run("init", "--org", "acme", "--json").stdout)
    assert made["spaces"] == ["org:acme", "personal"]
    assert (folder / "master.key").read_bytes() == key
    assert (folder / "todo.txt").read_text() == "buy bread\n"
