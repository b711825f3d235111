"""Every process a tool starts ends with its run, however the run ends (P-FILE-01, DESIGN §4).

A tool may fork, and what it forks may leave the tool's process group and session
(``os.setsid()``, a double fork: what a daemon does). Where the kernel allows it, the tool process
is the top of a PID namespace of its own (``record.isolation`` says ``processes: contained``), and
when the run ends the kernel ends every process in that namespace, whatever group or session it
moved to. The tool here leaves such a grandchild, with a token of its test in its command line, and
the tests look for that token among all the machine's processes (``/proc/*/cmdline``):

- a run that succeeds, times out or is cancelled leaves no process of the tool behind;
- the gem's own code is not the namespace's first process (which the kernel shields from signals
  sent inside the namespace): a tool that sends itself ``SIGTERM`` ends of it, as anywhere else;
- the tool still sees its process tree with consistent numbers: a child it forked and waits for
  reports its exit status to it.

Where the kernel refuses a PID namespace, the run records ``processes: not contained (…)`` and the
tests that need one are skipped with that note.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import notochord
from notochord.gems.runner import RunRecord
from one_tool_gem import install_one_tool_gem
from process_tokens import daemon_token, processes_with

pytestmark = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")

LEAVES_A_DAEMON = """
import os
import signal
import sys
import time


def _leave_a_daemon(token):
    # the pipe's writing end closes on exec, so reading it to its end waits until the grandchild,
    # in a session of its own, runs with the token in its command line
    wait_for, running = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", token])
        finally:
            os._exit(0)
    os.close(running)
    os.read(wait_for, 1)
    os.waitpid(child, 0)


async def run(input, ctx):
    then = input["then"]
    if then == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(600)
    if then == "child-exit-code":
        child = os.fork()
        if child == 0:
            os._exit(7)
        _, status = os.waitpid(child, 0)
        return {"pid": child, "exit": os.waitstatus_to_exitcode(status)}
    _leave_a_daemon(input["token"])
    if then == "hang":
        time.sleep(600)
    return {"left": input["token"]}
"""


def _gone(token: str, *, within: float = 10.0) -> list[int]:
    """The processes still holding ``token`` after waiting up to ``within`` seconds for none to be left.

    The run's end waits for its processes, so none should be left at all; the wait only keeps a slow
    machine from failing the test while the kernel finishes what it started.
    """
    end = time.monotonic() + within
    while (left := processes_with(token)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


@pytest.fixture
def token() -> Iterator[str]:
    with daemon_token() as made:
        yield made


@pytest.fixture
def gem_space(tmp_path: Path, space: notochord.Space) -> notochord.Space:
    install_one_tool_gem(space, tmp_path / "daemon-gem", "daemon", LEAVES_A_DAEMON)
    return space


@pytest.fixture
def contained(gem_space: notochord.Space) -> notochord.Space:
    """The space, where the kernel gives tools a PID namespace; elsewhere the test is skipped and says why.

    A quick run of the tool tells: the runtime reports what it achieved with every run.
    """
    record = gem_space.gems.runner.run_sync("daemon", "main", input={"token": "-", "then": "child-exit-code"})
    refused = [note for note in record.isolation if note.startswith("processes: not contained")]
    if refused:
        pytest.skip(f"the kernel gives tools no PID namespace here: {refused[0]}")
    return gem_space


def test_a_daemon_the_tool_left_in_a_session_of_its_own_ends_when_the_run_succeeds(
    contained: notochord.Space, token: str
) -> None:
    """P-FILE-01: the tool returns while its grandchild, in a session of its own, sleeps on; the run's
    end ends it, though it is outside the group the host kills."""
    record = contained.gems.runner.run_sync("daemon", "main", input={"token": token, "then": "return"}, timeout=60)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output == {"left": token}
    assert _gone(token) == [], f"a process the tool started outlived its run ({'; '.join(record.isolation)})"


async def _run_until_the_daemon_runs(
    space: notochord.Space, token: str, *, timeout: float, cancel: bool
) -> tuple[RunRecord | None, bool]:
    """Run the tool that leaves a daemon and then hangs; cancel the run once the daemon runs if
    ``cancel``. Returns the record (``None`` when cancelled) and whether the daemon was seen."""
    run_id = "cancelled" if cancel else "timed-out"
    task = asyncio.create_task(
        space.gems.runner.run("daemon", "main", input={"token": token, "then": "hang"}, timeout=timeout, run_id=run_id)
    )
    seen = False
    while not task.done():
        if processes_with(token):
            seen = True
            if cancel:
                task.cancel()
                break
        await asyncio.sleep(0.05)
    with contextlib.suppress(asyncio.CancelledError):
        return await task, seen
    return None, seen


def test_a_daemon_the_tool_left_in_a_session_of_its_own_ends_when_the_run_times_out(
    contained: notochord.Space, token: str
) -> None:
    """P-FILE-01: the host kills the tool process it started at the time limit; the daemon goes too."""
    record, seen = asyncio.run(_run_until_the_daemon_runs(contained, token, timeout=10, cancel=False))
    assert record is not None
    assert record.status == "timeout", f"{record.error}\n{record.log}"
    assert seen, f"the tool did not start its daemon within the run's 10 s\n{record.log}"
    assert _gone(token) == [], f"a process the tool started outlived its run ({'; '.join(record.isolation)})"


def test_a_daemon_the_tool_left_in_a_session_of_its_own_ends_when_the_run_is_cancelled(
    contained: notochord.Space, token: str
) -> None:
    """P-FILE-01: a cancelled run kills the tool process it started; the daemon goes too."""
    record, seen = asyncio.run(_run_until_the_daemon_runs(contained, token, timeout=120, cancel=True))
    assert record is None and seen
    cancelled = contained.gems.runner.get("cancelled")
    assert cancelled.status == "cancelled"
    # the record keeps how the tool was confined, though the run never returned an outcome
    assert any(note.startswith("processes: contained") for note in cancelled.isolation), cancelled.isolation
    assert _gone(token) == [], "a process the tool started outlived its cancelled run"


def test_a_tool_that_sends_itself_sigterm_ends_of_it_as_it_would_outside_a_namespace(
    gem_space: notochord.Space, token: str
) -> None:
    """P-FILE-01 leaves the tool's own code as it was: the kernel ignores a signal without a handler
    sent to a namespace's first process from inside it, but the gem's code runs below that process,
    so its own ``SIGTERM`` ends it, not the time limit."""
    record = gem_space.gems.runner.run_sync("daemon", "main", input={"token": token, "then": "sigterm"}, timeout=120)
    assert record.status == "failed", f"{record.error}\n{record.log}"
    assert record.error is not None
    assert record.error["code"] == "E_TOOL"
    assert "ended without a result" in record.error["message"]


def test_a_tool_waits_for_its_own_child_and_reads_its_exit_code(gem_space: notochord.Space, token: str) -> None:
    """P-FILE-01 leaves the tool's own code as it was: inside the namespace, the pids ``os.fork``
    answers are the ones ``os.waitpid`` takes."""
    record = gem_space.gems.runner.run_sync(
        "daemon", "main", input={"token": token, "then": "child-exit-code"}, timeout=60
    )
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    assert record.output["exit"] == 7
    assert record.output["pid"] > 0
