"""Gems run for real from the command line, as a person would drive them (EX-01, EX-02, EX-14, EX-15).

Every command runs in-process through typer's ``CliRunner`` against one data directory, while each
tool runs in its own confined process. Covered:

- the recipe gem (EX-15 with manifest EX-01): refused with exit code 4 while its permissions are off
  (AS-04), ``{"fact": "applied", "doc": "created"}`` once on (AS-05), ``duplicate``/``unchanged`` the
  second time (AS-06), ``runs undo`` takes the first run's fact and document out of the gem's view
  (K-CHG), and ``gem uninstall --delete-data`` (K-UNINST);
- the weather gem (EX-14 with manifest EX-02): AS-01, AS-02 and AS-03;
- the diary and contacts examples, with the commands of their READMEs;
- ``runs list`` / ``runs show`` as JSON, a timeout (exit code 7, status ``timeout``) and a tool that
  raises (non-zero exit, status ``failed``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Cli as Harness

import notochord
from notochord.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RECIPE = {"id": "1", "dish": "Tomato beef stew", "recipe": "Brown the beef…"}
RECIPE_PERMISSIONS = ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create")


@dataclass
class Cli(Harness):
    """The command line, full text only; the vault is made first, as ``make run`` does."""

    init_first: bool = True

    def gem_run(self, gem: str, *args: str, input: Any = None, code: int = 0) -> Any:
        """``gem run GEM … --input JSON``; the printed output parsed, or the result when it failed."""
        result = self.run("gem", "run", gem, *args, "--input", json.dumps(input or {}), code=code)
        return json.loads(result.stdout) if code == 0 else result

    def runs(self, gem: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.json("runs", "list", *(["--gem", gem] if gem else []))
        return found


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "vault")


def _write_gem(root: Path, gem_id: str, source: str) -> Path:
    """A one-tool Python gem in ``root/gem_id``."""
    folder = root / gem_id
    folder.mkdir(parents=True)
    (folder / "tool.py").write_text(source, encoding="utf-8")
    manifest = {
        "id": gem_id,
        "name": gem_id,
        "version": "1.0.0",
        "tools": [{"name": "main", "entry": "tool.py"}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


async def _recipes_view(space: notochord.Space) -> dict[str, Any]:
    """What the recipe gem itself sees now, through a fresh ``ctx``."""
    ctx = space.gems.context("recipes")
    assert ctx.knowledge is not None
    collections = [c.model_dump(by_alias=True) for c in await ctx.knowledge.collections.list()]
    facts = [f.model_dump(by_alias=True) for f in await ctx.knowledge.facts.lookup("self", "pref.food")]
    documents = []
    for collection in collections:
        documents += [d.title for d in await ctx.knowledge.documents.list(collection["ref"])]
    return {"collections": collections, "facts": facts, "documents": documents}


def _gem_view(data_dir: Path) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, embedder="none", index_in_background=False)
    with notochord.open(data_dir, settings, embedder=None) as nc:
        return asyncio.run(_recipes_view(nc.personal))


# ---------------------------------------------------------------------------------------- recipes


def test_recipe_gem_from_refusal_to_undo_and_uninstall(cli: Cli) -> None:
    """AS-04 → AS-05 → AS-06 → undo of the first run (K-CHG) → uninstall with its data (K-UNINST)."""
    installed = cli.json("gem", "install", str(EXAMPLES / "recipes"))
    assert installed["id"] == "recipes"
    assert {p["permission"]: p["on"] for p in installed["permissions"]} == dict.fromkeys(RECIPE_PERMISSIONS, False)

    refused = cli.gem_run("recipes", input=RECIPE, code=4)
    assert "lacks knowledge permission collections.create" in refused.stderr
    [failed] = cli.runs("recipes")
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "E_PERMISSION"

    for permission in RECIPE_PERMISSIONS:
        cli.run("gem", "grant", "recipes", permission)
    assert cli.gem_run("recipes", input=RECIPE) == {"fact": "applied", "doc": "created"}
    first = cli.runs("recipes")[0]
    assert first["status"] == "succeeded"
    assert first["output"] == {"fact": "applied", "doc": "created"}

    view = _gem_view(cli.data_dir)
    recipes = [c for c in view["collections"] if c["name"] == "Recipes"]
    assert [{k: c[k] for k in ("name", "builtin", "parent", "canWrite")} for c in recipes] == [
        {"name": "Recipes", "builtin": None, "parent": None, "canWrite": True}
    ]
    assert [(f["predicate"], f["value"]) for f in view["facts"]] == [("pref.food.rated", "Tomato beef stew")]
    assert view["documents"] == ["Tomato beef stew"]

    assert cli.gem_run("recipes", input=RECIPE) == {"fact": "duplicate", "doc": "unchanged"}
    assert len(_gem_view(cli.data_dir)["documents"]) == 1

    undone = cli.json("runs", "undo", first["run"])
    assert undone["knowledge"]["status"] == "reverted"
    assert undone["knowledge"]["count"] >= 2
    after = _gem_view(cli.data_dir)
    assert after["facts"] == []
    assert after["documents"] == []
    assert [c for c in after["collections"] if c["name"] == "Recipes"] == []

    text = cli.run("gem", "uninstall", "recipes", "--delete-data").stdout
    assert "uninstalled recipes" in text
    assert cli.json("gem", "list") == []


# ---------------------------------------------------------------------------------------- weather


def test_weather_gem_answers_only_with_permission_and_a_known_city(cli: Cli) -> None:
    """AS-02 (off: no error thrown, a query returns []), AS-03 (on, no city), AS-01 (on, Utrecht)."""
    cli.run("gem", "install", str(EXAMPLES / "weather"))
    unknown = {"error": "I do not know where you live"}
    assert cli.gem_run("weather") == unknown  # AS-02, nothing known and nothing allowed
    cli.run("gem", "grant", "weather", "facts.read:self:location.home.*")
    assert cli.gem_run("weather") == unknown  # AS-03
    cli.run("facts", "put", "location.home.city", "Utrecht")
    assert cli.gem_run("weather") == {"city": "Utrecht"}  # AS-01
    assert cli.gem_run("weather", "home") == {"city": "Utrecht"}  # the tool may be named
    cli.run("gem", "revoke", "weather", "facts.read:self:location.home.*")
    assert cli.gem_run("weather") == unknown  # AS-02 with a city known: still nothing read
    assert [r["status"] for r in cli.runs("weather")] == ["succeeded"] * 5


# ---------------------------------------------------------------------------------------- the README examples


def test_diary_readme_commands(cli: Cli) -> None:
    """examples/diary/README.md: write, recall, list the runs, undo the write (K-DOC, K-SRCH, K-CHG)."""
    cli.run("gem", "install", str(EXAMPLES / "diary"))
    cli.run("gem", "grant", "diary", "collections.read:diary")
    cli.run("gem", "grant", "diary", "collections.write:diary")
    written = cli.gem_run("diary", "write", input={"note": "Cooked tomato beef stew with Zhang San."})
    assert written["status"] == "created"
    assert isinstance(written["date"], str)
    again = cli.gem_run("diary", "write", input={"note": "Washed up afterwards."})
    assert again == {"date": written["date"], "status": "updated"}
    found = cli.gem_run("diary", "recall", input={"query": "stew"})
    assert [hit["date"] for hit in found] == [written["date"]]
    assert "Cooked tomato beef stew with Zhang San." in found[0]["text"]

    listing = cli.run("runs", "list").stdout
    assert listing.count("diary/write") == 2
    assert "diary/recall" in listing
    write_runs = [r["run"] for r in cli.runs("diary") if r["tool"] == "write"]
    for run in write_runs:  # newest first: the append, then the entry itself
        cli.run("runs", "undo", run)
    assert cli.gem_run("diary", "recall", input={"query": "stew"}) == []


def test_contacts_readme_commands(cli: Cli) -> None:
    """examples/contacts/README.md: install, read the permissions, grant them, meet, colleagues (K-ENT)."""
    cli.run("gem", "install", str(EXAMPLES / "contacts"))
    sentences = cli.run("gem", "permissions", "contacts").stdout
    assert "[ ]" in sentences
    for switch in cli.json("gem", "permissions", "contacts"):
        cli.run("gem", "grant", "contacts", switch["permission"])
    people = {
        "people": [
            {"email": "zhangsan@acme.nl", "name": "Zhang San", "company": "Acme"},
            {"email": "li@acme.nl", "name": "Li Wei"},
        ]
    }
    assert cli.gem_run("contacts", "meet", input=people) == {"people": ["Zhang San", "Li Wei"], "relation": "applied"}
    assert cli.gem_run("contacts", "colleagues", input={"email": "zhangsan@acme.nl"}) == {
        "person": "Zhang San",
        "colleagues": ["Li Wei"],
    }
    assert cli.gem_run("contacts", "colleagues", input={"email": "nobody@acme.nl"}) == {
        "error": "I do not know nobody@acme.nl"
    }


# ---------------------------------------------------------------------------------------- runs


def test_runs_list_and_show_as_json(cli: Cli) -> None:
    """Each run is recorded with its tool, status, output, isolation notes and log."""
    cli.run("gem", "install", str(EXAMPLES / "weather"))
    cli.gem_run("weather")
    [listed] = cli.runs()
    assert listed["gem"] == "weather"
    assert listed["tool"] == "home"
    assert listed["status"] == "succeeded"
    assert listed["output"] == {"error": "I do not know where you live"}
    assert listed["error"] is None
    assert listed["startedAt"] <= listed["finishedAt"]
    shown = cli.json("runs", "show", listed["run"])
    assert {k: v for k, v in shown.items() if k != "log"} == listed
    assert isinstance(shown["log"], str)
    assert [note.split(":")[0] for note in shown["isolation"]] == ["network", "processes", "files", "privileges"]
    text = cli.run("runs", "show", listed["run"]).stdout
    assert f"run {listed['run']}: weather/home succeeded" in text
    assert cli.runs("recipes") == []


def test_run_id_given_on_the_command_line_names_the_run(cli: Cli) -> None:
    cli.run("gem", "install", str(EXAMPLES / "weather"))
    cli.gem_run("weather", "--run-id", "run-chosen-1")
    assert cli.json("runs", "show", "run-chosen-1")["status"] == "succeeded"


def test_tool_that_outlives_its_timeout_is_stopped_with_exit_code_7(cli: Cli, tmp_path: Path) -> None:
    sleepy = "import time\n\n\nasync def run(input, ctx):\n    time.sleep(60)\n    return {'woke': True}\n"
    cli.run("gem", "install", str(_write_gem(tmp_path / "gems", "sleepy", sleepy)))
    result = cli.gem_run("sleepy", "--timeout", "1", code=7)
    assert "did not finish within 1 s" in result.stderr
    [run] = cli.runs("sleepy")
    assert run["status"] == "timeout"
    assert run["error"]["code"] == "E_TIMEOUT"
    assert run["output"] is None


def test_tool_that_raises_fails_the_command_and_records_why(cli: Cli, tmp_path: Path) -> None:
    broken = "async def run(input, ctx):\n    print('about to fail')\n    raise RuntimeError('the oven is cold')\n"
    cli.run("gem", "install", str(_write_gem(tmp_path / "gems", "broken", broken)))
    result = cli.gem_run("broken", code=1)
    assert "the oven is cold" in result.stderr
    [run] = cli.runs("broken")
    assert run["status"] == "failed"
    assert run["error"] == {"name": "RuntimeError", "code": "E_TOOL", "message": "the oven is cold"}
    shown = cli.json("runs", "show", run["run"])
    assert "about to fail" in shown["log"]  # what the tool printed before it failed is kept


def test_input_that_is_not_json_is_bad_usage(cli: Cli) -> None:
    cli.run("gem", "install", str(EXAMPLES / "weather"))
    result = cli.run("gem", "run", "weather", "--input", "{not json", code=2)
    assert "--input is not JSON" in result.stderr
    assert cli.runs() == []
