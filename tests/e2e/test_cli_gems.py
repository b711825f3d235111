"""Gems from the command line: clear answers to mistakes, and switches that say what changed.

Every command runs in-process through typer's ``CliRunner`` against one data directory; gem tools
run in their own confined processes. Covered:

- not-found is exit code 3 for an unknown gem, tool or run (README's table of exit codes);
- a refused call names the command that switches on the permission the gem requested;
- ``gem grant GEM PERM…`` switches several permissions at once, or none;
- ``gem upgrade`` lists the new permissions it brings, switched off;
- ``network allow`` and ``network block`` keep lists of their own and print what changed;
- ``gem install`` and ``gem upgrade`` refuse a tool whose entry file is missing or outside the folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

import notochord
from notochord.net.user_rules import NetworkRulesStore
from notochord.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ENV = {"NOTOCHORD_EMBEDDER": "none"}
RECIPE = {"id": "1", "dish": "Tomato beef stew", "recipe": "Brown the beef…"}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


def _gem(root: Path, gem_id: str, permissions: list[str], tools: dict[str, str], *, version: str = "1.0.0") -> Path:
    """A Python gem in ``root/gem_id``: each tool ``name → source`` in ``name.py``."""
    folder = root / gem_id
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in tools.items():
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    manifest = {
        "id": gem_id,
        "name": gem_id,
        "version": version,
        "permissions": {"knowledge": {"permissions": permissions, "reason": "For the test"}},
        "tools": [{"name": n, "entry": f"{n}.py", "permissions": {"knowledge": True}} for n in tools],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


CREATE_COLLECTION = """
async def run(input, ctx):
    await ctx.knowledge.collections.create("Notes")
    return "created"
"""

# ---------------------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    "args",
    [
        ("gem", "run", "nosuch"),
        ("gem", "show", "nosuch"),
        ("gem", "grant", "nosuch", "collections.create"),
        ("gem", "revoke", "nosuch", "collections.create"),
        ("gem", "permissions", "nosuch"),
        ("gem", "uninstall", "nosuch"),
        ("runs", "show", "nosuch"),
        ("runs", "undo", "nosuch"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_an_unknown_gem_or_run_is_not_found_with_exit_code_3(cli: Cli, args: tuple[str, ...]) -> None:
    """The README's table gives 3 for "not found"."""
    result = cli.run(*args, code=3)
    assert "'nosuch'" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_tool_of_a_gem_is_not_found(cli: Cli, tmp_path: Path) -> None:
    """The message lists the tools there are."""
    cli.run("gem", "install", str(_gem(tmp_path, "notes", [], {"main": CREATE_COLLECTION})))
    result = cli.run("gem", "run", "notes", "other", code=3)
    assert "gem notes has no tool 'other' (tools: main)" in result.stderr


BUSY = """
from notochord.errors import BusyError


async def run(input, ctx):
    raise BusyError("the gem's database is in use now; try again in a minute", retry_after=60)
"""


def test_a_run_that_fails_busy_exits_10_like_any_busy_command(cli: Cli, tmp_path: Path) -> None:
    """docs/gems.md's table of errors: a run ended by ``BusyError`` (``E_BUSY``) exits 10, the
    README's "busy, retry later", not 1 for an unexpected error."""
    cli.run("gem", "install", str(_gem(tmp_path, "busy", [], {"main": BUSY})))
    result = cli.run("gem", "run", "busy", code=10)
    assert "try again in a minute" in result.stderr
    assert cli.json("runs", "list", "--gem", "busy")[0]["error"]["code"] == "E_BUSY"


BYTES = """
async def run(input, ctx):
    return {"icon": bytes([1, 2, 3]), "parts": [b"ok"]}
"""


def test_bytes_a_tool_returns_reach_the_caller_as_base64(cli: Cli, tmp_path: Path) -> None:
    """docs/gems.md: "bytes are returned as ``{"$bytes": "<base64>"}``"; P-FILE-13: the return value
    passes through unchanged, so never as the text of a Python ``repr``."""
    cli.run("gem", "install", str(_gem(tmp_path, "icons", [], {"main": BYTES})))
    expected = {"icon": {"$bytes": "AQID"}, "parts": [{"$bytes": "b2s="}]}
    assert json.loads(cli.run("gem", "run", "icons").stdout) == expected
    assert cli.json("runs", "list", "--gem", "icons")[0]["output"] == expected


