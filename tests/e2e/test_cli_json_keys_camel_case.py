"""Every key the CLI prints with ``--json`` is camelCase (``changeId``, ``leftOut``, ``runId``), as
the gem API's results are (OD-K02); the user's own data inside them is printed as it was stored.

The commands below cover each kind of result: facts (K-FACT-*), changes (K-CHG-01), entities,
collections and documents (K-COL-06, K-DOC-19), gems and their runs (P-GEN-04), and the service's
commands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_harness import initialised

_SNAKE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")
_USER_DATA = ("value", "before", "after", "output", "input")
"""Keys whose contents are the user's or a gem's own JSON, printed as stored."""

_TOOL = """
async def run(input, ctx):
    await ctx.knowledge.collections.create("Notes")
    return {"kept_as_written": True}
"""


def _keys(value: Any, where: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield f"{where}.{key}"
            if key not in _USER_DATA:
                yield from _keys(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for inner in value:
            yield from _keys(inner, f"{where}[]")


def _snake_keys(printed: Any) -> list[str]:
    return sorted({path for path in _keys(printed) if _SNAKE.fullmatch(path.rpartition(".")[2])})


def _gem(root: Path) -> Path:
    folder = root / "notes"
    (folder / ".git").mkdir(parents=True)
    (folder / "main.py").write_text(_TOOL, encoding="utf-8")
    manifest = {
        "id": "notes",
        "name": "Notes",
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": ["collections.create"], "reason": "To keep notes"}},
        "tools": [{"name": "main", "entry": "main.py", "permissions": {"knowledge": True}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What each command printed with ``--json``, by its words."""
    root = tmp_path_factory.mktemp("keys")
    cli = initialised(root / "vault")
    out: dict[str, Any] = {}

    def run(*args: str) -> Any:
        out[" ".join(args[:2])] = cli.json(*args)
        return out[" ".join(args[:2])]

    city = run("facts", "put", "location.home.city", "Utrecht")
    run("facts", "put", "pref.food.liked", '{"dish_name": "stew"}')
    run("facts", "lookup", "self")
    run("facts", "pin", str(city["id"]))
    run("changes", "list")
    run("entities", "list")
    run("collections", "create", "Recipes")
    run("collections", "list")
    note = root / "soup.md"
    note.write_text("# Soup\n\nleeks\n", encoding="utf-8")
    run("docs", "import", str(note), "--collection", "Recipes")
    [document] = run("docs", "list", "Recipes")
    run("docs", "show", str(document["id"]))
    run("docs", "move", str(document["id"]), "keep")
    run("search", "leeks")
    gem = _gem(root)
    run("gem", "install", str(gem))
    run("gem", "permissions", "notes")
    run("gem", "grant", "notes", "collections.create")
    run("gem", "show", "notes")
    run("gem", "run", "notes", "main")
    [ran] = run("runs", "list")
    run("runs", "show", ran["run"])
    run("gem", "upgrade", str(gem))
    run("gem", "uninstall", "notes", "--delete-data")
    run("changes", "revert", str(city["changeId"]))
    run("facts", "retract", str(city["id"]))
    run("network", "show")
    run("status")
    run("check")
    run("console-url")
    run("token", "--user", "u1", "--org", "acme", "--role", "member")
    return out


def test_every_json_key_the_cli_prints_is_camel_case_OD_K02(printed: dict[str, Any]) -> None:
    snake = {command: keys for command, value in printed.items() if (keys := _snake_keys(value))}
    assert snake == {}


def test_gem_install_and_upgrade_name_what_they_left_out_as_left_out_camel_case_P_GEN_04(
    printed: dict[str, Any],
) -> None:
    for command in ("gem install", "gem upgrade"):
        assert printed[command]["leftOut"] == {".git": 1}
        assert "left_out" not in printed[command]


def test_a_fact_s_own_value_keeps_its_keys_as_stored(printed: dict[str, Any]) -> None:
    [liked] = [f for f in printed["facts lookup"] if f["predicate"] == "pref.food.liked"]
    assert liked["value"] == {"dish_name": "stew"}
    assert {"changeId", "validFrom", "recordedAt"} <= set(printed["facts put"]) | set(liked)
