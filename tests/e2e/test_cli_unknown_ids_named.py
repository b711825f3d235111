"""An id that names nothing is refused in words that repeat the id and say where to find the right
one, with exit code 3 and nothing changed (before: ``not found: no fact``, the id left out, so a
script's log or a typo in a long command line did not show which id was wrong).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

NOT_FOUND = 3


@pytest.fixture
def vault(tmp_path: Path) -> Cli:
    made = initialised(tmp_path / "vault")
    made.run("facts", "put", "location.home.city", "Utrecht")
    return made


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param(["facts", "retract", "4242"], "no fact 4242; see them with: notochord facts lookup", id="retract"),
        pytest.param(["facts", "pin", "4242"], "no fact 4242; see them with: notochord facts lookup", id="pin"),
        pytest.param(
            ["entities", "delete", "4242"], "no entity 4242; see them with: notochord entities list", id="entity"
        ),
        pytest.param(
            ["changes", "revert", "4242"], "no change 4242; see them with: notochord changes list", id="revert"
        ),
        pytest.param(
            ["changes", "resolve", "4242", "--keep-mine"],
            "no change 4242; see them with: notochord changes list",
            id="resolve",
        ),
        pytest.param(["docs", "show", "4242"], "no document 4242; see them with: notochord docs list", id="show"),
        pytest.param(["docs", "delete", "4242"], "no document 4242; see them with: notochord docs list", id="delete"),
        pytest.param(
            ["docs", "move", "4242", "keep"], "no document 4242; see them with: notochord docs list", id="move"
        ),
    ],
)
def test_an_unknown_id_is_named_with_where_to_see_the_known_ones(vault: Cli, args: list[str], said: str) -> None:
    """K-ENT-13: the message still contains ``no entity`` (``no fact``, ``no document``…)."""
    result = vault.run(*args, code=NOT_FOUND)
    assert result.stdout == ""
    assert result.stderr == f"error: not found: {said}\n"
    error = json.loads(vault.run(*args, "--json", code=NOT_FOUND).stderr)["error"]
    assert (error["code"], error["message"], error["exitCode"]) == ("E_NOT_FOUND", f"not found: {said}", NOT_FOUND)
    assert vault.json("status")["spaces"][0]["changes"] == 1


@pytest.mark.parametrize("missing_first", [True, False], ids=["keep-missing", "merged-missing"])
def test_merging_names_the_entity_that_does_not_exist(vault: Cli, missing_first: bool) -> None:
    """K-ENT-13: of the two ids given to ``entities merge``, the one that names nothing is named."""
    ann = vault.json("entities", "resolve", "--email", "ann@example.com", "--create")["id"]
    pair = ["4242", str(ann)] if missing_first else [str(ann), "4242"]
    result = vault.run("entities", "merge", *pair, code=NOT_FOUND)
    assert result.stderr == "error: not found: no entity 4242; see them with: notochord entities list\n"
    assert [e["id"] for e in vault.json("entities", "list")] == [ann]
