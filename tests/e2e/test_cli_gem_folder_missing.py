"""``gem install`` and ``gem upgrade`` of a path that does not exist say so, and what to give instead,
as bad usage (exit code 2) that changes nothing; not "no manifest in this folder" about a folder
that is not there."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import Cli, initialised


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


@pytest.mark.parametrize("command", ["install", "upgrade"])
def test_a_gem_path_that_does_not_exist_is_named_as_missing(cli: Cli, tmp_path: Path, command: str) -> None:
    missing = tmp_path / "no-such-gem"
    result = cli.run("gem", command, str(missing), code=2)
    said = " ".join(result.stderr.replace("│", " ").split())
    # the error box breaks a long path wherever the line ends, so the path is looked for without breaks
    assert str(missing) in "".join(said.split())
    assert "does not exist" in said
    assert "notochord.json or manifest.json" in said
    assert "in this folder" not in said
    assert cli.json("gem", "list") == []
    assert not missing.exists()


def test_after_json_a_missing_gem_path_is_a_usage_error_in_json(cli: Cli, tmp_path: Path) -> None:
    result = cli.run("gem", "install", str(tmp_path / "no-such-gem"), "--json", code=2)
    assert '"code": "E_USAGE"' in result.stderr
    assert "does not exist" in result.stderr
