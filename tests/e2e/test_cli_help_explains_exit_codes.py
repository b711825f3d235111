"""``notochord --help`` explains the exit codes, so that a script can be written from the help alone
(before: they were listed only in the README).
"""

from __future__ import annotations

import re

from typer.testing import CliRunner

from notochord.cli import app
from notochord.cli.check_cmd import PROBLEMS_FOUND
from notochord.cli.common import _EXIT_CODES, INTERRUPTED, OUTPUT_CLOSED

# what each code means, in words the help must use (the README's table says the same)
MEANINGS = {
    0: "success",
    1: "unexpected error",
    2: "bad usage or invalid input",
    3: "not found",
    4: "permission refused",
    5: "quota reached",
    6: "revert refused",
    7: "gem run timed out",
    8: "disk is full",
    9: "check found problems",
    10: "busy",
    11: "database server",
    130: "interrupted by Ctrl-C",
    141: "output was cut off",
}


def _root_help() -> str:
    page = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert page.exit_code == 0, page.output
    return " ".join(page.stdout.replace("│", " ").split())


def test_the_root_help_says_what_every_exit_code_means() -> None:
    shown = _root_help()
    missing = [f"{code} {words}" for code, words in MEANINGS.items() if not re.search(rf"\b{code} {words}", shown)]
    assert missing == [], shown


def test_every_exit_code_a_command_can_give_is_among_those_explained() -> None:
    given = {0, 1, 2, 7, PROBLEMS_FOUND, INTERRUPTED, OUTPUT_CLOSED} | {code for _, code in _EXIT_CODES}
    assert given == set(MEANINGS)


def test_the_root_help_says_how_errors_read_after_json() -> None:
    assert 'With --json an error is printed on stderr as {"error": {"code": …, "message": …, "exitCode": …}}' in (
        _root_help()
    )
