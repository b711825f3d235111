"""Ctrl-C at any moment of a command: a plain message and exit code 130, never a traceback, and
nothing half-written.

- While the command line is still loading (the first fraction of a second of every command), Ctrl-C
  exits 130 without a traceback through the import machinery (before: a ``KeyboardInterrupt``
  traceback of Python's own modules).
- ``backup`` and ``restore`` stopped part way say so, and that nothing was written (before: exit
  code 130 without a word, so the user could not tell whether a backup file was left).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

INTERRUPTED = 130


@pytest.fixture
def vault(tmp_path: Path) -> Cli:
    made = initialised(tmp_path / "vault")
    made.run("facts", "put", "location.home.city", "Utrecht")
    return made


# The console script's own two lines, run after an import hook that stops the import of the
# command-line library as Ctrl-C would: deterministic, where a real signal's moment is not.
_CTRL_C_WHILE_LOADING = """
import sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
from notochord.cli import main
sys.exit(main())
"""


def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_LOADING, "--data-dir", str(tmp_path / "vault"), "status"],
        capture_output=True,
        text=True,
        env={**os.environ, "NOTOCHORD_EMBEDDER": "none"},
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (INTERRUPTED, "")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "vault").exists()


def _ctrl_c(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def test_an_interrupted_backup_says_no_backup_was_written_and_leaves_no_file(
    vault: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the files are being checked, after the vault was copied aside."""
    monkeypatch.setattr("notochord.backup._sha256", _ctrl_c)
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    archive = shelf / "vault.tar.gz"
    result = vault.run("backup", str(archive), code=INTERRUPTED)
    assert result.stderr.startswith(f"interrupted: no backup was written to {archive} and nothing of it is left")
    assert "notochord backup again" in result.stderr
    assert list(shelf.iterdir()) == []


def test_an_interrupted_backup_with_json_reports_e_interrupted(
    vault: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("notochord.backup._sha256", _ctrl_c)
    result = vault.run("backup", str(tmp_path / "vault.tar.gz"), "--json", code=INTERRUPTED)
    error = json.loads(result.stderr)["error"]
    assert (error["code"], error["exitCode"], result.stdout) == ("E_INTERRUPTED", INTERRUPTED, "")


def test_an_interrupted_restore_says_nothing_was_restored_and_leaves_the_folder_empty(
    vault: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the backup was unpacked aside, before it was moved into place; the restore
    then succeeds when run again. K-CHG-08: the restored vault still holds what was written."""
    archive = tmp_path / "vault.tar.gz"
    vault.run("backup", str(archive))
    restored = Cli(tmp_path / "restored")
    restored.data_dir.mkdir()
    with monkeypatch.context() as patched:
        patched.setattr("notochord.backup.restoring._verify", _ctrl_c)
        result = restored.run("restore", str(archive), code=INTERRUPTED)
    assert result.stderr.startswith(f"interrupted: nothing was restored into {restored.data_dir}")
    assert list(restored.data_dir.iterdir()) == []
    restored.run("restore", str(archive))
    assert restored.values("self", "location.home") == ["Utrecht"]
