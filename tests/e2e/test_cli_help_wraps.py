"""Every command's ``--help`` reads as prose on an 80-column terminal.

A description is wrapped at the terminal's width, not at the source's line breaks: no line of it
ends in a stub of a few words because the source line was longer than the terminal.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cli_harness import command_paths
from typer.testing import CliRunner

from notochord.cli import app
from notochord.cli.help_text import reflow_help

WIDTH = 80
STUB = 45  # a wrapped line this short, followed by more of the same paragraph, is ragged


def _description(help_page: str) -> list[list[str]]:
    """The paragraphs of the description: between the usage line and the first panel."""
    lines = [line.rstrip() for line in help_page.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    paragraphs: list[list[str]] = [[]]
    for line in lines[start:end]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [paragraph for paragraph in paragraphs if paragraph]


PATHS = list(command_paths())


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "notochord")
def test_the_description_wraps_at_the_terminal_not_at_the_source(path: list[str]) -> None:
    page = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    assert page.exit_code == 0, page.output
    for paragraph in _description(page.stdout):
        ragged = [line for line in paragraph[:-1] if len(line) < STUB]
        assert not ragged, f"{' '.join(path)} --help breaks its prose early: {ragged}"


def test_the_commands_with_long_descriptions_are_among_those_checked() -> None:
    assert ["search"] in PATHS
    assert ["docs", "import"] in PATHS


def test_a_list_keeps_its_line_breaks() -> None:
    text = "One line.\n\nTwo kinds:\n- first\n- second\n\nProse that\ncontinues here."
    command = SimpleNamespace(help=text, commands={"sub": SimpleNamespace(help="A\nB.")})
    reflow_help(command)
    assert command.help == "One line.\n\nTwo kinds:\n- first\n- second\n\nProse that continues here."
    assert command.commands["sub"].help == "A B."
