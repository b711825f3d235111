"""Helpers of the reliability tests: the CLI in a child process, read-only mounts and small disks.

The tests run as root, and root ignores file modes, so ``chmod -R a-w`` proves nothing. A read-only
bind mount and a small tmpfs are real: each is made inside a private mount namespace
(``unshare -m``) of one child process, so nothing outside that process ever sees it. Where the
machine cannot create mount namespaces, the tests that need one are skipped with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

CHILD_TIMEOUT = 120


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child: no inherited ``NOTOCHORD_*`` setting, full text search only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    return {**env, "NOTOCHORD_EMBEDDER": "none", "PYTHONUNBUFFERED": "1", **extra}


def cli(data_dir: Path, *args: str) -> list[str]:
    """The argv of ``notochord --data-dir DATA_DIR ARGS…`` run by this interpreter."""
    return [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), *args]


@functools.cache
def _mount_refusal() -> str | None:
    """Why this machine cannot make private mounts, or ``None`` when it can."""
    with tempfile.TemporaryDirectory() as probe:
        try:
            done = subprocess.run(
                ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {shlex.quote(probe)}"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot run unshare -m here: {exc}"
        if done.returncode != 0:
            return (
                f"cannot mount in a private mount namespace here (needs root and CAP_SYS_ADMIN): {done.stderr.strip()}"
            )
    return None


def require_mounts() -> None:
    """Skip the calling test, with the machine's reason, where private mounts cannot be made."""
    reason = _mount_refusal()
    if reason is not None:
        pytest.skip(reason)


def _in_namespace(setup: str, argv: Sequence[str], *, env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    script = f'{setup} && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *argv],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        env=env or child_env(),
        check=False,
    )


def run_read_only(
    folder: Path, argv: Sequence[str], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``folder`` bind-mounted read-only over itself, for that process alone."""
    require_mounts()
    q = shlex.quote(str(folder))
    return _in_namespace(f"mount --bind {q} {q} && mount -o remount,ro,bind {q} {q}", argv, env=env)


def run_on_small_disk(
    folder: Path, size: str, script: str, *, args: Sequence[str] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the Python ``script`` with an empty tmpfs of ``size`` mounted at ``folder``, for that process alone."""
    require_mounts()
    return _in_namespace(_small_disk(folder, size), [sys.executable, "-c", script, *args], env=env)


def on_small_disk(folder: Path, size: str, argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` with an empty tmpfs of ``size`` mounted at ``folder``, for that
    process alone: for a child the test talks to while it runs (skips where mounts cannot be made)."""
    require_mounts()
    return ["unshare", "-m", "sh", "-c", f'{_small_disk(folder, size)} && exec "$@"', "sh", *argv]


def _small_disk(folder: Path, size: str) -> str:
    return f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(folder))}"


@dataclass(frozen=True)
class Outcome:
    """What one CLI command did: its exit code, its output, and any exception it let escape."""

    code: int
    stdout: str
    stderr: str
    escaped: str | None


_CLI_CHILD = textwrap.dedent(
    """
    import json, sys
    from typer.testing import CliRunner
    from notochord.cli import app
    outcomes = []
    for argv in json.loads(sys.argv[1]):
        r = CliRunner().invoke(app, argv)
        escaped = None if r.exception is None or isinstance(r.exception, SystemExit) else repr(r.exception)
        outcomes.append({"code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr, "escaped": escaped})
    sys.stdout.write(json.dumps(outcomes))
    """
)


def cli_read_only(folder: Path, *commands: Sequence[str], env: dict[str, str] | None = None) -> list[Outcome]:
    """Run the CLI ``commands`` one after the other in one child that sees ``folder`` read-only.

    One child for all of them: starting the CLI costs seconds, which a test pays once.
    """
    done = run_read_only(folder, [sys.executable, "-c", _CLI_CHILD, json.dumps([list(c) for c in commands])], env=env)
    assert done.returncode == 0, done.stderr
    return [Outcome(**o) for o in json.loads(done.stdout)]


# what a child program on a small disk runs to fill it: `fill(path)` writes until the disk refuses
FILL = textwrap.dedent(
    """
    import os

    def fill(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"x" * size)
            except OSError:
                pass
        os.close(fd)
    """
)
