"""Processes a test's tool left behind, found by a token in their command line (``/proc/*/cmdline``)."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["daemon_token", "processes_with"]


def processes_with(token: str) -> list[int]:
    """The pids of every process on the machine whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # it ended while we looked
            continue
        if token.encode() in arguments:
            found.append(int(entry.name))
    return found


@contextlib.contextmanager
def daemon_token() -> Iterator[str]:
    """A token unique to the test; whatever still holds it at the end is killed, pass or fail."""
    made = f"notochord-test-daemon-{uuid.uuid4().hex}"
    try:
        yield made
    finally:
        for pid in processes_with(made):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
