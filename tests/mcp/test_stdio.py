"""MCP over stdio with the SDK's own client, spawning ``notochord mcp serve``.

K-PERM-03 (every switch starts off), K-PERM-04 (a switch takes effect on the next call), K-CON-05
(refs only), K-CHG-06 (every write recorded under its writer and run, undoable).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp_harness import ENV, Cli, answer, stdio_process, stdio_session, text

TOOLS = [
    "search",
    "profile",
    "facts_lookup",
    "facts_put",
    "facts_retract",
    "entities_resolve",
    "collections_list",
    "documents_get",
    "documents_upsert",
    "changes_list",
]


def test_a_new_connection_sees_every_tool_and_each_call_is_refused_naming_its_permission(cli: Cli) -> None:
    """K-PERM-03: nothing is switched on, so a write or a single-object call is
    a tool error naming the permission and the grant command, and a query answers as if there were no
    data (the person's fact and keepsake exist)."""
    cli.connect("desk")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            listed = await s.list_tools()
            return {
                "tools": [t.name for t in listed.tools],
                "put": await s.call_tool("facts_put", {"predicateHint": "pref.food.like", "value": "soup"}),
                "upsert": await s.call_tool("documents_upsert", {"collection": "keep", "key": "k", "body": "b"}),
                "resolve": await s.call_tool("entities_resolve", {"identifiers": {"email": "ada@example.org"}}),
                "profile": await s.call_tool("profile", {}),
                "lookup": await s.call_tool("facts_lookup", {"prefix": "pref.food"}),
                "search": await s.call_tool("search", {"query": "stew"}),
                "collections": await s.call_tool("collections_list", {}),
                "changes": await s.call_tool("changes_list", {}),
            }

    got = anyio.run(go)
    assert got["tools"] == TOOLS
    for name, permission in (
        ("put", "facts.write:self:pref.food.*"),
        ("upsert", "collections.write:keep"),
        ("resolve", "entities.resolve:person"),
    ):
        assert got[name].is_error, name
        assert f"notochord gem grant desk {permission}" in text(got[name]).replace("'", ""), text(got[name])
    for name in ("profile", "lookup", "search", "collections", "changes"):
        assert answer(got[name]) == [], name


def test_after_gem_grant_the_same_call_succeeds_on_the_next_request(cli: Cli) -> None:
    """K-PERM-04: the switch moves while the session is open."""
    cli.connect("desk")
    call = ("facts_put", {"predicateHint": "pref.food.like", "value": "lentil soup"})

    async def go() -> tuple[Any, Any, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            before = await s.call_tool(*call)
            cli.run("gem", "grant", "desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
            after = await s.call_tool(*call)
            lookup = await s.call_tool("facts_lookup", {"prefix": "pref.food"})
            return before, after, lookup

    before, after, lookup = anyio.run(go)
    assert before.is_error
    assert answer(after)["status"] == "applied"
    assert answer(after)["ref"].startswith("fact_")
    assert "lentil soup" in [f["value"] for f in answer(lookup)]


def test_a_session_is_one_run_listed_under_the_connection_and_runs_undo_reverts_all_it_wrote(cli: Cli) -> None:
    """K-CHG-06, K-CHG-08: a fact and a document written in one session carry the session's
    run; ``runs undo`` of that run takes both back."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*", "collections.write:keep")

    async def go() -> tuple[Any, Any, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            put = await s.call_tool("facts_put", {"predicateHint": "pref.food.like", "value": "dal"})
            doc = await s.call_tool(
                "documents_upsert", {"collection": "keep", "key": "dal", "title": "Dal", "body": "Lentils, cumin."}
            )
            mine = await s.call_tool("changes_list", {})
            return put, doc, mine

    put, doc, mine = anyio.run(go)
    assert answer(put)["status"] == "applied"
    assert answer(doc)["status"] == "created"
    changes = cli.json("changes", "list", "--actor", "gem:desk")
    assert {c["op"] for c in changes} == {"facts.put", "documents.create"}
    runs = {c["runId"] for c in changes}
    assert len(runs) == 1
    (run,) = runs
    assert {c["runId"] for c in answer(mine)} == {run}
    record = cli.json("runs", "show", run)
    assert (record["gem"], record["tool"], record["status"]) == ("desk", "mcp-session", "succeeded")
    assert record["output"] == {"toolCalls": 3}
    assert [r["run"] for r in cli.json("runs", "list", "--gem", "desk")] == [run]

    cli.run("runs", "undo", run)
    facts = [f["value"] for f in cli.json("facts", "lookup", "self", "pref.food")]
    assert facts == ["mushroom stew"]
    titles = [d["title"] for d in cli.json("docs", "list", "keep")]
    assert "Dal" not in titles
    assert {c["status"] for c in cli.json("changes", "list", "--run", run) if c["actor"] == "gem:desk"} == {"reverted"}


def test_serving_a_connection_that_does_not_exist_fails_with_not_found(cli: Cli) -> None:
    """Stdio needs no secret, but the connection must exist (exit code 3)."""
    done = subprocess.run(
        [sys.executable, "-m", "notochord", "--data-dir", str(cli.data_dir), "mcp", "serve", "--connection", "ghost"],
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert "notochord mcp connect ghost" in done.stderr
    assert done.stdout == ""


def _raw_exchange(data_dir: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Send ``lines`` to ``notochord mcp serve`` as they are, one at a time, each but a notification
    waiting for its reply; returns the replies."""
    replies = []
    with stdio_process(data_dir) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        for line in lines:
            process.stdin.write(line + "\n")
            process.stdin.flush()
            if '"notifications/' not in line:
                replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    return replies


def test_malformed_messages_unknown_tools_and_bad_or_oversized_arguments_are_protocol_errors(cli: Cli) -> None:
    """Each bad message gets a JSON-RPC error, the session goes on, nothing is written."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }

    def call(i: int, name: str, arguments: Any) -> str:
        return json.dumps(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )

    replies = _raw_exchange(
        cli.data_dir,
        [
            json.dumps(init),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "{this is not json",
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}),
            call(3, "drop_everything", {}),
            call(4, "facts_put", {"value": "no predicate"}),
            call(5, "facts_put", {"predicateHint": "pref.food.like", "value": "x", "sneaky": 1}),
            call(6, "facts_put", {"predicateHint": "pref.food.like", "value": "x" * (1024 * 1024 + 1)}),
            call(7, "search", {"query": "stew", "limit": 0}),
            call(8, "facts_put", "not an object"),
            json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        ],
    )
    by_id = {r["id"]: r for r in replies}
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["error"]["code"] == -32601
    assert "unknown tool 'drop_everything'" in by_id[3]["error"]["message"]
    assert "predicateHint is required" in by_id[4]["error"]["message"]
    assert "unknown argument 'sneaky'" in by_id[5]["error"]["message"]
    assert "over the limit" in by_id[6]["error"]["message"]
    assert "limit must be at least 1" in by_id[7]["error"]["message"]
    for i in (3, 4, 5, 6, 7, 8):
        assert by_id[i]["error"]["code"] == -32602, by_id[i]
    assert len(by_id[9]["result"]["tools"]) == len(TOOLS)
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


def test_resources_are_the_documents_the_connection_may_read_and_collections_are_templates(cli: Cli) -> None:
    """K-CON-06: with keep readable, the keepsake is listed and read by its ref, a keyed
    document through the keep template; the diary (not readable) is neither listed nor a template; a
    forged ref is not found."""
    cli.connect("desk", "collections.write:keep")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            await s.call_tool("documents_upsert", {"collection": "keep", "key": "pie & tart", "title": "Pie"})
            listed = await s.list_resources()
            templates = await s.list_resource_templates()
            uri = next(r.uri for r in listed.resources if r.name == "Grandma's stew")
            read = await s.read_resource(uri)
            key = next(t for t in templates.resource_templates if t.name == "keep").uri_template
            by_key = await s.read_resource(key.replace("{key}", "pie%20%26%20tart"))
            try:
                await s.read_resource("notochord://documents/doc_forged")
                foreign = None
            except Exception as error:  # the SDK raises its MCPError
                foreign = error
            return {"listed": listed, "templates": templates, "read": read, "by_key": by_key, "foreign": foreign}

    got = anyio.run(go)
    assert sorted(r.name for r in got["listed"].resources) == ["Grandma's stew", "Pie"]
    assert [t.name for t in got["templates"].resource_templates] == ["keep"]
    assert "Onions first" in got["read"].contents[0].text
    assert got["by_key"].contents[0].text.startswith("# Pie")
    assert "resource not found" in str(got["foreign"])
