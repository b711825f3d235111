"""Assistant connections: registration, the hashed secret, revocation and the CLI.

K-PERM-03: every requested permission starts off. The secret is shown once and kept only as its
SHA-256; revoke forgets it and keeps the connection's data unless asked.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mcp_harness import Cli

import notochord
from notochord.errors import GemError, GemNotFoundError, KnowledgeValidationError
from notochord.mcp_server.connections import DEFAULT_PERMISSIONS, SECRET_SETTING, Connections, load_permissions_file


def test_a_connection_is_an_assistant_gem_with_every_permission_off(space: notochord.Space) -> None:
    """K-PERM-03."""
    connection, secret = Connections(space).connect("desk")
    gem = space.gems.get("desk")
    assert gem.manifest.kind == "assistant"
    assert gem.manifest.knowledge.reason
    assert [p.permission for p in connection.permissions] == list(DEFAULT_PERMISSIONS)
    assert not any(p.on for p in space.gems.permissions("desk"))
    assert secret.startswith("ncmcp_")


def test_only_the_hash_of_the_secret_is_kept_and_it_authenticates_its_connection(
    space: notochord.Space, tmp_path: Path
) -> None:
    """Stored hashed (SHA-256), compared in constant time, never stored in the clear."""
    connections = Connections(space)
    _, secret = connections.connect("desk")
    _, other = connections.connect("phone")
    assert space.gems.registry.setting("desk", SECRET_SETTING) == hashlib.sha256(secret.encode()).hexdigest()
    assert not any(secret.encode() in f.read_bytes() for f in (tmp_path / "data").rglob("*") if f.is_file())
    assert connections.authenticate(secret) == "desk"
    assert connections.authenticate(other) == "phone"
    for wrong in ("", secret[:-1], secret + "x", secret.removeprefix("ncmcp_"), "ncmcp_" + "a" * 300):
        assert connections.authenticate(wrong) is None


def test_revoke_forgets_the_secret_and_keeps_the_connection_unless_asked(space: notochord.Space) -> None:
    """Revoke = the client can no longer connect; switches and data stay."""
    connections = Connections(space)
    _, secret = connections.connect("desk")
    space.gems.set_permission("desk", "collections.read:keep", True)
    assert connections.revoke("desk") is None
    assert connections.authenticate(secret) is None
    assert connections.get("desk").has_secret is False
    assert [p.permission for p in connections.get("desk").permissions if p.on] == ["collections.read:keep"]
    report = connections.revoke("desk", uninstall=True)
    assert report is not None
    with pytest.raises(GemNotFoundError, match="notochord mcp connect desk"):
        connections.get("desk")


def test_bad_names_taken_names_and_other_gems_are_refused_clearly(space: notochord.Space, tmp_path: Path) -> None:
    """A connection is named like a gem id; a gem of another kind is no connection."""
    connections = Connections(space)
    for bad in ("Desk", "-desk", "desk desk", "d" * 65, ""):
        with pytest.raises(KnowledgeValidationError, match="connection name"):
            connections.connect(bad)
    connections.connect("desk")
    with pytest.raises(GemError, match="already installed"):
        connections.connect("desk")
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notochord.json").write_text(json.dumps({"name": "plain"}), encoding="utf-8")
    space.gems.install(folder)
    with pytest.raises(GemNotFoundError, match="no assistant connection 'plain'"):
        connections.get("plain")
    assert [c.name for c in connections.list()] == ["desk"]
    with pytest.raises(KnowledgeValidationError):
        connections.connect("odd", permissions=["facts.read:self:*"])
    assert [c.name for c in connections.list()] == ["desk"]


def test_permissions_from_a_file_are_a_list_or_an_object_with_a_reason(tmp_path: Path) -> None:
    """``--permissions-from FILE``."""
    listed = tmp_path / "list.json"
    listed.write_text('["collections.read:keep", "entities.read:person"]', encoding="utf-8")
    assert load_permissions_file(listed) == (["collections.read:keep", "entities.read:person"], None)
    shaped = tmp_path / "object.json"
    shaped.write_text('{"permissions": ["collections.read:keep"], "reason": "recipes"}', encoding="utf-8")
    assert load_permissions_file(shaped) == (["collections.read:keep"], "recipes")
    for body, problem in (
        ("{", "cannot read"),
        ('{"permissions": [], "extra": 1}', "unknown key 'extra'"),
        ("[1, 2]", "list of permission strings"),
        ('["facts.read:nobody"]', "facts"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(body, encoding="utf-8")
        with pytest.raises(KnowledgeValidationError, match=problem):
            load_permissions_file(bad)


def test_the_cli_shows_the_secret_once_and_lists_connections_without_it(cli: Cli, tmp_path: Path) -> None:
    """``mcp connect|list|show|revoke`` and their exit codes."""
    wanted = tmp_path / "wanted.json"
    wanted.write_text('{"permissions": ["collections.read:keep"], "reason": "to find recipes"}', encoding="utf-8")
    made = cli.json("mcp", "connect", "desk", "--permissions-from", str(wanted))
    secret = made["secretToShowOnce"]
    assert [(p["permission"], p["on"]) for p in made["permissions"]] == [("collections.read:keep", False)]
    text = cli.run("mcp", "connect", "phone")
    assert f'"args": ["mcp", "serve", "--connection", "phone", "--data-dir", "{cli.data_dir}"]' in text
    assert "notochord gem grant phone PERMISSION" in text
    listed = cli.run("mcp", "list", "--json")
    shown = cli.run("mcp", "show", "desk", "--json")
    assert secret not in listed + shown
    assert [c["name"] for c in json.loads(listed)] == ["desk", "phone"]
    assert json.loads(shown)["secret"] == "active"
    cli.run("mcp", "show", "ghost", code=3)
    cli.run("mcp", "connect", "desk", code=2)
    cli.run("mcp", "connect", "Bad Name", code=2)
    cli.run("mcp", "revoke", "desk", "--delete-data", code=2)
    assert cli.json("mcp", "revoke", "desk")["secret"] == "revoked"
    assert cli.json("mcp", "show", "desk")["secret"] == "revoked"
    cli.json("mcp", "revoke", "desk", "--uninstall")
    assert [c["name"] for c in cli.json("mcp", "list")] == ["phone"]
    assert "desk" not in cli.run("gem", "list")
