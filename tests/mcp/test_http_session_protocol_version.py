"""Within a session over HTTP, the ``Mcp-Protocol-Version`` header repeats the version its
``initialize`` agreed, or is left out.

The MCP transport has the client send the negotiated version on every request after ``initialize``,
and the server answer 400 to a version it cannot take; a server that knows the session's version
assumes it when the header is absent. A session speaks one protocol: a request of the session
naming another version, one the server speaks elsewhere included, is refused before it is read
(400, a JSON-RPC error with ``id: null``), saying which version the session speaks; the request is
not run, and a refused ``DELETE`` ends nothing. The check comes after the session is known to be
the caller's: with another connection's secret, the answer is the one to a session id nobody has
(K-CON-06). The 2026-07-28 protocol has no sessions: a request of it that carries an
``Mcp-Session-Id`` naming no session of its caller is a run of its own, finished once answered.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, PROTOCOL, Served, one_message

_NAMES = itertools.count(1)
_BOTH = "application/json, text/event-stream"
_MODERN = "2026-07-28"
_META = {"io.modelcontextprotocol/protocolVersion": _MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
_VALUES = itertools.count(1)
_OTHERS = ["2024-11-05", "2025-03-26", "2025-11-25", _MODERN]
"""Versions the server speaks, each other than the one the sessions here agree (``PROTOCOL``)."""


def _connect(served: Served) -> tuple[str, dict[str, str]]:
    """A new connection that may write food preferences: its name and ``Authorization`` header."""
    name = f"agreed-{next(_NAMES)}"
    secret = served.cli.connect(name, "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    return name, {"Authorization": f"Bearer {secret}"}


def _post(served: Served, message: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    sent = {"Accept": _BOTH, "Content-Type": "application/json", **headers}
    return httpx.post(f"{served.url}/mcp", content=json.dumps(message).encode(), headers=sent, timeout=30)


def _begin(served: Served, auth: dict[str, str]) -> dict[str, str]:
    """A session of ``auth``'s connection begun in ``PROTOCOL``, past its handshake: its headers
    (with no ``Mcp-Protocol-Version``)."""
    opened = _post(served, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}, auth)
    assert one_message(opened)["result"]["protocolVersion"] == PROTOCOL
    headers = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
    assert _post(served, INITIALIZED, headers).status_code == 202
    return headers


def _request(served: Served, method: str, headers: dict[str, str]) -> httpx.Response:
    """``method`` on ``/mcp``; its body is read only when refused (a stream that opened stays open)."""
    with httpx.stream(method, f"{served.url}/mcp", headers=headers, timeout=30) as response:
        if response.status_code >= 400:
            response.read()
        return response


def _put() -> dict[str, Any]:
    """The params of a call writing a food preference no other call here writes."""
    return {"name": "facts_put", "arguments": {"predicateHint": "pref.food.like", "value": f"okra {next(_VALUES)}"}}


def _call(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _version_refusal(response: httpx.Response, sent: str) -> str:
    """The message of a 400 refusing the version ``sent`` in a ``PROTOCOL`` session."""
    assert response.status_code == 400, response.status_code
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32600), body
    message: str = body["error"]["message"]
    for words in FOREIGN_WORDS:
        assert words not in message, message
    assert sent in message, message
    assert PROTOCOL in message, message
    assert "Mcp-Protocol-Version" in message, message
    return message


def _shown(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    """All a client can tell of ``response``, but the moment it was sent."""
    headers = {k: v for k, v in response.headers.items() if k.lower() != "date"}
    return response.status_code, headers, response.content


@pytest.mark.parametrize("version", _OTHERS)
def test_a_call_naming_another_version_than_its_session_agreed_is_refused_and_writes_nothing(
    served: Served, version: str
) -> None:
    """K-CHG-06: 400 naming the version sent and the session's, and how to go on; the call is not run."""
    name, auth = _connect(served)
    session = _begin(served, auth)
    message = _version_refusal(_post(served, _call(2, _put()), {**session, "Mcp-Protocol-Version": version}), version)
    assert "leave the header out" in message, message
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []
    again = _post(served, _call(3, _put()), {**session, "Mcp-Protocol-Version": PROTOCOL})
    assert json.loads(one_message(again)["result"]["content"][0]["text"])["status"] == "applied"


def test_in_the_2026_protocol_the_refusal_says_that_protocol_has_no_session_id(served: Served) -> None:
    """The client that meant the sessionless protocol is told to leave the session's id out."""
    _name, auth = _connect(served)
    session = _begin(served, auth)
    refused = _post(served, _call(2, {**_put(), "_meta": _META}), {**session, "Mcp-Protocol-Version": _MODERN})
    assert "without the Mcp-Session-Id header" in _version_refusal(refused, _MODERN)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_stream_or_an_end_naming_another_version_is_refused_and_the_session_goes_on(
    served: Served, method: str
) -> None:
    """OD-K45: a refused ``DELETE`` ends neither the session nor its run."""
    _name, auth = _connect(served)
    session = _begin(served, auth)
    headers = {**session, "Mcp-Protocol-Version": "2025-03-26", "Accept": "text/event-stream"}
    _version_refusal(_request(served, method, headers), "2025-03-26")
    listed = _post(served, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
    assert "tools" in one_message(listed)["result"]


@pytest.mark.parametrize("header", [None, PROTOCOL], ids=["absent", "agreed"])
def test_the_agreed_version_or_no_header_is_answered(served: Served, header: str | None) -> None:
    """Without the header the session's own version is assumed."""
    _name, auth = _connect(served)
    session = _begin(served, auth)
    sent = session if header is None else {**session, "Mcp-Protocol-Version": header}
    assert "tools" in one_message(_post(served, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sent))["result"]


@pytest.mark.parametrize("version", _OTHERS)
def test_another_connections_session_named_with_another_version_reads_as_no_session_at_all(
    served: Served, version: str
) -> None:
    """K-CON-06: the version is judged only for the session's own connection; for another, the
    answer is the one to an id no session ever had, byte for byte."""
    _owner, auth = _connect(served)
    session = _begin(served, auth)
    _stranger, stranger = _connect(served)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    named = {**stranger, "Mcp-Protocol-Version": version}
    theirs = _post(served, listing, {**named, "Mcp-Session-Id": session["Mcp-Session-Id"]})
    nobodys = _post(served, listing, {**named, "Mcp-Session-Id": "0" * 32})
    assert theirs.status_code >= 400, theirs.text
    assert _shown(theirs) == _shown(nobodys)


def test_a_2026_request_carrying_a_session_id_of_no_session_is_a_run_of_its_own_finished(served: Served) -> None:
    """OD-K45: the id means nothing in that protocol; the request's run ends once it is answered,
    rather than staying open under that id until the server stops."""
    name, auth = _connect(served)
    headers = {
        **auth,
        "Mcp-Session-Id": "e" * 32,
        "Mcp-Protocol-Version": _MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "facts_put",
    }
    answered = one_message(_post(served, _call(2, {**_put(), "_meta": _META}), headers))
    assert json.loads(answered["result"]["content"][0]["text"])["status"] == "applied"
    assert [run["status"] for run in served.cli.json("runs", "list", "--gem", name)] == ["succeeded"]
