"""What a careless or hostile MCP client sends is taken as the host API takes it, or refused in
notochord's own words the same way over both transports.

- A whole number written with a decimal point (``5.0``, as JSON Schema counts it an integer) is a
  whole number: the tools' published schemas accept it, so the tools do (K-SRCH-10, K-DOC-11).
- A moment is epoch milliseconds or an ISO date or time for ``timeRange`` and ``since``, as for
  the host API (K-SRCH-06, OD-K21, K-CHG-02); the schema says so too.
- The tools' descriptions name the entity kinds the vault uses (K-CON-09, K-ENT-02, OD-K57).
- A refusal for a permission the connection never asked for says how a connection comes to ask for
  it, not how a gem's manifest does (K-PERM-23, K-PERM-25).
- ``resources/read`` without a usable ``uri`` is told so, like ``tools/call`` without a name; JSON
  that is not a JSON-RPC message is an Invalid Request (-32600) over stdio and over HTTP alike.

K-CHG-06: nothing refused here writes anything.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, PROTOCOL, Cli, Served, answer, exchange, stdio_session, text

_NAMES = itertools.count(1)


def _no_foreign_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message


# --- arguments: what the schema accepts, the tool accepts, as the host API would ----------------


def test_whole_numbers_written_with_a_decimal_point_are_taken_as_whole_numbers(cli: Cli) -> None:
    """K-SRCH-10, K-DOC-11 (OD-K36): ``limit: 1.0`` and ``range: {from: 0.0, to: 1.0}`` fit the
    published schemas (JSON Schema counts 1.0 an integer), so they are answered as 1 and 0..1 would
    be; a fraction is still refused, naming the argument."""
    cli.connect("desk", "collections.read:keep")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            hits = await s.call_tool("search", {"query": "stew", "limit": 1.0})
            ref = answer(hits)[0]["document"]
            part = await s.call_tool("documents_get", {"ref": ref, "range": {"from": 0.0, "to": 1.0}})
            whole = await s.call_tool("documents_get", {"ref": ref, "range": {"from": 0, "to": 1}})
            try:
                await s.call_tool("search", {"query": "stew", "limit": 1.5})
                fraction = None
            except MCPError as error:
                fraction = error
            return {"hits": hits, "part": part, "whole": whole, "fraction": fraction}

    got = anyio.run(go)
    assert [h["title"] for h in answer(got["hits"])] == ["Grandma's stew"]
    assert answer(got["part"]) == answer(got["whole"])
    assert answer(got["part"])["range"] == {"from": 0, "to": 1, "total": 1}
    assert isinstance(got["fraction"], MCPError)
    assert "arguments.limit must be" in str(got["fraction"])
    _no_foreign_words(str(got["fraction"]))


def test_time_range_and_since_take_epoch_milliseconds_like_the_host_api(cli: Cli) -> None:
    """K-SRCH-06, OD-K21, K-CHG-02: a number is epoch milliseconds, for the tool as for
    ``ctx.knowledge``; the schema says a moment may be one, and the answer is the one its ISO
    spelling gets."""
    cli.connect("desk", "collections.write:keep")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            await s.call_tool("documents_upsert", {"collection": "keep", "key": "soup", "body": "leek soup"})
            return {
                "tools": listed,
                "from_ms": await s.call_tool("search", {"query": "stew", "timeRange": {"from": 0}}),
                "from_iso": await s.call_tool("search", {"query": "stew", "timeRange": {"from": "1970-01-01T00:00Z"}}),
                "to_ms": await s.call_tool("search", {"query": "stew", "timeRange": {"to": 86_400_000}}),
                "since_ms": await s.call_tool("changes_list", {"since": 0}),
                "since_future": await s.call_tool("changes_list", {"since": 253_402_300_799_000}),
            }

    got = anyio.run(go)
    assert [h["title"] for h in answer(got["from_ms"])] == ["Grandma's stew"]
    assert answer(got["from_ms"]) == answer(got["from_iso"])
    assert answer(got["to_ms"]) == []
    assert [c["op"] for c in answer(got["since_ms"])] == ["documents.create"]
    assert answer(got["since_future"]) == []
    search_schema = got["tools"]["search"].input_schema["properties"]["timeRange"]["properties"]
    since_schema = got["tools"]["changes_list"].input_schema["properties"]["since"]
    for schema in (search_schema["from"], search_schema["to"], since_schema):
        assert "number" in schema["type"], schema
        assert "milliseconds" in schema["description"], schema


def test_the_entity_kinds_a_tool_names_are_the_kinds_the_vault_uses(cli: Cli) -> None:
    """K-CON-09, K-ENT-02, OD-K57: organizations are of kind ``org``; a model that followed a
    description naming another kind would resolve in a kind no permission covers."""
    cli.connect("desk")

    async def go() -> Any:
        async with stdio_session(cli.data_dir, "desk") as s:
            return {t.name: t for t in (await s.list_tools()).tools}

    tools = anyio.run(go)
    kind = tools["entities_resolve"].input_schema["properties"]["kind"]["description"]
    words = kind.replace(",", " ").replace("(", " ").replace(")", " ").split()
    assert {"person", "org", "place"} <= set(words), kind
    for tool in tools.values():
        assert "organization," not in json.dumps(tool.input_schema), tool.name
        assert '"kind": "organization"' not in (tool.description or ""), tool.name


def test_a_refusal_for_a_permission_the_connection_never_asked_for_says_how_a_connection_asks(cli: Cli) -> None:
    """K-PERM-23, K-PERM-25: the refusal names the permission; a connection has no manifest of its
    own to edit, so it says how to make the connection again asking for it, and nothing is written."""
    cli.connect("desk", "entities.write:person")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            return {
                "org": await s.call_tool(
                    "entities_resolve", {"identifiers": {"name": "Acme"}, "kind": "org", "create": True}
                ),
                "person": await s.call_tool("facts_put", {"predicateHint": "pref.food.like", "value": "soup"}),
            }

    got = anyio.run(go)
    message = text(got["org"])
    assert got["org"].is_error
    assert message.startswith("refused: lacks knowledge permission entities.write:org ("), message
    assert "manifest" not in message
    assert "notochord mcp connect desk --permissions-from" in message
    assert "notochord mcp revoke desk --uninstall" in message
    # a permission the connection asked for but is off still names the switch
    assert "notochord gem grant desk 'facts.write:self:pref.food.*'" in text(got["person"])
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


def test_a_resource_refused_for_a_permission_never_asked_for_says_how_a_connection_asks(
    cli: Cli, tmp_path: Path
) -> None:
    """K-PERM-23, K-DOC-17: a connection made asking only for the keepsakes reads a diary entry's
    address as refused naming ``collections.read:diary``, with the way to ask for it."""
    wanted = tmp_path / "wanted.json"
    wanted.write_text('["collections.read:keep"]', encoding="utf-8")
    cli.json("mcp", "connect", "narrow", "--permissions-from", str(wanted))
    cli.run("gem", "grant", "narrow", "collections.read:keep")

    async def go() -> MCPError:
        async with stdio_session(cli.data_dir, "narrow") as s:
            try:
                await s.read_resource("notochord://collections/diary/documents/2026-09-29")
            except MCPError as error:
                return error
            pytest.fail("the diary entry was read")

    message = str(anyio.run(go))
    assert "lacks knowledge permission collections.read:diary (" in message, message
    assert "manifest" not in message
    assert "notochord mcp connect narrow --permissions-from" in message


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        pytest.param(
            "profile",
            {"prefix": None},
            "profile: arguments.prefix must be a string; to leave it unset, leave it out rather than sending null",
            id="optional",
        ),
        pytest.param(
            "search",
            {"timeRange": {"from": None}},
            "search: arguments.timeRange.from must be a string or a number; to leave it unset, leave it out "
            "rather than sending null",
            id="optional-inside",
        ),
        pytest.param("facts_retract", {"ref": None}, "facts_retract: arguments.ref must be a string", id="required"),
    ],
)
def test_null_for_an_argument_is_refused_saying_to_leave_an_optional_one_out(
    cli: Cli, name: str, arguments: dict[str, Any], said: str
) -> None:
    """K-FACT-03, K-SRCH-06: the schema has no null; the refusal says what the argument must be
    and, when it may be left out, to leave it out."""
    cli.connect("desk", "facts.read:self:pref.food.*", "collections.read:keep")

    async def go() -> MCPError:
        async with stdio_session(cli.data_dir, "desk") as s:
            try:
                await s.call_tool(name, arguments)
            except MCPError as error:
                return error
            pytest.fail("null was taken")

    error = anyio.run(go)
    assert error.error.code == -32602
    assert error.error.message == said
    _no_foreign_words(error.error.message)


# --- messages that are not usable requests ------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "kind"),
    [
        pytest.param('{"uri": 7}', "a number", id="a-number"),
        pytest.param('{"uri": ["notochord://documents/doc_x"]}', "a list", id="a-list"),
        pytest.param('{"uri": null}', "nothing", id="null"),
        pytest.param("{}", "nothing", id="missing"),
    ],
)
def test_a_resource_read_whose_uri_is_not_a_string_is_told_so(cli: Cli, params: str, kind: str) -> None:
    """The SDK would answer a bare "Invalid request parameters", naming neither the field nor its
    form; the refusal says what a uri is and where to find one, and the session goes on."""
    cli.connect("desk", "collections.read:keep")
    refused, listed = exchange(
        cli.data_dir,
        [
            f'{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{params}}}',
            '{"jsonrpc":"2.0","id":2,"method":"resources/list"}',
        ],
    )
    assert refused["id"] == 1
    error = refused["error"]
    assert error["code"] == -32602, error
    message = error["message"]
    assert message.startswith("resources/read needs the uri of a resource as a string"), message
    assert "notochord://documents/" in message
    assert "resources/list" in message
    assert message.endswith(f"not {kind}"), message
    _no_foreign_words(message)
    assert [r["name"] for r in listed["result"]["resources"]] == ["Grandma's stew"]


NOT_A_MESSAGE = [
    pytest.param("[1, 2, 3]", id="a-list"),
    pytest.param('{"hello": "world"}', id="no-method"),
    pytest.param('{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}', id="old-version"),
]


@pytest.mark.parametrize("line", NOT_A_MESSAGE)
def test_json_that_is_not_a_json_rpc_message_is_an_invalid_request_over_stdio(cli: Cli, line: str) -> None:
    """JSON-RPC 2.0: JSON that is no valid request object is -32600 Invalid Request (-32700 is for
    text that is not JSON at all), with the same words as over HTTP."""
    cli.connect("desk")
    (reply,) = exchange(cli.data_dir, [line])
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600, reply
    assert reply["error"]["message"].startswith("not a JSON-RPC message: send one JSON object"), reply


@pytest.mark.parametrize("body", NOT_A_MESSAGE)
def test_json_that_is_not_a_json_rpc_message_is_an_invalid_request_over_http(served: Served, body: str) -> None:
    """The same code and words as over stdio, in a session and when opening one."""
    secret = served.cli.connect(f"codes-{next(_NAMES)}")
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {secret}",
    }
    url = f"{served.url}/mcp"
    opened = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS},
        headers=headers,
        timeout=30,
    )
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": PROTOCOL}
    for extra in ({}, session):
        answered = httpx.post(url, content=body.encode(), headers={**headers, **extra}, timeout=30)
        assert answered.status_code == 400, answered.text
        error = answered.json()["error"]
        assert error["code"] == -32600, error
        assert error["message"].startswith("not a JSON-RPC message: send one JSON object"), error


def test_an_unknown_tool_or_argument_of_a_megabyte_is_quoted_cut_short(cli: Cli) -> None:
    """A refusal names what was sent, but a name of hundreds of kilobytes is not sent back whole:
    the client already has it, and the model reading the error pays for every character."""
    cli.connect("desk", "facts.read:self:pref.food.*")
    long_name = "x" * 300_000

    async def go() -> tuple[MCPError, MCPError]:
        async with stdio_session(cli.data_dir, "desk") as s:
            errors = []
            for name, arguments in (
                (long_name, {}),
                ("facts_lookup", {"subject": "self", "prefix": "pref.food", long_name: 1}),
            ):
                try:
                    await s.call_tool(name, arguments)
                except MCPError as error:
                    errors.append(error)
            first, second = errors
            return first, second

    unknown_tool, unknown_argument = anyio.run(go)
    assert unknown_tool.error.message.startswith("unknown tool 'xxxx")
    assert len(unknown_tool.error.message) < 1000
    assert "unknown argument 'xxxx" in unknown_argument.error.message
    assert len(unknown_argument.error.message) < 1000
