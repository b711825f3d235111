"""A session's life at its edges: ``initialize`` sent again, the ``GET`` stream asked to resume from
an event id, and a call the client gives up on.

- ``initialize`` begins a session once: the MCP lifecycle has it as a session's first request, sent
  one time. A second one in a session, over HTTP with the session's ``Mcp-Session-Id`` or over stdio
  after the handshake, is refused in the server's words, saying how to begin a new session; the
  session goes on with the protocol it agreed. The SDK's own client never sends a second one (its
  ``initialize()`` answers from what it holds), and reconnecting is a new session, so it is not
  refused.
- This server keeps no past events to replay (it sends nothing on the ``GET`` stream that a client
  could have missed), so a ``Last-Event-ID``, real or forged, resumes nothing: the stream opens as it
  would without it, under the same rules (one stream per session, the session's own connection
  only), never with a 5xx or a body that is not JSON-RPC.
- In the 2026-07-28 protocol, which has no sessions, a client cancels a request by closing its
  connection. Whatever point the call had reached, its write is whole or absent, and its run, a run
  of its own, is finished rather than left running until the server stops.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, PROTOCOL, Cli, Served, answer, exchange, one_message

_NAMES = itertools.count(1)
_BOTH = "application/json, text/event-stream"
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
_OLDER = {**INIT_PARAMS, "protocolVersion": "2025-03-26"}
_LOOKUP: dict[str, Any] = {"name": "facts_lookup", "arguments": {"prefix": "pref.food"}}
_MODERN = "2026-07-28"
_META = {"io.modelcontextprotocol/protocolVersion": _MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _opened(served: Served, secret: str) -> dict[str, str]:
    """The headers of every request of a session begun and initialized with ``secret``."""
    auth = {"Authorization": f"Bearer {secret}", "Accept": _BOTH, "Content-Type": "application/json"}
    begun = httpx.post(f"{served.url}/mcp", json=_INIT, headers=auth, timeout=30)
    assert one_message(begun)["result"]["protocolVersion"] == PROTOCOL
    headers = {**auth, "Mcp-Session-Id": begun.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
    assert httpx.post(f"{served.url}/mcp", json=INITIALIZED, headers=headers, timeout=30).status_code == 202
    return headers


def _says_begin_anew(error: dict[str, Any], *how: str) -> None:
    assert error["code"] == -32600, error
    message = error["message"]
    assert "initialize" in message and "once" in message, message
    for words in how:
        assert words in message, message
    for words in FOREIGN_WORDS:
        assert words not in message, message


def test_a_second_initialize_in_an_http_session_is_refused_and_the_session_goes_on(served: Served) -> None:
    """K-CHG-06: ``initialize`` with the session's ``Mcp-Session-Id`` is not a new beginning: it is
    refused (its id kept), told to send ``initialize`` without that header to begin a new session,
    and the session it named goes on, its run unchanged."""
    name = f"twice-{next(_NAMES)}"
    headers = _opened(served, served.cli.connect(name, "facts.read:self:pref.food.*"))
    url = f"{served.url}/mcp"
    first = one_message(
        httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _LOOKUP},
            headers=headers,
            timeout=30,
        )
    )
    again = {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": _OLDER}
    refused = one_message(httpx.post(url, json=again, headers=headers, timeout=30))
    assert refused["id"] == 3 and "result" not in refused, refused
    _says_begin_anew(refused["error"], "without the Mcp-Session-Id header")
    later = one_message(
        httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": _LOOKUP},
            headers=headers,
            timeout=30,
        )
    )
    assert later["result"] == first["result"]
    (run,) = [r for r in served.cli.json("runs", "list") if r["gem"] == name]
    assert run["status"] == "running", run


def test_initialize_sent_twice_before_initialized_is_refused_the_second_time(served: Served) -> None:
    """The handshake is begun by the first ``initialize``; a second one sent before
    ``notifications/initialized`` is a repeat all the same."""
    secret = served.cli.connect(f"twice-{next(_NAMES)}")
    auth = {"Authorization": f"Bearer {secret}", "Accept": _BOTH, "Content-Type": "application/json"}
    url = f"{served.url}/mcp"
    begun = httpx.post(url, json=_INIT, headers=auth, timeout=30)
    headers = {**auth, "Mcp-Session-Id": begun.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
    refused = one_message(httpx.post(url, json={**_INIT, "id": 2}, headers=headers, timeout=30))
    _says_begin_anew(refused["error"], "without the Mcp-Session-Id header")


def test_the_sdk_client_initializing_again_or_reconnecting_is_not_refused(served: Served) -> None:
    """The SDK's client is unaffected: its ``initialize()`` called again answers from the first
    handshake, and a client that connects anew begins a session of its own."""
    secret = served.cli.connect(f"twice-{next(_NAMES)}", "facts.read:self:pref.food.*")

    async def go() -> list[Any]:
        found: list[Any] = []
        for _ in range(2):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http,
                streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                first = await session.initialize()
                assert await session.initialize() == first
                found.append(answer(await session.call_tool(_LOOKUP["name"], _LOOKUP["arguments"])))
        return found

    one, two = anyio.run(go)
    assert [f["value"] for f in one] == ["mushroom stew"] and two == one


def test_a_second_initialize_over_stdio_is_refused_and_the_connection_goes_on(cli: Cli) -> None:
    """Over stdio the whole process is one session: a second ``initialize`` is refused, telling the
    client to start a new connection; the connection goes on in the protocol it negotiated."""
    cli.connect("desk", "facts.read:self:pref.food.*")
    again = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _OLDER})
    lookup = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _LOOKUP})
    refused, looked = exchange(cli.data_dir, [again, lookup])
    assert refused["id"] == 1 and "result" not in refused, refused
    _says_begin_anew(refused["error"], "new connection")
    assert [f["value"] for f in _answer_of(looked)] == ["mushroom stew"]


def _answer_of(reply: dict[str, Any]) -> Any:
    """The JSON answer of a raw ``tools/call`` reply that succeeded."""
    result = reply["result"]
    assert not result["isError"], result
    return json.loads(result["content"][0]["text"])


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = json.loads(response.read())
    error: dict[str, Any] = body["error"]
    for words in FOREIGN_WORDS:
        assert words not in error["message"], error
    return error


def test_a_stream_asked_to_resume_from_a_forged_event_id_opens_as_a_new_one(served: Served) -> None:
    """K-CON-06: a ``GET`` with ``Last-Event-ID`` opens the session's stream (no 5xx, nothing
    replayed from anywhere), and it is that session's one stream: a second ``GET`` is told one is
    open."""
    headers = _opened(served, served.cli.connect(f"resume-{next(_NAMES)}"))
    url = f"{served.url}/mcp"
    stream = {**headers, "Accept": "text/event-stream"}
    with httpx.stream("GET", url, headers={**stream, "Last-Event-ID": "forged-0"}, timeout=30) as opened:
        assert opened.status_code == 200, opened.read()
        assert opened.headers["content-type"].startswith("text/event-stream")
        assert opened.headers["mcp-session-id"] == headers["Mcp-Session-Id"]
        with httpx.stream("GET", url, headers={**stream, "Last-Event-ID": "0" * 300}, timeout=30) as second:
            assert "open already" in _error(second, 409)["message"]


def test_a_resumption_of_another_connections_session_reaches_nothing(served: Served) -> None:
    """K-CON-06: an event id sent with another connection's session id is answered as for an unknown
    session, whatever the id."""
    owner = _opened(served, served.cli.connect(f"resume-{next(_NAMES)}"))
    intruder = served.cli.connect(f"resume-{next(_NAMES)}")
    borrowed = {**owner, "Authorization": f"Bearer {intruder}", "Accept": "text/event-stream", "Last-Event-ID": "1"}
    with httpx.stream("GET", f"{served.url}/mcp", headers=borrowed, timeout=30) as refused:
        assert "unknown session" in _error(refused, 404)["message"]


@contextlib.contextmanager
def _store_held(served: Served) -> Iterator[None]:
    """The vault's store locked for writing by another program until the block ends."""
    store = sqlite3.connect(served.cli.data_dir / "spaces" / "personal.db", isolation_level=None, timeout=30)
    try:
        store.execute("BEGIN IMMEDIATE")
        yield
        store.execute("ROLLBACK")
    finally:
        store.close()


