"""A connection removed while a client of it is still running stays cut off for good, even when a
connection of the same name is made again.

A connection's name is not its identity: ``mcp revoke NAME --uninstall`` followed by ``mcp connect
NAME`` makes another connection, with switches of its own that start off (K-PERM-03). A stdio
process or an HTTP session that began with the removed one keeps nothing of it (K-UNINST-04: its
switches went with it) and gains nothing of the new one: every call is refused saying the
connection was removed and how to use the new one, and nothing is written. The removed
connection's bearer secret opens nothing of the new one either.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import INIT_PARAMS, Cli, Served, answer, stdio_session, text

import notochord
from notochord.errors import GemNotFoundError
from notochord.mcp_server.connections import Connections

_WRITE_AND_READ = ("facts.write:self:pref.food.*", "facts.read:self:pref.food.*", "collections.read:keep")
_PUT = ("facts_put", {"predicateHint": "pref.food.like", "value": "pie"})


def test_a_connection_made_again_is_another_installation_and_the_old_one_reads_nothing(
    space: notochord.Space,
) -> None:
    """K-PERM-03, K-UNINST-04: the same name, another installation; the old one's secret identifies
    nothing, and a ``ctx.knowledge`` bound to it refuses even a read, naming the removal."""
    connections = Connections(space)
    _, old_secret = connections.connect("desk")
    first = connections.installed("desk")
    assert connections.identify(old_secret) == ("desk", first)
    bound = connections.knowledge("desk", "run-1", installation=first)
    connections.revoke("desk", uninstall=True)
    with pytest.raises(GemNotFoundError, match="no assistant connection 'desk'"):
        connections.installed("desk")
    _, new_secret = connections.connect("desk", permissions=["collections.read:keep"])
    space.gems.set_permission("desk", "collections.read:keep", True)
    second = connections.installed("desk")
    assert second != first
    assert connections.identify(old_secret) is None
    assert connections.identify(new_secret) == ("desk", second)
    with pytest.raises(GemNotFoundError, match=r"^refused: connection desk was removed"):
        anyio.run(bound.collections.list)
    with pytest.raises(GemNotFoundError, match=r"^refused: connection desk was removed"):
        connections.knowledge("desk", "run-2", installation=first)
    fresh = connections.knowledge("desk", "run-3", installation=second)
    assert [c.builtin for c in anyio.run(fresh.collections.list)] == ["keep"]


def _values(cli: Cli) -> list[str]:
    return [f["value"] for f in cli.json("facts", "lookup", "self", "pref.food")]


def _removed(message: str, name: str) -> None:
    assert message.startswith(f"refused: connection {name} was removed"), message
    assert "lacks knowledge permission" not in message, message
    assert "manifest" not in message, message


@pytest.mark.parametrize("called_before", [True, False], ids=["after-a-call", "before-any-call"])
def test_a_stdio_process_of_a_removed_connection_gains_nothing_from_one_made_again_with_its_name(
    cli: Cli, called_before: bool
) -> None:
    """K-PERM-03, K-UNINST-04: the old process started with the removed connection; the new one's
    switches are not its, whether or not it had made a call before; it is told to start anew."""
    cli.connect("desk")

    async def go() -> dict[str, Any]:
        async with stdio_session(cli.data_dir, "desk") as s:
            if called_before:
                assert answer(await s.call_tool("facts_lookup", {"prefix": "pref.food"})) == []
            cli.run("mcp", "revoke", "desk", "--uninstall")
            cli.connect("desk", *_WRITE_AND_READ)
            got: dict[str, Any] = {
                "put": await s.call_tool(*_PUT),
                "lookup": await s.call_tool("facts_lookup", {"prefix": "pref.food"}),
                "search": await s.call_tool("search", {"query": "stew"}),
            }
            for name, call in (("resources", s.list_resources()), ("templates", s.list_resource_templates())):
                try:
                    got[name] = await call
                except MCPError as error:
                    got[name] = error
            return got

    got = anyio.run(go)
    for name in ("put", "lookup", "search"):
        assert got[name].is_error, (name, got[name])
        _removed(text(got[name]), "desk")
        assert "notochord mcp serve --connection desk" in text(got[name]), text(got[name])
    for name in ("resources", "templates"):
        assert isinstance(got[name], MCPError), (name, got[name])
        _removed(got[name].error.message, "desk")
    assert "pie" not in _values(cli)
    assert cli.json("changes", "list", "--actor", "gem:desk") == []

    async def afresh() -> Any:
        async with stdio_session(cli.data_dir, "desk") as s:
            return await s.call_tool(*_PUT)

    assert answer(anyio.run(afresh))["status"] == "applied"
    assert "pie" in _values(cli)


def test_a_stdio_process_of_a_removed_connection_not_made_again_is_told_how_to_make_it(cli: Cli) -> None:
    """K-UNINST-04: with no connection of that name any more, the refusal says how to make it."""
    cli.connect("desk", *_WRITE_AND_READ)

    async def go() -> Any:
        async with stdio_session(cli.data_dir, "desk") as s:
            cli.run("mcp", "revoke", "desk", "--uninstall")
            return await s.call_tool(*_PUT)

    refused = anyio.run(go)
    assert refused.is_error
    message = text(refused)
    assert message.startswith("refused: connection desk no longer exists"), message
    assert "notochord mcp connect desk" in message
    assert "pie" not in _values(cli)


def _raw_init(served: Served, secret: str) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {secret}",
    }
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
    return httpx.post(f"{served.url}/mcp", json=body, headers=headers, timeout=30)


def test_an_http_session_of_a_removed_connection_stays_cut_off_and_its_secret_opens_nothing(served: Served) -> None:
    """K-PERM-03, K-UNINST-04: after remaking ``remade`` under the same name, the removed one's
    secret is refused (401), its open session cannot be carried on with the new secret, and the
    new secret opens sessions of the new connection only."""
    old = served.cli.connect("remade")

    async def go() -> tuple[Any, BaseException | None, str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {old}"}, timeout=30) as http,
            streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.call_tool("facts_lookup", {"prefix": "pref.food"})
            served.cli.run("mcp", "revoke", "remade", "--uninstall")
            new = served.cli.connect("remade", *_WRITE_AND_READ)
            # the same session, now sending the new connection's secret
            http.headers["Authorization"] = f"Bearer {new}"
            try:
                await session.call_tool(*_PUT)
                carried_on = None
            except MCPError as error:
                carried_on = error
            return first, carried_on, new

    first, carried_on, new = anyio.run(go)
    assert answer(first) == []
    assert isinstance(carried_on, MCPError), carried_on
    assert _raw_init(served, old).status_code == 401
    assert "pie" not in _values(served.cli)
    assert served.cli.json("changes", "list", "--actor", "gem:remade") == []

    async def afresh() -> Any:
        async with served.session(new) as s:
            return await s.call_tool(*_PUT)

    assert answer(anyio.run(afresh))["status"] == "applied"
    assert "pie" in _values(served.cli)
