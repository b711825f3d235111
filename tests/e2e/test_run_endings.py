"""How a ``notochord gem run`` ends when it does not end by itself, recorded as it happened.

The command runs as a real process in its own process group, as a terminal starts it:

- Ctrl-C (``SIGINT`` to the whole foreground group: the command and its tool process) records the
  run ``cancelled``, never ``timeout``, and the command exits 130;
- a command killed with ``SIGKILL`` cannot record anything: while it lives its run is listed
  ``running``, once it is gone the next listing records the run ``interrupted``, names why, and
  leaves its run folder on disk;
- a ``--timeout`` that is not more than 0 and at most a day (NaN and infinity too) is bad usage,
  exit code 2, and records nothing;
- however the command ends, Ctrl-C or ``SIGKILL``, no process its tool started outlives it, not even
  one that left the tool's process group and session (P-FILE-01): where the kernel gives tools a PID
  namespace (the run's isolation says ``processes: contained``), the host's end ends the tool
  process, whose end ends the namespace and everything in it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

import notochord
from notochord.errors import GemNotFoundError
from notochord.gems.runner import RunRecord
from notochord.settings import Settings
from process_tokens import daemon_token, processes_with

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGKILL are POSIX")

SLEEPY = "import time\n\n\nasync def run(input, ctx):\n    time.sleep(300)\n    return {'woke': True}\n"
_STARTED_WITHIN_S = 60.0
_ENDED_WITHIN_S = 30.0

LEAVES_A_DAEMON = """
import os
import sys
import time


async def run(input, ctx):
    if input.get("then") == "return":
        return "left nothing"
    # the pipe's writing end closes on exec: reading it to its end waits until the grandchild, in a
    # session of its own, runs with the token in its command line
    wait_for, running = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", input["token"]])
        finally:
            os._exit(0)
    os.close(running)
    os.read(wait_for, 1)
    os.waitpid(child, 0)
    time.sleep(300)