def _runs(served: Served, name: str) -> list[dict[str, Any]]:
    return [r for r in served.cli.json("runs", "list") if r["gem"] == name]


def _settled(served: Served, name: str) -> list[dict[str, Any]]:
    """The runs of ``name`` once one is recorded and none is running, or as they are after a while."""
    deadline = time.monotonic() + 20
    while True:
        runs = _runs(served, name)
        if (runs and all(r["status"] != "running" for r in runs)) or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def test_a_stateless_call_given_up_on_finishes_its_run_and_writes_whole_or_nothing(served: Served) -> None:
    """K-CHG-06, K-CHG-08: a ``facts_put`` whose client closes the connection while the call waits
    for the store leaves its run finished (so ``runs list`` does not show it running forever) and
    the fact written whole or not at all."""
    name = f"quitter-{next(_NAMES)}"
    secret = served.cli.connect(name, "facts.write:self:pref.food.*")
    arguments = {"predicateHint": "pref.food.like", "value": "okra given up on"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "facts_put", "arguments": arguments, "_meta": _META},
    }
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": _MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "facts_put",
    }
    with _store_held(served):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{served.url}/mcp",
                content=json.dumps(call),
                headers={**headers, "Content-Type": "application/json"},
                timeout=httpx.Timeout(30, read=1),
            )
        # the server learns of the closed connection while the call still waits
        time.sleep(0.5)
    (run,) = _settled(served, name)
    assert run["status"] == "succeeded", run
    changes = served.cli.json("changes", "list", "--actor", f"gem:{name}")
    assert [(c["op"], c["runId"]) for c in changes] in ([], [("facts.put", run["run"])]), changes
    still = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "facts_put", "arguments": {**arguments, "value": "okra"}, "_meta": _META},
    }
    answered = httpx.post(
        f"{served.url}/mcp",
        content=json.dumps(still),
        headers={**headers, "Content-Type": "application/json"},
        timeout=30,
    )
    assert answered.status_code == 200 and not answered.json()["result"]["isError"], answered.text
