"""MCP over streamable HTTP at ``/mcp`` of a real ``notochord serve``, with the SDK's own client.

One server for the module; each test makes its own connections. K-PERM-03/04 (switches off, read
afresh), K-CON-06 (per-connection refs), K-CHG-06 (recorded under the connection and its run).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import Served, answer, text

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _post(served: Served, body: bytes | dict[str, Any], **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{served.url}/mcp", content=content, headers={**ACCEPT, **headers}, timeout=30)


@pytest.mark.parametrize(
    "authorization", [None, "Bearer ncmcp_not-a-secret", "Basic dXNlcjpwYXNz", "Bearer nothing"], ids=str
)
def test_without_a_valid_secret_there_is_a_401_with_www_authenticate_and_no_session(
    served: Served, authorization: str | None
) -> None:
    """No secret, no session."""
    headers = {} if authorization is None else {"Authorization": authorization}
    response = _post(served, INIT, **headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "mcp-session-id" not in response.headers


def test_a_revoked_secret_is_refused_on_its_next_request(served: Served) -> None:
    """Revoke = that client can no longer connect, even mid-session; its
    connection and what it wrote stay."""
    secret = served.cli.connect("gone", "facts.read:self:pref.food.*")

    async def go() -> tuple[Any, BaseException | None]:
        async with served.session(secret) as s:
            first = await s.call_tool("facts_lookup", {"prefix": "pref.food"})
            served.cli.run("mcp", "revoke", "gone")
            try:
                await s.call_tool("facts_lookup", {"prefix": "pref.food"})
            except Exception as error:  # the SDK's client raises its own error for the 401
                return first, error
            return first, None

    first, refused = anyio.run(go)
    assert [f["value"] for f in answer(first)] == ["mushroom stew"]
    assert isinstance(refused, MCPError)  # the client's words for the 401 it got
    assert _post(served, INIT, Authorization=f"Bearer {secret}").status_code == 401
    shown = served.cli.json("mcp", "show", "gone")
    assert shown["secret"] == "revoked"
    assert [p["on"] for p in shown["permissions"] if p["permission"] == "facts.read:self:pref.food.*"] == [True]


@pytest.mark.parametrize(
    ("name", "headers", "status"),
    [
        ("foreign-origin", {"Origin": "http://evil.example"}, 403),
        ("rebound-host", {"Host": "evil.example"}, 421),
        ("null-origin", {"Origin": "null"}, 403),
    ],
)
def test_a_request_from_another_site_is_refused_before_its_secret_is_looked_at(
    served: Served, name: str, headers: dict[str, str], status: int
) -> None:
    """The DNS-rebinding rule of local MCP servers, even with a valid secret."""
    secret = served.cli.connect(name)
    response = _post(served, INIT, Authorization=f"Bearer {secret}", **headers)
    assert response.status_code == status
    assert "mcp-session-id" not in response.headers


def test_grant_write_changes_and_the_sessions_run_over_http(served: Served) -> None:
    """Over HTTP: refused, granted, applied on the next request; the write
    is listed under the connection with the session's run, which ``runs undo`` reverts; the run is
    finished when the client ends the session."""
    secret = served.cli.connect("web")
    call = ("facts_put", {"predicateHint": "pref.food.like", "value": "pho"})

    async def go() -> tuple[Any, Any]:
        async with served.session(secret) as s:
            before = await s.call_tool(*call)
            served.cli.run("gem", "grant", "web", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
            return before, await s.call_tool(*call)

    before, after = anyio.run(go)
    assert before.is_error
    assert "notochord gem grant web 'facts.write:self:pref.food.*'" in text(before)
    assert answer(after)["status"] == "applied"
    (change,) = served.cli.json("changes", "list", "--actor", "gem:web")
    run = change["runId"]
    record = served.cli.json("runs", "show", run)
    assert (record["gem"], record["status"], record["output"]) == ("web", "succeeded", {"toolCalls": 2})
    served.cli.run("runs", "undo", run)
    assert "pho" not in [f["value"] for f in served.cli.json("facts", "lookup", "self", "pref.food")]


def test_one_connection_never_sees_another_connections_refs_or_documents_outside_its_grants(served: Served) -> None:
    """K-CON-06: a ref handed to one connection reads as not found to another, and
    a connection without the keep switch neither finds nor lists the keepsakes another wrote."""
    writer = served.cli.connect("writer", "collections.write:keep")
    reader = served.cli.connect("reader", "collections.read:diary", "facts.read:self:pref.food.*")

    async def write() -> Any:
        async with served.session(writer) as s:
            return answer(await s.call_tool("documents_upsert", {"collection": "keep", "key": "x", "body": "quince"}))

    async def read(ref: str) -> dict[str, Any]:
        async with served.session(reader) as s:
            return {
                "get": await s.call_tool("documents_get", {"ref": ref}),
                "search": await s.call_tool("search", {"query": "quince"}),
                "resources": await s.list_resources(),
                "changes": await s.call_tool("changes_list", {}),
                "collections": await s.call_tool("collections_list", {}),
            }

    ref = anyio.run(write)["ref"]
    got = anyio.run(read, ref)
    assert got["get"].is_error
    assert "not found" in text(got["get"])
    assert answer(got["search"]) == []
    assert got["resources"].resources == []
    assert answer(got["changes"]) == []
    assert [c["builtin"] for c in answer(got["collections"])] == ["diary"]


def test_concurrent_sessions_each_write_in_their_own_run(served: Served) -> None:
    """Five sessions at once, each its own run, none lost."""
    secret = served.cli.connect("many", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    results: list[Any] = []

    async def one(i: int) -> None:
        async with served.session(secret) as s:
            results.append(await s.call_tool("facts_put", {"predicateHint": "pref.food.dislike", "value": f"d{i}"}))

    async def go() -> None:
        async with anyio.create_task_group() as group:
            for i in range(5):
                group.start_soon(one, i)

    anyio.run(go)
    assert [answer(r)["status"] for r in results] == ["applied"] * 5
    changes = served.cli.json("changes", "list", "--actor", "gem:many")
    assert len({c["runId"] for c in changes}) == 5


def test_malformed_and_oversized_bodies_are_protocol_errors_and_write_nothing(served: Served) -> None:
    """A body that is not JSON-RPC is a 4xx JSON-RPC error; one over the service's body
    limit is 413; neither leaves a session open or writes."""
    secret = served.cli.connect("bad", "facts.write:self:pref.food.*")
    auth = {"Authorization": f"Bearer {secret}"}
    broken = _post(served, b"{this is not json", **auth)
    assert broken.status_code == 400
    assert broken.json()["error"]["code"] == -32700
    oversized = {**INIT, "params": {**INIT["params"], "padding": "x" * (1024 * 1024 + 1)}}  # type: ignore[dict-item]
    assert _post(served, oversized, **auth).status_code == 413
    # the session the SDK drew for the broken request was discarded, and its id is not handed out
    assert "mcp-session-id" not in broken.headers
    assert served.cli.json("changes", "list", "--actor", "gem:bad") == []


def test_the_rest_service_and_the_console_answer_as_before(served: Served) -> None:
    """Mounting /mcp leaves the REST service's JSON errors and the console's guard alone."""
    api = httpx.get(f"{served.url}/api/knowledge/kb", timeout=30)
    assert api.status_code == 401
    assert "error" in api.json()
    console = httpx.get(f"{served.url}/", timeout=30, headers={"Host": "evil.example"})
    assert console.status_code == 421
    assert httpx.get(f"{served.url}/mcp", timeout=30).status_code == 401


def test_without_sessions_in_the_2026_protocol_each_request_is_a_run_of_its_own(served: Served) -> None:
    """The SDK's default client speaks the stateless 2026-07-28 protocol; its writes
    are recorded and undoable too, each request as one run."""
    secret = served.cli.connect("modern", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")

    async def go() -> tuple[str, list[Any]]:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client,
        ):
            puts = [
                await client.call_tool("facts_put", {"predicateHint": "pref.food.dislike", "value": v})
                for v in ("okra", "tripe")
            ]
            return str(client.protocol_version), puts

    version, puts = anyio.run(go)
    assert version == "2026-07-28"
    assert [answer(p)["status"] for p in puts] == ["applied", "applied"]
    changes = served.cli.json("changes", "list", "--actor", "gem:modern")
    runs = {c["runId"] for c in changes}
    assert len(runs) == 2
    for run in runs:
        assert served.cli.json("runs", "show", run)["status"] == "succeeded"
        served.cli.run("runs", "undo", run)
    assert [c["status"] for c in served.cli.json("changes", "list", "--actor", "gem:modern")] == ["reverted"] * 2
