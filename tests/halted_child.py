"""A Python child process run until it says it is part way through its work, then left to the test.

Tests of work killed part way (SIGKILL, as a crash or a power cut leaves it) start the work in a
child that creates a ``ready`` file at the point to stop at; the test then kills it, or lets it run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["WAIT_S", "running_until_ready"]

WAIT_S = 120.0
"""How long a child may take to end once killed or let go (a loaded machine is slow, never stuck)."""


@contextmanager
def running_until_ready(script: str, *args: str, ready: Path, doing: str) -> Iterator[subprocess.Popen[bytes]]:
    """``python -c script args… ready`` once it has created ``ready``; killed on leaving if still alive.

    ``doing`` completes "the process ended before it …" when the child ends before getting there.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args, str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while not ready.exists():
            try:
                code = child.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            _, err = child.communicate()
            pytest.fail(f"the process ended ({code}) before it {doing}: {err.decode()}")
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=WAIT_S)
        if child.stderr is not None:
            child.stderr.close()