# ---------------------------------------------------------------------------------------- permissions


def test_a_refused_call_names_the_requested_permission_to_switch_on(cli: Cli) -> None:
    """The recipe gem needs ``pref.food.rated`` and requested ``pref.food.*``."""
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    first = cli.run("gem", "run", "recipes", "--input", json.dumps(RECIPE), code=4)
    assert "switch it on with: notochord gem grant recipes collections.create" in first.stderr
    cli.run("gem", "grant", "recipes", "collections.create")
    second = cli.run("gem", "run", "recipes", "--input", json.dumps(RECIPE), code=4)
    assert (
        "lacks knowledge permission facts.write:self:pref.food.rated "
        "(switch it on with: notochord gem grant recipes 'facts.write:self:pref.food.*')"
    ) in second.stderr
    # the command as printed works
    cli.run("gem", "grant", "recipes", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    assert json.loads(cli.run("gem", "run", "recipes", "--input", json.dumps(RECIPE)).stdout) == {
        "fact": "applied",
        "doc": "created",
    }


def test_a_call_the_gem_never_requested_says_its_manifest_must_request_it(cli: Cli, tmp_path: Path) -> None:
    """No command is offered that could not work."""
    cli.run("gem", "install", str(_gem(tmp_path, "notes", ["collections.read:diary"], {"main": CREATE_COLLECTION})))
    result = cli.run("gem", "run", "notes", code=4)
    assert "lacks knowledge permission collections.create" in result.stderr
    assert "gem notes does not request it; its manifest must request it" in result.stderr
    assert "gem grant" not in result.stderr


def test_grant_switches_several_permissions_at_once(cli: Cli) -> None:
    """``gem grant GEM PERM PERM…``."""
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    result = cli.run("gem", "grant", "recipes", "facts.read:self:pref.food.*", "collections.create")
    assert "facts.read:self:pref.food.* is now on for recipes" in result.stdout
    assert "collections.create is now on for recipes" in result.stdout
    switches = {p["permission"]: p["on"] for p in cli.json("gem", "permissions", "recipes")}
    assert switches == {
        "facts.read:self:pref.food.*": True,
        "facts.write:self:pref.food.*": False,
        "collections.create": True,
    }
    revoked = cli.json("gem", "revoke", "recipes", "facts.read:self:pref.food.*", "collections.create")
    assert revoked == {
        "gem": "recipes",
        "permissions": ["facts.read:self:pref.food.*", "collections.create"],
        "on": False,
    }
    assert not any(p["on"] for p in cli.json("gem", "permissions", "recipes"))


def test_grant_with_one_unrequested_permission_switches_nothing(cli: Cli) -> None:
    """All are checked first; the error names the one that was not requested."""
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    result = cli.run("gem", "grant", "recipes", "collections.create", "changes.manage", code=2)
    assert "gem recipes did not request changes.manage" in result.stderr
    assert "nothing was changed" in result.stderr
    assert not any(p["on"] for p in cli.json("gem", "permissions", "recipes"))


def test_grant_with_a_malformed_permission_switches_nothing(cli: Cli) -> None:
    """A malformed string is bad input, named, and nothing moves."""
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    result = cli.run("gem", "grant", "recipes", "collections.create", "facts.read:self", code=2)
    assert "facts.read:self" in result.stderr
    assert not any(p["on"] for p in cli.json("gem", "permissions", "recipes"))


def test_grant_needs_a_permission(cli: Cli) -> None:
    cli.run("gem", "install", str(EXAMPLES / "recipes"))
    result = cli.run("gem", "grant", "recipes", code=2)
    assert "Missing argument" in result.stderr
    assert "PERMISSION" in result.stderr


def test_upgrade_lists_the_new_permissions_switched_off(cli: Cli, tmp_path: Path) -> None:
    """What the new version asks for is shown with its sentence, off; kept ones stay on."""
    tools = {"main": CREATE_COLLECTION}
    cli.run("gem", "install", str(_gem(tmp_path / "v1", "notes", ["collections.read:diary"], tools)))
    cli.run("gem", "grant", "notes", "collections.read:diary")
    v2 = _gem(tmp_path / "v2", "notes", ["collections.read:diary", "collections.create"], tools, version="2.0.0")
    text = cli.run("gem", "upgrade", str(v2)).stdout
    assert "upgraded notes to 2.0.0" in text
    assert "new permissions, switched off:" in text
    [line] = [line for line in text.splitlines() if "collections.create" in line and "[ ]" in line]
    sentence = next(
        p["sentenceEn"] for p in cli.json("gem", "permissions", "notes") if p["permission"] == "collections.create"
    )
    assert sentence in line
    assert "collections.read:diary" not in text
    switches = {p["permission"]: p["on"] for p in cli.json("gem", "permissions", "notes")}
    assert switches == {"collections.read:diary": True, "collections.create": False}


def test_upgrade_as_json_lists_added_and_dropped_permissions(cli: Cli, tmp_path: Path) -> None:
    tools = {"main": CREATE_COLLECTION}
    cli.run("gem", "install", str(_gem(tmp_path / "v1", "notes", ["collections.read:diary"], tools)))
    v2 = _gem(tmp_path / "v2", "notes", ["collections.create"], tools, version="2.0.0")
    upgraded = cli.json("gem", "upgrade", str(v2))
    assert [p["permission"] for p in upgraded["added"]] == ["collections.create"]
    assert [p["on"] for p in upgraded["added"]] == [False]
    assert upgraded["dropped"] == ["collections.read:diary"]


def test_upgrade_with_nothing_new_says_so(cli: Cli, tmp_path: Path) -> None:
    tools = {"main": CREATE_COLLECTION}
    cli.run("gem", "install", str(_gem(tmp_path / "v1", "notes", ["collections.create"], tools)))
    v2 = _gem(tmp_path / "v2", "notes", ["collections.create"], tools, version="1.1.0")
    assert "no new permissions" in cli.run("gem", "upgrade", str(v2)).stdout


def test_upgrading_a_gem_that_is_not_installed_is_not_found(cli: Cli, tmp_path: Path) -> None:
    result = cli.run("gem", "upgrade", str(_gem(tmp_path, "notes", [], {"main": CREATE_COLLECTION})), code=3)
    assert "gem notes is not installed; install it first" in result.stderr


# ---------------------------------------------------------------------------------------- network lists


def test_allow_and_block_keep_lists_of_their_own(cli: Cli) -> None:
    """Switching between allowlist and blocklist never loses an entry."""
    cli.run("network", "allow", "api.example.com")
    blocked = cli.json("network", "block", "ads.example.com")
    assert blocked["external"] == {"mode": "blocklist", "hosts": ["ads.example.com"]}
    assert blocked["kept"] == {"allowlist": ["api.example.com"]}
    allowed = cli.json("network", "allow", "maps.example.com")
    assert allowed["external"] == {"mode": "allowlist", "hosts": ["api.example.com", "maps.example.com"]}
    assert allowed["kept"] == {"blocklist": ["ads.example.com"]}
    opened = cli.json("network", "mode", "open")
    assert opened["external"] == {"mode": "open", "hosts": []}
    assert opened["kept"] == {"allowlist": ["api.example.com", "maps.example.com"], "blocklist": ["ads.example.com"]}
    again = cli.json("network", "block", "tracker.example.com")
    assert again["external"]["hosts"] == ["ads.example.com", "tracker.example.com"]


def test_allow_and_block_say_what_changed(cli: Cli) -> None:
    """The mode switch, what was added, and the list kept aside."""
    cli.run("network", "allow", "api.example.com")
    text = cli.run("network", "block", "ads.example.com").stdout
    assert "switched from allowlist to blocklist" in text
    assert "added to the blocklist: ads.example.com" in text
    assert "kept, not in force: the allowlist (back in force with notochord network allow HOST):" in text
    assert "  api.example.com" in text
    assert "nothing changed" in cli.run("network", "block", "ads.example.com").stdout


def test_mode_replacing_a_list_says_what_it_removed(cli: Cli) -> None:
    """Replacing a list is never silent."""
    cli.run("network", "allow", "api.example.com", "maps.example.com")
    text = cli.run("network", "mode", "allowlist", "maps.example.com").stdout
    assert "removed from the allowlist: api.example.com" in text
    assert "switched" not in text


def test_the_list_not_in_force_does_not_decide_a_request(cli: Cli) -> None:
    """A kept allowlist neither allows nor blocks while the blocklist is in force."""
    cli.run("network", "allow", "api.example.com")
    cli.run("network", "block", "ads.example.com")
    settings = Settings(data_dir=cli.data_dir, embedder="none", index_in_background=False)
    with notochord.open(cli.data_dir, settings, embedder=None) as nc:
        rules = NetworkRulesStore(nc.personal.core).get()
    assert rules.external_mode == "blocklist"
    assert [str(e) for e in rules.external_hosts] == ["ads.example.com"]


# ---------------------------------------------------------------------------------------- tool entries


def _manifest_with_entries(folder: Path, entries: dict[str, str], *, version: str = "1.0.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "id": "notes",
        "name": "notes",
        "version": version,
        "tools": [{"name": name, "entry": entry} for name, entry in entries.items()],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_install_refuses_a_tool_whose_entry_file_is_missing(cli: Cli, tmp_path: Path) -> None:
    """The error names the tool and its path, and nothing is installed."""
    folder = _manifest_with_entries(tmp_path / "notes", {"main": "main.py", "export": "tools/export.py"})
    (folder / "main.py").write_text(CREATE_COLLECTION, encoding="utf-8")
    result = cli.run("gem", "install", str(folder), code=2)
    assert "invalid manifest" in result.stderr
    assert "tools[1].entry: tool 'export': tools/export.py is not a file in the gem folder" in result.stderr
    assert "main.py" not in result.stderr.replace("notochord.json", "")
    assert cli.json("gem", "list") == []


def test_install_lists_every_missing_entry_at_once(cli: Cli, tmp_path: Path) -> None:
    """One problem per tool, like every other manifest problem."""
    folder = _manifest_with_entries(tmp_path / "notes", {"a": "a.py", "b": "b.mjs"})
    result = cli.run("gem", "install", str(folder), code=2)
    assert "(2 problem(s))" in result.stderr
    assert "tool 'a': a.py" in result.stderr
    assert "tool 'b': b.mjs" in result.stderr


@pytest.mark.parametrize("entry", ["../outside.py", "/etc/hostname", "tools/../../outside.py"])
def test_install_refuses_an_entry_that_leads_out_of_the_gem_folder(cli: Cli, tmp_path: Path, entry: str) -> None:
    """An existing file outside the folder is refused as well."""
    (tmp_path / "outside.py").write_text(CREATE_COLLECTION, encoding="utf-8")
    folder = _manifest_with_entries(tmp_path / "notes", {"main": entry})
    result = cli.run("gem", "install", str(folder), code=2)
    assert f"tool 'main': {entry} points outside the gem folder" in result.stderr
    assert cli.json("gem", "list") == []


def test_install_refuses_a_symbolic_link_out_of_the_gem_folder(cli: Cli, tmp_path: Path) -> None:
    """A link inside the folder that points outside it does not count as inside."""
    outside = tmp_path / "outside.py"
    outside.write_text(CREATE_COLLECTION, encoding="utf-8")
    folder = _manifest_with_entries(tmp_path / "notes", {"main": "main.py"})
    (folder / "main.py").symlink_to(outside)
    result = cli.run("gem", "install", str(folder), code=2)
    assert "tool 'main': main.py points outside the gem folder" in result.stderr


def test_a_symbolic_link_within_the_gem_folder_is_accepted(cli: Cli, tmp_path: Path) -> None:
    """Only leaving the folder is refused."""
    folder = _manifest_with_entries(tmp_path / "notes", {"main": "main.py"})
    (folder / "src").mkdir()
    (folder / "src" / "real.py").write_text('def run(input, ctx):\n    return "linked"\n', encoding="utf-8")
    (folder / "main.py").symlink_to(folder / "src" / "real.py")
    cli.run("gem", "install", str(folder))
    assert json.loads(cli.run("gem", "run", "notes").stdout) == "linked"


def test_upgrade_refuses_a_missing_entry_and_keeps_the_installed_version(cli: Cli, tmp_path: Path) -> None:
    """Also on ``gem upgrade``."""
    v1 = _manifest_with_entries(tmp_path / "v1", {"main": "main.py"})
    (v1 / "main.py").write_text('def run(input, ctx):\n    return "one"\n', encoding="utf-8")
    cli.run("gem", "install", str(v1))
    v2 = _manifest_with_entries(tmp_path / "v2", {"main": "main.py", "more": "more.py"}, version="2.0.0")
    (v2 / "main.py").write_text('def run(input, ctx):\n    return "two"\n', encoding="utf-8")
    result = cli.run("gem", "upgrade", str(v2), code=2)
    assert "tools[1].entry: tool 'more': more.py is not a file in the gem folder" in result.stderr
    assert cli.json("gem", "show", "notes")["version"] == "1.0.0"
    assert json.loads(cli.run("gem", "run", "notes", "main").stdout) == "one"


def test_a_draft_manifest_names_its_gem_level_entry(cli: Cli, tmp_path: Path) -> None:
    """The recipe gem's ``manifest.json`` without its ``tools/rate.js``."""
    folder = tmp_path / "recipes"
    folder.mkdir()
    shutil.copy(EXAMPLES / "recipes" / "manifest.json", folder / "manifest.json")
    result = cli.run("gem", "install", str(folder), code=2)
    assert "entry: tool 'rate': tools/rate.js is not a file in the gem folder" in result.stderr


def test_reset_and_the_local_list_say_what_changed(cli: Cli) -> None:
    """Reset empties both external lists and says so, entry by entry."""
    cli.run("network", "allow", "api.example.com")
    cli.run("network", "block", "ads.example.com")
    assert "added to the local list: localhost:5173" in cli.run("network", "local", "add", "localhost:5173").stdout
    text = cli.run("network", "reset").stdout
    assert "switched from blocklist to open" in text
    assert "removed from the allowlist: api.example.com" in text
    assert "removed from the blocklist: ads.example.com" in text
    assert "removed from the local list: localhost:5173" in text
    assert cli.json("network", "show") == {"external": {"mode": "open", "hosts": []}, "local": []}


# ------------------------------------------------------------------------ clutter left out of a gem


def test_gem_install_and_upgrade_say_what_they_left_out_of_a_developer_s_folder(cli: Cli, tmp_path: Path) -> None:
    """P-GEN-04: ``.git`` and swap files are never copied, and the report says so per kind; a
    JavaScript tool's ``node_modules`` is the gem's own and is copied."""
    folder = _gem(tmp_path, "notes", [], {"main": CREATE_COLLECTION})
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (folder / "node_modules" / "pkg").mkdir(parents=True)
    (folder / "node_modules" / "pkg" / "index.js").write_text("export default 1;\n", encoding="utf-8")
    (folder / "main.py.swp").write_bytes(b"b0VIM")

    installed = cli.run("gem", "install", str(folder)).stdout
    assert "left out of the copy, as never part of a gem: .git (1), editor swap and backup files (1)" in installed
    upgraded = cli.json("gem", "upgrade", str(folder))
    assert upgraded["leftOut"] == {".git": 1, "editor swap and backup files": 1}


def test_gem_install_of_a_folder_without_clutter_says_nothing_of_it(cli: Cli, tmp_path: Path) -> None:
    installed = cli.run("gem", "install", str(_gem(tmp_path, "notes", [], {"main": CREATE_COLLECTION}))).stdout
    assert "left out" not in installed
    assert cli.json("gem", "upgrade", str(tmp_path / "notes"))["leftOut"] == {}
