"""A revoked secret ends what it opened over HTTP, not only what it would open next.

``notochord mcp revoke NAME`` (with or without ``--uninstall``) is made by another process than the
running ``notochord serve``, writing the store. The server learns of it as it learns of every
revocation, by checking the secrets against the store: on the very next request of any client, before
that request is served, it checks the secrets that opened its open sessions too. The sessions of the
revoked connection end there as if their client had ended them: their runs are finished, their
``GET`` event streams closed, and every further request of the connection is refused (401). The
sessions of other connections go on, their runs still running. A client that sends nothing more,
only holding its ``GET`` stream open, is ended by the same check made from time to time without any
request (a sweep).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp_harness import INIT_PARAMS, INITIALIZED, PROTOCOL, Cli, Served, answer, mount_server, one_message, seeded
from mcp_types import CallToolResult

import notochord
from notochord.mcp_server.http import McpMount

_BOTH = "application/json, text/event-stream"
_ARGUMENTS: dict[str, Any] = {"prefix": "pref.food"}
_LOOKUP: dict[str, Any] = {"name": "facts_lookup", "arguments": _ARGUMENTS}


class _RawSession:
    """One session of a connection over plain HTTP, so that its ``GET`` stream can be watched."""

    def __init__(self, http: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.http = http
        self.headers = headers
        self.stream_closed = anyio.Event()

    async def call(self, request_id: int) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": _LOOKUP}
        return await self.http.post("/mcp", json=body, headers=self.headers)

    async def watch_stream(self, *, task_status: anyio.abc.TaskStatus[int]) -> None:
        """Open the session's ``GET`` stream, report its status, and read it until the server ends it."""
        headers = {**self.headers, "Accept": "text/event-stream"}
        headers.pop("Content-Type")
        async with self.http.stream("GET", "/mcp", headers=headers) as stream:
            task_status.started(stream.status_code)
            async for _ in stream.aiter_bytes():
                pass
        self.stream_closed.set()


@asynccontextmanager
async def _raw_session(served: Served, secret: str) -> AsyncIterator[_RawSession]:
    """A session begun and initialized with ``secret`` whose run is recorded by a first call."""
    auth = {"Authorization": f"Bearer {secret}", "Accept": _BOTH, "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
        begun = await http.post("/mcp", json=init, headers=auth)
        assert "result" in one_message(begun), begun.text
        headers = {**auth, "Mcp-Session-Id": begun.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
        assert (await http.post("/mcp", json=INITIALIZED, headers=headers)).status_code == 202
        session = _RawSession(http, headers)
        assert "result" in one_message(await session.call(2))
        yield session


def _run_status(cli: Cli, name: str) -> str:
    (run,) = cli.json("runs", "list", "--gem", name)
    status: str = run["status"]
    return status


async def _lookup(session: ClientSession) -> CallToolResult:
    return await session.call_tool("facts_lookup", _ARGUMENTS)


@pytest.mark.parametrize("uninstall", [False, True], ids=["revoke", "revoke-uninstall"])
def test_revoking_a_connection_ends_its_open_sessions_on_the_next_request_of_any_client(
    served: Served, uninstall: bool
) -> None:
    """K-PERM-04, K-UNINST-04: a revocation takes effect on the next request, also for what the
    secret opened: once another connection's client sends a request, the revoked connection's
    session is over (its run finished, its ``GET`` stream closed, its next request refused with
    401), and the other connection's session goes on as before."""
    gone = served.cli.connect(f"gone-{int(uninstall)}")
    kept = served.cli.connect(f"kept-{int(uninstall)}")
    gone_name, kept_name = f"gone-{int(uninstall)}", f"kept-{int(uninstall)}"

    async def go() -> None:
        async with (
            _raw_session(served, gone) as doomed,
            served.session(kept) as other,
            anyio.create_task_group() as tasks,
        ):
            assert await tasks.start(doomed.watch_stream) == 200
            assert answer(await _lookup(other)) == []
            assert (_run_status(served.cli, gone_name), _run_status(served.cli, kept_name)) == ("running", "running")

            served.cli.run("mcp", "revoke", gone_name, *(["--uninstall"] if uninstall else []))
            # any client's next request is where the server learns of the revocation
            assert answer(await _lookup(other)) == []

            assert _run_status(served.cli, gone_name) == "succeeded"
            with anyio.fail_after(30):  # a guard against hanging, not a measure: the stream is already ending
                await doomed.stream_closed.wait()
            assert (await doomed.call(3)).status_code == 401
            assert _run_status(served.cli, kept_name) == "running"
            assert answer(await _lookup(other)) == []

    anyio.run(go)


def test_the_revoked_connections_own_next_request_ends_its_sessions_too(served: Served) -> None:
    """K-PERM-04: with no other client about, the revoked client's own next request, refused with 401,
    is enough for the server to end that connection's open session, run and stream."""
    secret = served.cli.connect("alone")

    async def go() -> None:
        async with _raw_session(served, secret) as doomed, anyio.create_task_group() as tasks:
            assert await tasks.start(doomed.watch_stream) == 200
            assert _run_status(served.cli, "alone") == "running"
            served.cli.run("mcp", "revoke", "alone")
            assert (await doomed.call(3)).status_code == 401
            assert _run_status(served.cli, "alone") == "succeeded"
            with anyio.fail_after(30):  # a guard against hanging, not a measure: the stream is already ending
                await doomed.stream_closed.wait()

    anyio.run(go)


def test_a_sweep_ends_the_sessions_of_a_revoked_secret_while_no_request_comes(tmp_path: Path) -> None:
    """K-PERM-04: a client that only holds its ``GET`` stream open sends no request after the
    revocation; the server's sweep, made with no request at all, ends its session all the same.
    The server is ``/mcp`` of ``notochord serve`` in this test's own event loop, so that the test
    makes the sweep itself rather than waiting for it."""
    cli = seeded(tmp_path / "data")
    secret = cli.connect("quiet")

    async def go() -> None:
        with notochord.open(cli.data_dir, embedder=None) as nc:
            mount = McpMount(nc)
            server, port = mount_server(mount)
            async with anyio.create_task_group() as serving:
                serving.start_soon(server.serve)
                with anyio.fail_after(30):
                    while not server.started:
                        await anyio.sleep(0.01)
                served = Served(f"http://127.0.0.1:{port}", cli)
                async with _raw_session(served, secret) as doomed, anyio.create_task_group() as tasks:
                    assert await tasks.start(doomed.watch_stream) == 200
                    cli.run("mcp", "revoke", "quiet")
                    await mount.sessions.end_revoked()
                    assert _run_status(cli, "quiet") == "succeeded"
                    with anyio.fail_after(30):  # a guard against hanging, not a measure
                        await doomed.stream_closed.wait()
                    assert (await doomed.call(3)).status_code == 401
                server.should_exit = True

    anyio.run(go)
