"""``notochord serve`` stopped by Ctrl-C (SIGINT) or by a service manager (SIGTERM) finishes the
requests in flight, closes every space, and says in one line that it stopped and why.

Ctrl-C exits 130, as every command stopped by Ctrl-C does (the exit codes listed by ``--help``); a
SIGTERM is the ordinary way a service manager stops a service, so a stop it asked for exits 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import initialised

INTERRUPTED = 130


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_then_send(data_dir: Path, sent: signal.Signals) -> tuple[int, str, str]:
    """Start ``serve``, wait until it has announced where it listens, send ``sent``; its exit code,
    what it printed on stdout after the announcement, and stderr."""
    server = subprocess.Popen(
        [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), "serve", "--port", str(_free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NOTOCHORD_EMBEDDER": "none"},
    )
    try:
        assert server.stdout is not None
        announced = []
        for line in server.stdout:
            announced.append(line)
            if line.startswith("get a development token"):
                break
        assert announced and announced[-1].startswith("get a development token"), announced
        server.send_signal(sent)
        rest, stderr = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return server.returncode, rest, stderr


@pytest.mark.parametrize(
    ("sent", "code", "named"),
    [
        pytest.param(signal.SIGINT, INTERRUPTED, "Ctrl-C", id="ctrl-c"),
        pytest.param(signal.SIGTERM, 0, "SIGTERM", id="sigterm"),
    ],
)
def test_serve_stopped_by_a_signal_says_so_in_one_line_and_exits_with_its_code(
    tmp_path: Path, sent: signal.Signals, code: int, named: str
) -> None:
    data_dir = tmp_path / "vault"
    initialised(data_dir)
    exit_code, rest, stderr = _serve_then_send(data_dir, sent)
    assert exit_code == code, stderr
    lines = rest.splitlines()
    assert len(lines) == 1, rest
    assert lines[0].startswith(f"notochord stopped ({named})")
    assert "every space was closed" in lines[0]
    assert "Traceback" not in stderr