"""


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = initialised(tmp_path / "vault")
    folder = tmp_path / "gems" / "sleepy"
    folder.mkdir(parents=True)
    (folder / "tool.py").write_text(SLEEPY, encoding="utf-8")
    manifest = {"id": "sleepy", "name": "sleepy", "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    made.run("gem", "install", str(folder))
    return made


@pytest.fixture
def vault(cli: Cli) -> Iterator[notochord.Space]:
    """The same vault, open in this process, to watch the run as another program would."""
    settings = Settings(data_dir=cli.data_dir, embedder="none", index_in_background=False)
    with notochord.open(cli.data_dir, settings, embedder=None) as nc:
        yield nc.personal


@pytest.fixture
def daemon_cli(cli: Cli) -> Cli:
    """The vault with a second gem, whose tool leaves a daemon (``input["token"]`` in its command
    line) and then sleeps; the test is skipped where the kernel gives tools no PID namespace."""
    folder = cli.data_dir.parent / "gems" / "daemon"
    folder.mkdir(parents=True)
    (folder / "tool.py").write_text(LEAVES_A_DAEMON, encoding="utf-8")
    manifest = {"id": "daemon", "name": "daemon", "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    cli.run("gem", "install", str(folder))
    probe = json.loads(cli.run("gem", "run", "daemon", "--input", '{"then": "return"}', "--json").stdout)
    refused = [note for note in probe["isolation"] if note.startswith("processes: not contained")]
    if refused:
        pytest.skip(f"the kernel gives tools no PID namespace here: {refused[0]}")
    return cli


@pytest.fixture
def token() -> Iterator[str]:
    with daemon_token() as made:
        yield made


def _daemon_running(token: str, command: subprocess.Popen[str]) -> None:
    """Wait until the tool's daemon runs (the command must still be alive)."""
    deadline = time.monotonic() + _STARTED_WITHIN_S
    while not processes_with(token):
        if command.poll() is not None:
            _, err = command.communicate()
            pytest.fail(f"gem run exited {command.returncode} before its tool left the daemon:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"the tool left no daemon within {_STARTED_WITHIN_S:g} s")
        time.sleep(0.05)


def _left_after(token: str) -> list[int]:
    """The processes still holding ``token`` once none is left or :data:`_ENDED_WITHIN_S` passed."""
    deadline = time.monotonic() + _ENDED_WITHIN_S
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _start(cli: Cli, *args: str, gem: str = "sleepy") -> subprocess.Popen[str]:
    env = {**os.environ, "NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false"}
    return subprocess.Popen(
        [sys.executable, "-m", "notochord", "--data-dir", str(cli.data_dir), "gem", "run", gem, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a command a terminal started
    )


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """Commands a test started; every process left in their groups (a tool outliving its host) is killed."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        process.communicate()


def _running(vault: notochord.Space, run_id: str, process: subprocess.Popen[str]) -> RunRecord:
    """The run once the command has recorded it (the command must still be alive)."""
    deadline = time.monotonic() + _STARTED_WITHIN_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"gem run exited {process.returncode} before its run was recorded:\n{err}")
        try:
            return vault.gems.runner.get(run_id)
        except GemNotFoundError:
            time.sleep(0.1)
    pytest.fail(f"gem run did not record run {run_id} within {_STARTED_WITHIN_S:g} s")


def test_ctrl_c_records_the_run_as_cancelled_not_as_a_timeout(
    cli: Cli, vault: notochord.Space, started: list[subprocess.Popen[str]]
) -> None:
    command = _start(cli, "--run-id", "run-ctrl-c")
    started.append(command)
    assert _running(vault, "run-ctrl-c", command).status == "running"

    os.killpg(command.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    command.communicate(timeout=60)

    assert command.returncode == 130
    record = vault.gems.runner.get("run-ctrl-c")
    assert record.status == "cancelled"
    assert record.error is not None
    assert record.error["code"] == "E_CANCELLED"
    assert record.finished_at is not None


def test_a_killed_command_leaves_its_run_interrupted_with_its_folder_kept(
    cli: Cli, vault: notochord.Space, started: list[subprocess.Popen[str]]
) -> None:
    command = _start(cli, "--run-id", "run-killed")
    started.append(command)
    running = _running(vault, "run-killed", command)
    assert [(r.id, r.status) for r in vault.gems.runner.list()] == [("run-killed", "running")]
    assert running.folder is not None
    folder = cli.data_dir / "gems" / "personal" / "sleepy" / running.folder
    assert (folder / "tmp").is_dir()

    command.kill()  # SIGKILL to the command alone: it cannot record anything
    command.communicate(timeout=60)

    [record] = vault.gems.runner.list()
    assert (record.id, record.status) == ("run-killed", "interrupted")
    assert record.error is not None
    assert record.error["code"] == "E_INTERRUPTED"
    assert record.folder == running.folder
    assert (folder / "tmp").is_dir()  # left as it was
    shown = cli.run("runs", "show", "run-killed").stdout
    assert "run-killed: sleepy/main interrupted" in shown
    assert f"folder: {running.folder}" in shown


def test_the_same_run_id_can_run_again_after_its_command_was_killed(
    cli: Cli, vault: notochord.Space, started: list[subprocess.Popen[str]]
) -> None:
    first = _start(cli, "--run-id", "run-again")
    started.append(first)
    _running(vault, "run-again", first)
    first.kill()
    first.communicate(timeout=60)

    result = cli.run("gem", "run", "sleepy", "--run-id", "run-again", "--timeout", "0.5", code=7)
    assert "did not finish within 0.5 s" in result.stderr
    assert vault.gems.runner.get("run-again").status == "timeout"


def test_a_daemon_the_tool_left_ends_when_its_command_is_killed(
    daemon_cli: Cli, started: list[subprocess.Popen[str]], token: str
) -> None:
    """P-FILE-01: the killed command records nothing and signals nothing, yet the daemon its tool
    left, outside the tool's process group and session, does not live on."""
    command = _start(daemon_cli, "--input", json.dumps({"token": token}), gem="daemon")
    started.append(command)
    _daemon_running(token, command)

    command.kill()  # SIGKILL to the command alone, not to its group
    command.communicate(timeout=60)

    assert _left_after(token) == [], f"the tool's daemon outlived its killed command by {_ENDED_WITHIN_S:g} s"


def test_a_daemon_the_tool_left_ends_when_its_command_is_interrupted(
    daemon_cli: Cli, started: list[subprocess.Popen[str]], token: str
) -> None:
    """P-FILE-01: Ctrl-C cancels the run, and the daemon its tool left ends with it."""
    command = _start(daemon_cli, "--input", json.dumps({"token": token}), gem="daemon")
    started.append(command)
    _daemon_running(token, command)

    os.killpg(command.pid, signal.SIGINT)
    command.communicate(timeout=60)

    assert command.returncode == 130
    assert _left_after(token) == [], f"the tool's daemon outlived its cancelled run by {_ENDED_WITHIN_S:g} s"


@pytest.mark.parametrize("given", ["-1", "0", "-0", "nan", "inf", "-inf", "86401", "1e308"])
def test_a_timeout_outside_more_than_0_and_at_most_a_day_is_refused_and_nothing_runs(
    cli: Cli, vault: notochord.Space, given: str
) -> None:
    result = cli.run("gem", "run", "sleepy", f"--timeout={given}", code=2)
    assert "a run's timeout must be more than 0 and at most 86400 seconds (a day)" in result.stderr
    assert vault.gems.runner.list() == []


def test_a_refused_timeout_is_a_json_error_with_exit_code_2(cli: Cli) -> None:
    result = cli.run("gem", "run", "sleepy", "--timeout", "-1", "--json", code=2)
    error = json.loads(result.stderr)["error"]
    assert error["exitCode"] == 2
    assert "more than 0 and at most 86400 seconds" in error["message"]
    assert "not -1;" in error["message"]


def test_a_timeout_of_a_day_is_accepted(cli: Cli, vault: notochord.Space) -> None:
    """The upper end is allowed; the tool here fails at once, so the run ends long before it."""
    broken = cli.data_dir.parent / "gems" / "broken"
    broken.mkdir(parents=True)
    (broken / "tool.py").write_text("async def run(input, ctx):\n    raise RuntimeError('no')\n", encoding="utf-8")
    manifest = {"id": "broken", "name": "broken", "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (broken / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    cli.run("gem", "install", str(broken))
    cli.run("gem", "run", "broken", "--timeout", "86400", code=1)
    assert [r.status for r in vault.gems.runner.list()] == ["failed"]
