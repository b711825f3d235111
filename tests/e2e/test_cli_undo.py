"""Undo from the command line: in order, with deleted entities, and settling conflicts.

Commands run in-process through typer's ``CliRunner`` against a real data directory; the contacts
example runs as a real gem. Exit codes as in the README: 2 bad usage, 3 not found, 6 revert refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Cli, initialised

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ENV = {"NOTOCHORD_EMBEDDER": "none"}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


# ---------------------------------------------------------------- undo in order


def test_undoing_an_earlier_city_after_a_later_one_is_refused_and_undoing_both_leaves_none(cli: Cli) -> None:
    """OD-K44: revert 1 is refused as superseded (exit 6); revert 2 brings Delft
    back, and then revert 1 leaves no city."""
    delft = cli.json("facts", "put", "location.home.city", "Delft")
    leiden = cli.json("facts", "put", "location.home.city", "Leiden")

    refused = cli.run("changes", "revert", str(delft["changeId"]), code=6)
    assert f"superseded by the later change {leiden['changeId']}" in refused.stderr
    assert cli.values("self", "location.home.city") == ["Leiden"]

    cli.run("changes", "revert", str(leiden["changeId"]))
    assert cli.values("self", "location.home.city") == ["Delft"]
    assert cli.run("changes", "revert", str(delft["changeId"])).stdout.strip() == "reverted: 1 change"
    assert cli.values("self", "location.home.city") == []


# ---------------------------------------------------------------- deleted entities


def test_deleting_an_entity_expires_the_relations_to_it_and_undo_brings_them_back(cli: Cli) -> None:
    """After ``entities delete``, no fact shows a relation to the deleted entity."""
    ann = cli.json("entities", "resolve", "--name", "Ann", "--create")
    bob = cli.json("entities", "resolve", "--name", "Bob", "--create")
    cli.run("facts", "put", "relation.colleague", "null", "--subject", str(ann["id"]), "--object", str(bob["id"]))

    deleted = cli.json("entities", "delete", str(bob["id"]))
    assert "relation" not in cli.run("facts", "lookup", str(ann["id"])).stdout
    assert cli.json("facts", "lookup", str(ann["id"])) == []

    cli.run("changes", "revert", str(deleted["change"]))
    [relation] = cli.json("facts", "lookup", str(ann["id"]))
    assert (relation["predicate"], relation["object"]) == ("relation.colleague", bob["id"])


def test_the_contacts_example_still_lists_colleagues_after_one_is_deleted(cli: Cli) -> None:
    """The contacts gem no longer fails with "not found: no entity"."""
    cli.run("gem", "install", str(EXAMPLES / "contacts"))
    for switch in cli.json("gem", "permissions", "contacts"):
        cli.run("gem", "grant", "contacts", switch["permission"])
    people = {"people": [{"email": "zhangsan@acme.nl", "name": "Zhang San"}, {"email": "li@acme.nl", "name": "Li Wei"}]}
    cli.run("gem", "run", "contacts", "meet", "--input", json.dumps(people))
    [li] = cli.json("entities", "list", "--query", "Li Wei")

    deleted = cli.run("entities", "delete", str(li["id"])).stdout
    assert deleted.startswith("deleted Li Wei and ") and "to it (change " in deleted
    listed = cli.run("gem", "run", "contacts", "colleagues", "--input", json.dumps({"email": "zhangsan@acme.nl"}))
    assert json.loads(listed.stdout) == {"person": "Zhang San", "colleagues": []}


# ---------------------------------------------------------------- settling conflicts


def _conflict(cli: Cli) -> dict[str, Any]:
    cli.run("facts", "put", "location.home.city", "Utrecht")
    blocked = cli.json("facts", "put", "location.home.city", "Amsterdam", "--as-assistant")
    assert blocked["status"] == "conflict"
    [conflict] = cli.json("changes", "list", "--status", "conflict")
    return dict(conflict)


def test_a_listed_conflict_shows_the_current_and_the_proposed_value(cli: Cli) -> None:
    """The human listing names both values and how to settle the conflict."""
    conflict = _conflict(cli)
    listing = cli.run("changes", "list").stdout
    assert "current: Utrecht   proposed: Amsterdam" in listing
    assert f"notochord changes resolve {conflict['id']} --take-theirs | --keep-mine" in listing


def test_taking_theirs_makes_the_proposed_value_current_and_can_be_undone(cli: Cli) -> None:
    """``changes resolve ID --take-theirs`` is a change of its own; reverting it
    brings back the user's value and reopens the conflict."""
    conflict = _conflict(cli)
    taken = cli.run("changes", "resolve", str(conflict["id"]), "--take-theirs").stdout
    assert "took location.home.city = Amsterdam proposed by assistant" in taken
    assert cli.values("self", "location.home.city") == ["Amsterdam"]
    assert cli.json("changes", "list", "--status", "conflict") == []
    # the user accepted it: it is now the user's value, so the assistant cannot overwrite it either
    assert cli.json("facts", "put", "location.home.city", "Rotterdam", "--as-assistant")["status"] == "conflict"

    [resolution] = [c for c in cli.json("changes", "list") if c["op"] == "changes.resolve"]
    cli.run("changes", "revert", str(resolution["id"]))
    assert cli.values("self", "location.home.city") == ["Utrecht"]
    assert conflict["id"] in [c["id"] for c in cli.json("changes", "list", "--status", "conflict")]


def test_keeping_mine_closes_the_conflict_and_leaves_the_value(cli: Cli) -> None:
    """``--keep-mine`` settles the conflict without touching the value."""
    conflict = _conflict(cli)
    outcome = cli.json("changes", "resolve", str(conflict["id"]), "--keep-mine")
    assert (outcome["status"], outcome["factId"]) == ("kept_mine", None)
    assert cli.values("self", "location.home.city") == ["Utrecht"]
    assert cli.json("changes", "list", "--status", "conflict") == []


def test_resolve_needs_exactly_one_choice_and_an_open_conflict(cli: Cli) -> None:
    """Bad usage exits 2 with a clear message, an unknown change 3; nothing changes."""
    conflict = _conflict(cli)
    both = cli.run("changes", "resolve", str(conflict["id"]), "--take-theirs", "--keep-mine", code=2)
    assert "exactly one of --take-theirs or --keep-mine" in both.output
    cli.run("changes", "resolve", str(conflict["id"]), code=2)
    cli.run("changes", "resolve", "999", "--keep-mine", code=3)
    [applied] = [c for c in cli.json("changes", "list") if c["status"] == "applied"]
    refused = cli.run("changes", "resolve", str(applied["id"]), "--keep-mine", code=2)
    assert "not an open conflict" in refused.stderr
    assert cli.values("self", "location.home.city") == ["Utrecht"]
    assert len(cli.json("changes", "list", "--status", "conflict")) == 1


def test_a_proposed_relation_is_listed_with_the_entity_it_points_at(cli: Cli) -> None:
    """An object-only proposal shows which entity was proposed."""
    ann = cli.json("entities", "resolve", "--name", "Ann", "--create")
    bea = cli.json("entities", "resolve", "--name", "Bea", "--create")
    cli.run("facts", "put", "relation.spouse", "null", "--object", str(ann["id"]))
    cli.run("facts", "put", "relation.spouse", "null", "--object", str(bea["id"]), "--as-assistant")
    listing = cli.run("changes", "list", "--status", "conflict").stdout
    assert f"current: (no value)   proposed: entity {bea['id']}" in listing
