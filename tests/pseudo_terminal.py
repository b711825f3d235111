"""Running a command with its output on a pseudo-terminal, as a person at a terminal sees it: what
is drawn only for a terminal (progress bars, colours) is drawn."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Mapping, Sequence


def on_a_terminal(argv: Sequence[str], env: Mapping[str, str], *, timeout: float = 120) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a pseudo-terminal and ``env`` added to the
    environment; its exit code and all it wrote."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(list(argv), stdin=follower, stdout=follower, stderr=follower, env={**os.environ, **env})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return child.wait(timeout=timeout), b"".join(chunks).decode()
