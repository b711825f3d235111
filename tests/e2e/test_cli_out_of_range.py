"""Numbers the store cannot hold, database files that are not databases, a vault without its key:
the command line answers with what is wrong and what to do, never a traceback or a library's own
wording (K-CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

BEYOND_64_BITS = "99999999999999999999"


def _run(data_dir: Path, *args: str) -> Result:
    from notochord.cli import app

    return CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env={"NOTOCHORD_EMBEDDER": "none"})


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    data_dir = tmp_path / "vault"
    assert _run(data_dir, "init").exit_code == 0
    return data_dir


@pytest.mark.parametrize(
    "command",
    [
        ["facts", "retract", BEYOND_64_BITS],
        ["facts", "pin", BEYOND_64_BITS],
        ["facts", "lookup", BEYOND_64_BITS],
        ["facts", "put", "x.a", "b", "--subject", BEYOND_64_BITS],
        ["changes", "revert", BEYOND_64_BITS],
        ["changes", "list", "--limit", BEYOND_64_BITS],
        ["docs", "show", BEYOND_64_BITS],
        ["docs", "delete", BEYOND_64_BITS],
        ["entities", "merge", BEYOND_64_BITS, "1"],
        ["entities", "delete", BEYOND_64_BITS],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_an_id_beyond_64_bits_is_a_usage_error_that_names_the_limit(vault: Path, command: list[str]) -> None:
    before = _run(vault, "changes", "list", "--json").output
    result = _run(vault, *command)
    assert result.exit_code == 2, result.output
    assert "a number is too large" in result.output
    assert "9223372036854775807" in result.output
    assert "Traceback" not in result.output and "OverflowError" not in result.output
    assert _run(vault, "changes", "list", "--json").output == before


def test_the_json_error_of_an_id_beyond_64_bits_is_json(vault: Path) -> None:
    result = _run(vault, "docs", "show", BEYOND_64_BITS, "--json")
    assert result.exit_code == 2
    assert "a number is too large" in json.loads(result.output)["error"]["message"]


def test_a_space_file_that_is_not_a_database_is_named_damaged_without_library_wording(vault: Path) -> None:
    (vault / "spaces" / "personal.db").write_bytes(b"this is not a database file, at all" * 200)
    for suffix in ("-wal", "-shm"):
        (vault / "spaces" / f"personal.db{suffix}").unlink(missing_ok=True)
    result = _run(vault, "status")
    assert result.exit_code != 0
    assert "damaged or is not a notochord database" in result.output
    assert "notochord restore" in result.output
    assert "sqlalche.me" not in result.output and "(sqlite3." not in result.output


def test_a_vault_that_lost_its_master_key_is_named_so_not_called_missing(vault: Path) -> None:
    """``status`` must not send the user to ``init``, which refuses to replace a lost key."""
    (vault / "master.key").unlink()
    result = _run(vault, "status")
    assert result.exit_code != 0
    assert "master.key is missing although the vault has spaces" in result.output
    assert "notochord restore" in result.output
    assert "init`" not in result.output
    assert not (vault / "master.key").exists()
