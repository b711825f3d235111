"""``Mcp-Param-*`` headers of the 2026-07-28 protocol: none is declared, so none is looked at.

In that protocol a tool may mark a parameter of its input schema with ``x-mcp-header: NAME``; a
client calling it over HTTP then repeats the argument as ``Mcp-Param-NAME``, for proxies to route
by, and the server must refuse a call whose header and argument disagree. No tool of this server
marks a parameter (nothing here is routed by an argument, and the arguments are the person's data,
which headers would show to every proxy on the way), so a client is expected to send none, and one
sent all the same decides nothing: the call is answered from its body, as without the header.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import Served, answer

_MODERN = "2026-07-28"
_META = {"io.modelcontextprotocol/protocolVersion": _MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
_ARGUMENTS = {"prefix": "pref.food"}


def _marked(schema: Any) -> bool:
    """Whether ``schema`` marks any value, however deep, with ``x-mcp-header``."""
    if isinstance(schema, dict):
        return "x-mcp-header" in schema or any(_marked(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_marked(v) for v in schema)
    return False


def test_no_tool_declares_a_parameter_repeated_in_a_header(served: Served) -> None:
    """The tools the SDK's client lists in the 2026-07-28 protocol mark nothing with ``x-mcp-header``,
    and its calls are answered without any ``Mcp-Param-*`` header."""
    secret = served.cli.connect("unrouted", "facts.read:self:pref.food.*")

    async def go() -> tuple[str, list[Any], Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
            Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client,
        ):
            listed = await client.list_tools()
            found = answer(await client.call_tool("facts_lookup", _ARGUMENTS))
            return str(client.protocol_version), [t.input_schema for t in listed.tools], found

    version, schemas, found = anyio.run(go)
    assert version == _MODERN
    assert schemas
    assert not any(_marked(schema) for schema in schemas)
    assert [fact["value"] for fact in found] == ["mushroom stew"]


def test_a_param_header_sent_all_the_same_decides_nothing(served: Served) -> None:
    """A call carrying ``Mcp-Param-Prefix`` that disagrees with its ``prefix`` argument is answered
    from the body, exactly as the same call without the header."""
    secret = served.cli.connect("stray-header", "facts.read:self:pref.food.*")
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Protocol-Version": _MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "facts_lookup",
    }
    call = {"name": "facts_lookup", "arguments": _ARGUMENTS, "_meta": _META}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})

    def result(sent: dict[str, str]) -> Any:
        response = httpx.post(f"{served.url}/mcp", content=body, headers=sent, timeout=30)
        assert response.status_code == 200, response.text
        return json.loads(response.json()["result"]["content"][0]["text"])

    plain = result(headers)
    assert [fact["value"] for fact in plain] == ["mushroom stew"]
    assert result({**headers, "Mcp-Param-Prefix": "contact.email"}) == plain
