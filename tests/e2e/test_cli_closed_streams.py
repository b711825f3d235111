"""The installed ``notochord`` with its standard streams closed or without a reader.

- A script may start a command with stdout or stderr closed (``>&-``, ``2>&-``): the command runs,
  exits with its own code and prints no traceback (before: ``>&-`` ended in a Python traceback,
  ``2>&-`` turned "not found" into exit code 1).
- When whoever reads stderr has gone (``notochord … 2>&1 | head -0``), the failure keeps its own
  exit code, as the table of exit codes promises: not found stays 3 and a command line that could
  not be parsed stays 2 (before: 141, as if the command had succeeded, or 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

SCRIPT = Path(sys.executable).parent / "notochord"
NOT_FOUND = 3
USAGE = 2


@pytest.fixture
def vault(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def _env() -> dict[str, str]:
    return {**os.environ, "NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false"}


def _with_closed(redirect: str, vault: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """``notochord --data-dir VAULT ARGS`` started by a shell with ``redirect`` (``>&-``, ``2>&-``)."""
    argv = ["sh", "-c", f'exec "$@" {redirect}', "sh", str(SCRIPT), "--data-dir", str(vault.data_dir), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120, check=False)


def test_a_command_started_with_stdout_closed_still_writes_and_exits_0(vault: Cli) -> None:
    """K-CHG-06: the write is made and recorded; nothing is printed and nothing breaks."""
    result = _with_closed(">&-", vault, "facts", "put", "location.home.city", "Utrecht", "--json")
    assert (result.returncode, result.stderr) == (0, "")
    assert vault.values("self", "location.home") == ["Utrecht"]


def test_a_failure_started_with_stderr_closed_keeps_its_exit_code(vault: Cli) -> None:
    """K-FACT retract of an unknown fact: not found is exit code 3 whether or not its message can
    be shown."""
    result = _with_closed("2>&-", vault, "facts", "retract", "999")
    assert (result.returncode, result.stdout) == (NOT_FOUND, "")


def _stderr_without_reader(vault: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout and stderr one pipe that nobody reads any more (``2>&1 | head -0``)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [str(SCRIPT), "--data-dir", str(vault.data_dir), *args],
            stdout=writer,
            stderr=writer,
            text=True,
            env=_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(["facts", "retract", "999"], NOT_FOUND, id="not-found"),
        pytest.param(["facts", "retract", "999", "--json"], NOT_FOUND, id="not-found-as-json"),
        pytest.param(["facts", "retract", "not-a-number"], USAGE, id="bad-usage"),
        pytest.param(["facts", "retract", "not-a-number", "--json"], USAGE, id="bad-usage-as-json"),
    ],
)
def test_a_failure_whose_message_has_no_reader_keeps_its_exit_code(vault: Cli, args: list[str], code: int) -> None:
    """A script with ``set -o pipefail`` learns why the command failed from its exit code alone."""
    assert _stderr_without_reader(vault, *args).returncode == code


def test_the_same_failures_with_a_reader_say_what_went_wrong(vault: Cli) -> None:
    """The cases above, read: the exit codes are the failures' own, not the pipe's."""
    missing = vault.run("facts", "retract", "999", "--json", code=NOT_FOUND)
    assert json.loads(missing.stderr)["error"]["exitCode"] == NOT_FOUND
    assert vault.run("facts", "retract", "not-a-number", code=USAGE).stdout == ""
