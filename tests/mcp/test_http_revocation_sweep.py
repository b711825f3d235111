"""The server's periodic sweep ends the sessions of a revoked secret when no request comes at all.

A client may send nothing more once it has what it asked for: it holds its ``GET`` stream open, or
waits on a call still being answered. Revoking its connection (``notochord mcp revoke NAME``, from
another process) writes the store; the server learns of it on its next request, and, when none comes,
from its sweep, which checks the secrets of the open sessions every so often (a minute unless the
mount is told otherwise). Here ``/mcp`` runs in the test's own event loop with a short sweep, and no
request at all is sent between the revocation and the session's end.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_harness import INIT_PARAMS, INITIALIZED, PROTOCOL, Cli, one_message, seeded, serving

import notochord
from notochord.mcp_server import app as mcp_app
from notochord.mcp_server.http import SWEEP_SECONDS, McpMount

_BOTH = "application/json, text/event-stream"
_LOOKUP = {"name": "facts_lookup", "arguments": {"prefix": "pref.food"}}


def _run_status(cli: Cli, name: str) -> str:
    (run,) = cli.json("runs", "list", "--gem", name)
    status: str = run["status"]
    return status


async def _opened(http: httpx.AsyncClient, secret: str) -> dict[str, str]:
    """A session begun with ``secret``, past its handshake and its first call (its run recorded);
    the headers of its every later request."""
    auth = {"Authorization": f"Bearer {secret}", "Accept": _BOTH, "Content-Type": "application/json"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
    begun = await http.post("/mcp", json=initialize, headers=auth)
    assert "result" in one_message(begun)
    headers = {**auth, "Mcp-Session-Id": begun.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
    assert (await http.post("/mcp", json=INITIALIZED, headers=headers)).status_code == 202
    first = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _LOOKUP}
    assert "result" in one_message(await http.post("/mcp", json=first, headers=headers))
    return headers


def test_the_sweep_is_a_minute_unless_the_mount_is_told_otherwise() -> None:
    """The documented "at the latest within a minute" of a revocation nobody's request reveals."""
    assert SWEEP_SECONDS == 60.0


def test_the_sweep_ends_a_revoked_sessions_stream_and_running_call_without_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """K-PERM-04: after the revocation the client sends nothing; the sweep alone ends its session:
    the ``GET`` stream is closed, the call still being answered is given up (its POST ends with no
    result), the session's run is finished, and the secret's next request is refused (401)."""
    cli = seeded(tmp_path / "data")
    secret = cli.connect("quiet", "facts.read:self:pref.food.*")
    entered = anyio.Event()

    async def hangs(_knowledge: Any, _arguments: dict[str, Any]) -> Any:
        # a call that is being answered when the sweep comes: it never finishes by itself
        entered.set()
        await anyio.sleep_forever()

    async def go() -> None:
        with notochord.open(cli.data_dir, embedder=None) as nc:
            mount = McpMount(nc, sweep_seconds=0.05)
            async with serving(mount) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
                headers = await _opened(http, secret)
                monkeypatch.setitem(mcp_app._TOOLS, "facts_lookup", replace(mcp_app._TOOLS["facts_lookup"], call=hangs))
                stream_closed, call_ended = anyio.Event(), anyio.Event()
                answered: list[bytes] = []

                async def watch_stream(*, task_status: anyio.abc.TaskStatus[int]) -> None:
                    get = {k: v for k, v in headers.items() if k != "Content-Type"} | {"Accept": "text/event-stream"}
                    async with http.stream("GET", "/mcp", headers=get) as stream:
                        task_status.started(stream.status_code)
                        async for _ in stream.aiter_bytes():
                            pass
                    stream_closed.set()

                async def call() -> None:
                    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _LOOKUP}
                    async with http.stream("POST", "/mcp", content=json.dumps(body), headers=headers) as response:
                        async for part in response.aiter_bytes():
                            answered.append(part)
                    call_ended.set()

                async with anyio.create_task_group() as tasks:
                    assert await tasks.start(watch_stream) == 200
                    tasks.start_soon(call)
                    with anyio.fail_after(30):  # a guard against hanging, not a measure
                        await entered.wait()
                    assert _run_status(cli, "quiet") == "running"

                    cli.run("mcp", "revoke", "quiet")
                    with anyio.fail_after(30):  # a guard against hanging, not a measure
                        await stream_closed.wait()
                        await call_ended.wait()

                assert b'"result"' not in b"".join(answered)
                assert _run_status(cli, "quiet") == "succeeded"
                listing = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
                refused = await http.post("/mcp", json=listing, headers=headers)
                assert refused.status_code == 401, refused.text

    anyio.run(go)
