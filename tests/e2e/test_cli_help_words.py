"""Every command's ``--help`` speaks to the person using it.

A help page says what the command does and how to use it: no requirement ids, no source markup
(reStructuredText's double backticks), no account of how the command behaved in an earlier
version, and no options that belong to the shell rather than to the command.
"""

from __future__ import annotations

import re

import pytest
from cli_harness import command_paths
from typer.testing import CliRunner

from notochord.cli import app

_REQUIREMENT_ID = re.compile(r"\b(?:K|P|KB|OD|EX|AS)-[A-Z0-9]+(?:-\d+)?\b")
_HISTORY = ("used to ", "instead of claiming", "no longer answers")


PATHS = list(command_paths())


def _page(path: list[str]) -> str:
    page = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert page.exit_code == 0, page.output
    return page.stdout


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "notochord")
def test_a_help_page_names_no_requirement_ids_markup_or_history(path: list[str]) -> None:
    page = _page(path)
    assert not _REQUIREMENT_ID.search(page), page
    assert "``" not in page, page
    assert not [words for words in _HISTORY if words in page], page


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "notochord")
def test_a_help_page_offers_no_shell_completion_options(path: list[str]) -> None:
    """The top level offers none, so no group under it does either (``notochord facts
    --install-completion`` would install completion for a command that is not a program)."""
    page = _page(path)
    assert "--install-completion" not in page
    assert "--show-completion" not in page
