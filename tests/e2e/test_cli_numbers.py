"""Numbers on the command line: an id, a limit, a port or a timeout that is not a number, or is out
of its range, is bad usage (exit code 2) named in plain words, and nothing runs.

The argument parser's own wording ("Input should be a valid integer, unable to parse string as an
integer") is never shown, digits are ASCII digits (``١٢`` is not accepted as 12 behind the user's
back), and a limit must be at least 1: a negative one used to list everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import Cli, initialised

FOREIGN_WORDS = ("Input should", "unable to parse", "valid integer", "valid number", "float")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = initialised(tmp_path / "vault")
    made.run("facts", "put", "location.home.city", "Utrecht")
    return made


def _refused(cli: Cli, *args: str) -> str:
    result = cli.run(*args, code=2)
    said = " ".join((result.stdout + result.stderr).split()).replace("│", "").replace(" ", "")
    for words in FOREIGN_WORDS:
        assert words.replace(" ", "") not in said, result.stderr
    return " ".join(result.stderr.replace("│", " ").split())


@pytest.mark.parametrize(
    "args",
    [
        ("facts", "retract", "abc"),
        ("facts", "pin", "1.5"),
        ("docs", "show", "x1"),
        ("entities", "delete", "١٢"),
        ("entities", "merge", "1", "two"),
        ("changes", "revert", "0x10"),
        ("changes", "resolve", " ", "--keep-mine"),
    ],
)
def test_an_id_that_is_not_a_whole_number_is_bad_usage_in_plain_words(cli: Cli, args: tuple[str, ...]) -> None:
    """K-CHG-01: the refusal names the value and says an id is a whole number."""
    said = _refused(cli, *args)
    assert "is not a whole number" in said, said


@pytest.mark.parametrize("command", [("changes", "list"), ("runs", "list")])
@pytest.mark.parametrize("limit", ["0", "-5"])
def test_a_limit_below_one_is_bad_usage_and_lists_nothing(cli: Cli, command: tuple[str, ...], limit: str) -> None:
    """K-CHG-01: at most 0 or -5 entries means nothing sensible; it is refused, not read as "all"."""
    said = _refused(cli, *command, f"--limit={limit}")
    assert f"must be at least 1, not {limit}" in said, said


def test_a_limit_that_is_not_a_number_is_bad_usage(cli: Cli) -> None:
    said = _refused(cli, "changes", "list", "--limit", "ten")
    assert "“ten” is not a whole number" in said or "'ten' is not a whole number" in said, said


def test_a_limit_of_one_still_lists_one(cli: Cli) -> None:
    assert len(cli.json("changes", "list", "--limit", "1")) == 1


def test_a_timeout_that_is_not_a_number_is_bad_usage(cli: Cli) -> None:
    said = _refused(cli, "gem", "run", "weather", "--timeout", "soon")
    assert "is not a number of seconds" in said, said


def test_a_port_outside_the_range_is_bad_usage(cli: Cli) -> None:
    said = _refused(cli, "console-url", "--port", "70000")
    assert "must be at most 65535, not 70000" in said, said


@pytest.mark.parametrize(("limit", "said"), [("0", "must be at least 1, not 0"), ("x", "'x' is not a whole number")])
def test_a_search_limit_outside_its_range_is_bad_usage(cli: Cli, limit: str, said: str) -> None:
    """K-SRCH-01: the search's limit is read like every other one."""
    assert said in _refused(cli, "search", "Utrecht", "--limit", limit)


@pytest.mark.parametrize(
    ("window", "words"),
    [
        ("²:3", "'²' is not a whole number"),
        ("١:3", "'١' is not a whole number"),
        ("0:-1", "must be at least 0, not -1"),
        ("0:99999999999999999999", "a number is too large"),
        ("3", "use FROM:TO with chunk numbers"),
    ],
)
def test_a_passage_range_that_is_not_two_chunk_numbers_is_bad_usage(cli: Cli, window: str, words: str) -> None:
    """K-DOC-11, OD-K36: ``docs show --range`` reads ASCII chunk numbers of 0 or more; a superscript
    two (which Python calls a digit, and then cannot read) used to end in a traceback."""
    said = _refused(cli, "docs", "show", "1", "--range", window)
    assert words in said, said
    assert "use FROM:TO" in said
