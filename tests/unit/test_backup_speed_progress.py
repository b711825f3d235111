"""``notochord backup`` and ``notochord restore`` show how far they are while they work.

A backup of a large vault takes as long as compressing it, a restore as long as unpacking it: on a
terminal each shows a bar on stderr, in megabytes of the vault with the time left, and clears it
when done, leaving only the summary. Off a terminal (a pipe, a file, a script) and with ``--json``
nothing of it is written. The library tells a caller the same through ``progress(stage, done,
total)``: ``copying`` then ``compressing`` for a backup, ``unpacking`` for a restore, in bytes, up to
the vault's size (OD-K47: each space is one file of the data directory, copied whole).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import notochord
from notochord.backup import backup, restore
from notochord.cli import app
from notochord.settings import Settings
from pseudo_terminal import on_a_terminal

ENV = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false", "COLUMNS": "100", "TERM": "xterm"}
_CONTROL = re.compile(r"\x1b\[\??[0-9;]*[A-Za-z]")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    data = tmp_path / "vault"
    settings = Settings(data_dir=data, index_in_background=False, embedder="none")
    with notochord.open(data, settings, embedder=None) as nc:
        nc.personal.user.facts.put(predicate="work.title", value="baker")
        nc.personal.user.documents.upsert(collection="keep", title="bread", body="flour water salt " * 200)
    (data / "history").mkdir(exist_ok=True)
    (data / "history" / "blob.bin").write_bytes(os.urandom(300_000))
    return data


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``notochord ARGS`` with its output on a pseudo-terminal; its exit code and all it wrote."""
    return on_a_terminal([sys.executable, "-m", "notochord", *args], ENV)


def _last_line_shown(output: str) -> list[str]:
    """The lines a terminal is left showing: every erased line (``ESC[2K`` after a cursor move up)
    gone, as rich's bar leaves them when it stops."""
    kept: list[str] = []
    for piece in re.split(r"(\x1b\[1A\x1b\[2K|\r\n|\n)", output):
        if piece == "\x1b[1A\x1b[2K":
            if kept:
                kept.pop()
        elif piece in ("\r\n", "\n"):
            continue
        else:
            line = _CONTROL.sub("", piece.split("\r")[-1]).strip()
            if line:
                kept.append(line)
    return kept


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_a_backup_and_a_restore_on_a_terminal_show_a_bar_then_only_their_summary(vault: Path, tmp_path: Path) -> None:
    archive = tmp_path / "vault.tar.gz"
    code, output = _on_a_terminal("--data-dir", str(vault), "backup", str(archive))
    assert code == 0, output
    assert "compressing" in output, "the bar was drawn"
    assert re.search(r"\d+\.\d/\d+\.\d (kB|MB)", _CONTROL.sub("", output)), "in bytes of the vault"
    assert _last_line_shown(output) == [
        f"backed up 3 files, {backup_bytes(vault)} bytes, spaces personal, to {archive}",
        "the backup holds the master key: keep it as safe as the vault itself",
    ]

    restored = tmp_path / "restored"
    code, output = _on_a_terminal("--data-dir", str(restored), "restore", str(archive))
    assert code == 0, output
    assert "unpacking" in output, "the bar was drawn"
    shown = _last_line_shown(output)
    assert len(shown) == 1
    assert shown[0].startswith("restored 3 files, spaces personal, from the backup of ")


def backup_bytes(vault: Path) -> int:
    """What the summary counts: the snapshot of every file (the database's log folded into it)."""
    made = backup(vault, vault.parent / "counted.tar.gz")
    made.path.unlink()
    return made.bytes


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_with_json_on_a_terminal_there_is_no_bar(vault: Path, tmp_path: Path) -> None:
    archive = tmp_path / "vault.tar.gz"
    code, output = _on_a_terminal("--data-dir", str(vault), "backup", str(archive), "--json")
    assert code == 0, output
    assert "compressing" not in output
    assert json.loads(output)["files"] == 3

    code, output = _on_a_terminal("--data-dir", str(tmp_path / "restored"), "restore", str(archive), "--json")
    assert code == 0, output
    assert "unpacking" not in output
    assert json.loads(output)["files"] == 3


def test_off_a_terminal_nothing_of_the_bar_is_written(vault: Path, tmp_path: Path) -> None:
    archive = tmp_path / "vault.tar.gz"
    made = CliRunner().invoke(app, ["--data-dir", str(vault), "backup", str(archive)], env=ENV)
    assert made.exit_code == 0, made.output
    assert made.stderr == ""
    assert made.stdout.startswith("backed up 3 files")

    brought = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "restored"), "restore", str(archive)], env=ENV)
    assert brought.exit_code == 0, brought.output
    assert brought.stderr == ""
    assert brought.stdout.startswith("restored 3 files")


def test_the_library_tells_each_stage_in_bytes_up_to_the_vaults_size(vault: Path, tmp_path: Path) -> None:
    told: list[tuple[str, int, int]] = []
    made = backup(vault, tmp_path / "vault.tar.gz", progress=lambda *step: told.append(step))

    stages = [stage for stage, _, _ in told]
    assert stages == sorted(stages, key=["copying", "compressing"].index), "copying first, then compressing"
    for stage in ("copying", "compressing"):
        steps = [(done, total) for name, done, total in told if name == stage]
        assert steps[0][0] == 0, "each stage starts at nothing done"
        assert steps[-1][0] == steps[-1][1], "and ends with all of it done"
        assert [done for done, _ in steps] == sorted(done for done, _ in steps), "never going back"
    assert [total for name, _, total in told if name == "compressing"][-1] == made.bytes

    told.clear()
    brought = restore(made.path, tmp_path / "restored", progress=lambda *step: told.append(step))
    assert {stage for stage, _, _ in told} == {"unpacking"}
    assert (told[0][1], told[-1][1], told[-1][2]) == (0, brought.bytes, brought.bytes)
