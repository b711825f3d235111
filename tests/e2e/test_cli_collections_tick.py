"""``notochord collections tick`` ticks only for gems that ask for collections the user chooses.

K-PERM-12/13: a collection the user ticks is reached through ``collections.read:user-selected`` or
``collections.write:user-selected``. Ticking for a gem whose manifest requests neither would give it
nothing, so it is refused (exit code 2) and nothing is recorded; unticking is always allowed, since
it can only take access away.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

import notochord


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = initialised(tmp_path / "vault")
    made.run("collections", "create", "Travel")
    return made


def _install(cli: Cli, tmp_path: Path, gem_id: str, permissions: list[str]) -> None:
    folder = tmp_path / "gems" / gem_id
    folder.mkdir(parents=True)
    knowledge = {"permissions": permissions, "reason": "to test ticks"} if permissions else {}
    manifest = {"id": gem_id, "name": gem_id, "version": "1.0.0", "permissions": {"knowledge": knowledge}}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    cli.run("gem", "install", str(folder))


def _ticked(cli: Cli, gem_id: str) -> set[int]:
    with notochord.open(cli.data_dir, embedder=None) as nc:
        return nc.personal.core.collections.ticked_now(gem_id)


@pytest.mark.parametrize(
    "permissions",
    [[], ["collections.read:keep"], ["collections.write:diary", "collections.create"]],
    ids=["nothing", "keep only", "diary and create"],
)
def test_ticking_for_a_gem_that_asks_for_no_chosen_collections_is_refused_and_changes_nothing(
    cli: Cli, tmp_path: Path, permissions: list[str]
) -> None:
    _install(cli, tmp_path, "keeper", permissions)
    refused = cli.run("collections", "tick", "keeper", "Travel", code=2)
    assert "gem keeper does not ask for collections you choose" in refused.stderr
    assert "nothing was changed" in refused.stderr
    assert "notochord gem permissions keeper" in refused.stderr
    assert _ticked(cli, "keeper") == set()


def test_a_refused_tick_is_a_json_error_with_exit_code_2(cli: Cli, tmp_path: Path) -> None:
    _install(cli, tmp_path, "keeper", ["collections.read:keep"])
    result = cli.run("collections", "tick", "keeper", "Travel", "--json", code=2)
    error = json.loads(result.stderr)["error"]
    assert error["exitCode"] == 2
    assert "collections.read:user-selected" in error["message"]


@pytest.mark.parametrize("permission", ["collections.read:user-selected", "collections.write:user-selected"])
def test_a_gem_asking_for_chosen_collections_can_have_one_ticked(cli: Cli, tmp_path: Path, permission: str) -> None:
    _install(cli, tmp_path, "reader", [permission])
    ticked = cli.json("collections", "tick", "reader", "Travel")
    assert ticked["ticked"] is True
    assert _ticked(cli, "reader") == {ticked["collection"]}


def test_unticking_is_allowed_for_any_gem_as_it_only_takes_access_away(cli: Cli, tmp_path: Path) -> None:
    _install(cli, tmp_path, "keeper", ["collections.read:keep"])
    assert "unticked" in cli.run("collections", "tick", "keeper", "Travel", "--off").stdout
    assert _ticked(cli, "keeper") == set()


@pytest.mark.parametrize(("given", "named"), [("999", "999"), ("Nowhere", "named 'Nowhere'")])
def test_a_collection_that_does_not_exist_is_named_in_the_refusal(
    cli: Cli, tmp_path: Path, given: str, named: str
) -> None:
    """K-PERM-13: the person is told which collection was not found (exit code 3) and how to list them."""
    _install(cli, tmp_path, "reader", ["collections.read:user-selected"])
    result = cli.run("collections", "tick", "reader", given, code=3)
    said = " ".join(result.stderr.split())
    assert f"not found: no collection {named}" in said, said
    assert "notochord collections list" in said, said
    assert _ticked(cli, "reader") == set()
