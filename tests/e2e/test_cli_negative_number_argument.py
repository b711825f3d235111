"""A negative number where a command takes an id (``facts retract -1``) is read by the command-line
parser as an option it does not know. The refusal says so and how to pass the number if it was
meant (after ``--``), instead of only "No such option: -1" about an option nobody typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def _said(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("facts", "retract", "-1"), id="facts-retract"),
        pytest.param(("changes", "revert", "-7"), id="changes-revert"),
        pytest.param(("docs", "show", "-12"), id="docs-show"),
    ],
)
def test_a_negative_number_as_an_argument_is_explained_with_the_way_to_give_it(cli: Cli, args: tuple[str, ...]) -> None:
    said = _said(cli.run(*args, code=2).stderr)
    number = args[-1]
    assert f"No such option: {number}" in said
    example = f"notochord {' '.join(args[:-1])} -- {number}"
    assert f"a number that starts with - is read as an option: put -- before it ({example})" in said


def test_after_json_the_explanation_is_in_the_json_message(cli: Cli) -> None:
    error = json.loads(cli.run("facts", "retract", "-1", "--json", code=2).stderr)["error"]
    assert error["code"] == "E_USAGE"
    assert "put -- before it" in error["message"]


def test_an_unknown_option_that_is_not_a_number_keeps_its_plain_message(cli: Cli) -> None:
    said = _said(cli.run("facts", "lookup", "--nope", code=2).stderr)
    assert "No such option: --nope" in said
    assert "put -- before it" not in said
