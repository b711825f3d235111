"""When as many sessions are open as ``/mcp`` holds, a client that would open another is told how to
make room, at 503 with ``Retry-After``.

The server here is the ``/mcp`` route of ``notochord serve`` (the same mount, middleware and
session manager) with a limit of two sessions, served on a real port in this process, so that the
limit is reached with two requests instead of ten thousand. OD-K45: a session refused is no run;
once a session ends, a new one opens and is a run of its own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, Cli, initialize_error, mount_server, seeded
from test_http_session_words import SDK_WORDS

import notochord
from notochord.mcp_server.http import McpMount

_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
_LIMIT = 2


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[tuple[str, Cli]]:
    """``/mcp`` holding at most two sessions, on a free port; its URL and the CLI on its vault."""
    cli = seeded(tmp_path / "data")
    with notochord.open(cli.data_dir, embedder=None) as nc:
        server, port = mount_server(McpMount(nc, max_sessions=_LIMIT))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}/mcp", cli
        finally:
            server.should_exit = True
            thread.join(timeout=30)


def _open(url: str, auth: dict[str, str]) -> httpx.Response:
    return httpx.post(url, content=json.dumps(_INIT).encode(), headers={**_HEADERS, **auth}, timeout=30)


def test_a_session_past_the_limit_is_told_how_to_make_room_and_none_is_opened(limited: tuple[str, Cli]) -> None:
    """503 with the SDK's -32603 and ``id: null``, ``Retry-After`` in seconds and no
    ``Mcp-Session-Id``; the open sessions go on, and once one ends a new one opens."""
    url, cli = limited
    auth = {"Authorization": f"Bearer {cli.connect('crowd')}"}
    opened = [_open(url, auth).headers["mcp-session-id"] for _ in range(_LIMIT)]
    refused = _open(url, auth)
    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"].startswith("application/json")
    assert refused.headers["retry-after"].isdigit(), refused.headers
    assert "mcp-session-id" not in refused.headers
    body = refused.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32603), body
    message: str = body["error"]["message"]
    for words in (*FOREIGN_WORDS, *SDK_WORDS):
        assert words not in message, message
    assert f"({_LIMIT}, " in message, message
    assert "DELETE" in message, message
    assert "send initialize again" in message, message
    assert cli.json("runs", "list", "--gem", "crowd") == []

    first = {**auth, "Mcp-Session-Id": opened[0]}
    assert httpx.post(url, json=INITIALIZED, headers={**_HEADERS, **first}, timeout=30).status_code == 202
    assert httpx.delete(url, headers=first, timeout=30).status_code == 200
    assert _open(url, auth).status_code == 200


def test_the_sdk_client_shows_the_servers_words_when_no_session_can_open(limited: tuple[str, Cli]) -> None:
    """The official client's ``initialize`` raises the server's words rather than "Server returned
    an error response"."""
    url, cli = limited
    auth = {"Authorization": f"Bearer {cli.connect('late')}"}
    for _ in range(_LIMIT):
        assert _open(url, auth).status_code == 200

    error: Any = anyio.run(initialize_error, url, auth)
    assert isinstance(error, MCPError), repr(error)
    assert "too many sessions are open" in error.error.message, error.error.message
