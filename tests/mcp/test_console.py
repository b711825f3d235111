"""A connection's switches on the console's gem page, unchanged: switched on there,
the connection's very next MCP request over ``/mcp`` may do it (K-PERM-04); the console's changes page
undoes the session's run."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp_harness import Served, answer, free_port, seeded
from mcp_types import CallToolResult

import notochord
from notochord.cli.serve_cmd import build_server
from notochord.console.auth import ConsoleKeys
from notochord.mcp_server.connections import Connections
from notochord.settings import Settings

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def served_in_thread(tmp_path: Path) -> Iterator[tuple[Served, notochord.Notochord]]:
    """The same composition as ``notochord serve`` (console, REST service, ``/mcp``), in a thread."""
    cli = seeded(tmp_path / "data")
    settings = Settings(data_dir=cli.data_dir, index_in_background=False, jwt_secret="j" * 40)
    nc = notochord.open(cli.data_dir, settings, embedder=None)
    port = free_port()
    server = build_server(nc, settings, host="127.0.0.1", port=port)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield Served(f"http://127.0.0.1:{port}", cli), nc
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        nc.close()


def test_the_console_switch_of_a_connection_applies_to_its_next_mcp_request(
    served_in_thread: tuple[Served, notochord.Notochord],
) -> None:
    """K-PERM-04, K-CHG-08: the console's switch applies to the next MCP
    request, and the console's "undo this run" takes back what that session wrote."""
    served, nc = served_in_thread
    _, secret = Connections(nc.personal).connect("desk")
    with httpx.Client(base_url=served.url, timeout=30) as console:
        token = ConsoleKeys(nc.data_dir).mint_login_token()
        assert console.get(f"/login?token={token}").status_code == 303
        page = console.get("/gems/desk")
        assert page.status_code == 200
        assert "Record your food preferences" in page.text
        found = _CSRF.search(page.text)
        assert found is not None
        call = ("facts_put", {"predicateHint": "pref.food.like", "value": "borscht"})

        async def before() -> CallToolResult:
            async with served.session(secret) as s:
                return await s.call_tool(*call)

        assert anyio.run(before).is_error
        switched = console.post(
            "/gems/desk/permissions",
            data={"csrf": found.group(1), "permission": "facts.write:self:pref.food.*", "on": "1"},
        )
        assert switched.status_code == 303

    async def after() -> CallToolResult:
        async with served.session(secret) as s:
            return await s.call_tool(*call)

    assert answer(anyio.run(after))["status"] == "applied"
    (change,) = served.cli.json("changes", "list", "--actor", "gem:desk")
    with httpx.Client(base_url=served.url, timeout=30) as console:
        token = ConsoleKeys(nc.data_dir).mint_login_token()
        assert console.get(f"/login?token={token}").status_code == 303
        page = console.get("/changes", params={"run": change["runId"]})
        found = _CSRF.search(page.text)
        assert found is not None
        undone = console.post("/changes/undo-run", data={"csrf": found.group(1), "run": change["runId"]})
        assert undone.status_code == 200
    assert [c["status"] for c in served.cli.json("changes", "list", "--actor", "gem:desk")] == ["reverted"]
