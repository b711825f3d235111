"""One way for the end-to-end tests to run ``notochord`` in-process and check its exit code."""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from notochord.cli import app

FULL_TEXT_ONLY = {"NOTOCHORD_EMBEDDER": "none"}


@dataclass
class Cli:
    """Runs ``notochord --data-dir <data_dir> …`` through typer's ``CliRunner`` (full text only by
    default) and fails the test, with both streams and any traceback, when the exit code is not ``code``.

    ``env`` is what every run sets (``{}`` leaves the environment as it is); ``init_first`` makes the
    vault with ``notochord init`` before the first other command, as ``make run`` does; ``app`` is the
    command tree to run, the real one unless a test mounts its own.
    """

    data_dir: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(FULL_TEXT_ONLY))
    runner: CliRunner = field(default_factory=CliRunner)
    init_first: bool = False
    app: typer.Typer = field(default_factory=lambda: app)

    def run(
        self,
        *args: str,
        code: int = 0,
        env: Mapping[str, str] | None = None,
        with_data_dir: bool = True,
    ) -> Result:
        """Run ``notochord --data-dir <data_dir> *args`` (only ``*args`` without ``with_data_dir``),
        with ``env`` set on top of the harness's own, and require exit code ``code``."""
        call_env = {**self.env, **(env or {})}
        argv = ["--data-dir", str(self.data_dir), *args] if with_data_dir else list(args)
        wants_vault = with_data_dir and not {"init", "--help", "--data-dir"} & set(args)
        if self.init_first and wants_vault and not self.data_dir.exists():
            self.runner.invoke(self.app, ["--data-dir", str(self.data_dir), "init"], env=call_env)
        result = self.runner.invoke(self.app, argv, env=call_env)
        if result.exit_code != code:
            raised = ""
            if result.exc_info is not None and not isinstance(result.exception, SystemExit):
                raised = "".join(traceback.format_exception(result.exc_info[1]))
            pytest.fail(
                f"notochord {' '.join(argv)} exited {result.exit_code}, expected {code}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}\n{raised}"
            )
        return result

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.run(*args, "--json", code=code).stdout)

    def values(self, subject: str = "self", prefix: str | None = None) -> list[Any]:
        """The values of the current facts about ``subject`` (under ``prefix``)."""
        return [f["value"] for f in self.json("facts", "lookup", subject, *([prefix] if prefix else []))]


def initialised(data_dir: Path) -> Cli:
    """A :class:`Cli` on a vault that ``notochord init`` has just created."""
    made = Cli(data_dir)
    made.run("init")
    return made


def command_paths() -> Iterator[list[str]]:
    """The path of every visible command and group, the program itself first (``[]``)."""
    root = typer.main.get_command(app)

    def walk(command: object, path: list[str]) -> Iterator[list[str]]:
        yield path
        commands = getattr(command, "commands", None) or {}
        for name in list(commands):
            sub = commands[name]
            if not getattr(sub, "hidden", False):
                yield from walk(sub, [*path, name])

    yield from walk(root, [])
