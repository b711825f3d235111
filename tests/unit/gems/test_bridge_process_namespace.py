"""The tool process's PID namespace, seen from the process that starts it (P-FILE-01, DESIGN §4).

:func:`notochord.gems.bridge.sandbox.contain_processes` splits a process in three where the kernel
allows it: the one its starter sees, the namespace's first process, and the tool, which alone
returns. Each test runs it in a fresh interpreter, as the host starts a tool process, and checks
what the starter (the host) can observe:

- the tool's exit code, or the signal that ended it, is the started process's own;
- the tool's standard output is its own: it closes when the tool closes it, not when the processes
  above the tool end;
- killing the started process alone ends everything the tool started, even in another session;
- where the kernel refuses a PID namespace, nothing forks and the report says why.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from notochord.gems.bridge import sandbox
from process_tokens import daemon_token, processes_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PID namespaces are Linux's")

_WITHIN_S = 30.0


def _start(
    body: str, *, stdin: int | None = None, stdout: int | None = None, stderr: int | None = None
) -> subprocess.Popen[bytes]:
    """A fresh interpreter, as the host starts a tool process, that contains itself and runs ``body``
    as the tool; it prints the report to stderr."""
    script = (
        "import os, signal, sys, time\n"
        "from notochord.gems.bridge import sandbox\n"
        "print(sandbox.contain_processes(), file=sys.stderr, flush=True)\n" + body
    )
    return subprocess.Popen(
        [sys.executable, "-I", "-c", script], stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
    )


@pytest.fixture
def token() -> Iterator[str]:
    with daemon_token() as made:
        yield made


def _contained_here() -> str:
    """What the kernel gives a tool process here; the test is skipped where it is no PID namespace."""
    probe = _start("", stderr=subprocess.PIPE)
    _, err = probe.communicate(timeout=_WITHIN_S)
    report = err.decode().strip()
    if report.startswith("processes: not contained"):
        pytest.skip(f"the kernel gives tools no PID namespace here: {report}")
    return report


def test_the_started_process_ends_with_the_tools_exit_code() -> None:
    """P-FILE-01 changes nothing the host sees of the tool's end: its exit code is passed on."""
    tool = _start("sys.exit(7)")
    assert tool.wait(timeout=_WITHIN_S) == 7


def test_the_started_process_ends_by_the_signal_that_ended_the_tool() -> None:
    """P-FILE-01: the tool is not the namespace's first process, which the kernel would shield from
    a signal it sends itself; its starter ends the same way it did."""
    tool = _start("os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(300)")
    assert tool.wait(timeout=_WITHIN_S) == -signal.SIGTERM


def test_the_tools_output_closes_when_the_tool_closes_it_not_when_the_processes_above_it_end() -> None:
    """P-FILE-01: the host reads the channel on the tool's standard output to its end; the processes
    between the host and the tool hold no copy of it. The tool here closes it, then waits on its input."""
    tool = _start(
        "print('said', flush=True)\nos.close(1)\nsys.stdin.read()\n",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert tool.stdin is not None and tool.stdout is not None
    try:
        said = b""
        deadline = time.monotonic() + _WITHIN_S
        while time.monotonic() < deadline:
            readable, _, _ = select.select([tool.stdout], [], [], 0.5)
            if readable:
                chunk = os.read(tool.stdout.fileno(), 4096)
                if not chunk:
                    break
                said += chunk
        else:
            pytest.fail(f"the tool's output stayed open after the tool closed it ({_contained_here()})")
        assert said == b"said\n"
        assert tool.poll() is None  # the tool still runs, waiting on its input
    finally:
        tool.stdin.close()
        tool.wait(timeout=_WITHIN_S)
        tool.stdout.close()


def test_killing_the_started_process_alone_ends_a_daemon_the_tool_left_in_another_session(token: str) -> None:
    """P-FILE-01: what the host does at a run's end (SIGKILL to the process it started), and what
    happens to that process when the host itself is killed (it dies with its parent)."""
    report = _contained_here()
    tool = _start(
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
        "time.sleep(600)\n"
    )
    try:
        deadline = time.monotonic() + _WITHIN_S
        while not processes_with(token):
            assert time.monotonic() < deadline, "the tool left no daemon"
            time.sleep(0.05)

        tool.kill()  # the process the host started, not its group
        tool.wait(timeout=_WITHIN_S)

        deadline = time.monotonic() + _WITHIN_S
        while (left := processes_with(token)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == [], f"the tool's daemon outlived the process the host started ({report})"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(tool.pid, signal.SIGKILL)
        tool.wait(timeout=_WITHIN_S)


class _RefusingLibc:
    """A C library whose ``unshare`` the kernel refuses, as with user namespaces switched off."""

    def unshare(self, flags: int) -> int:
        ctypes.set_errno(errno.EPERM)
        return -1


def test_where_the_kernel_refuses_a_pid_namespace_nothing_forks_and_the_report_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """P-FILE-01 as far as the machine allows: nothing forks, so the tool runs as it did before (its
    process group killed at the run's end), and the report names why."""
    monkeypatch.setattr(sandbox, "_libc", lambda: _RefusingLibc())
    before = os.getpid()
    assert sandbox.contain_processes() == f"processes: not contained ({os.strerror(errno.EPERM)})"
    assert os.getpid() == before
