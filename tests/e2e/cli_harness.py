"""One way for the end-to-end tests to run ``notochord`` in-process and check its exit code."""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from notochord.cli import app

FULL_TEXT_ONLY = {"NOTOCHORD_EMBEDDER": "none"}


@dataclass
class Cli:
    """Runs ``notochord --data-dir <data_dir> …`` through typer's ``CliRunner`` (full text only by
    default) and fails the test, with both streams and any traceback, when the exit code is not ``code``."""

    data_dir: Path
    env: dict[str, str] = field(default_factory=lambda: dict(FULL_TEXT_ONLY))
    runner: CliRunner = field(default_factory=CliRunner)

    def run(self, *args: str, code: int = 0) -> Result:
        argv = ["--data-dir", str(self.data_dir), *args]
        result = self.runner.invoke(app, argv, env=self.env)
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
