"""What ``/mcp`` answers about protocol versions, and about the 2026-07-28 protocol's envelope and
headers, is said in the server's words: what is wrong and what to send instead.

The SDK routes a request by its ``Mcp-Protocol-Version`` header: one of the 2025 protocols goes to a
session begun with ``initialize``; any other value, 2026-07-28 or one it does not know, to the
stateless protocol, whose every request carries ``params._meta`` (the envelope) and repeats its
version, method and name in headers. Each refusal keeps the SDK's status, JSON-RPC code, ``data``,
``id`` and headers (the SDK's client negotiates by code and data); only the words change. Following
the advice of a refusal gets the request past it. Nothing refused here writes anything (K-CHG-06).
Over stdio, where no header names the protocol, the same refusal of a method says what to send there.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, Cli, Served, exchange, initialize_error, stdio_process
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

_NAMES = itertools.count(1)
_BOTH = "application/json, text/event-stream"
_MODERN = "2026-07-28"
_META = {"io.modelcontextprotocol/protocolVersion": _MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
_PUT = {"name": "facts_put", "arguments": {"predicateHint": "pref.food.like", "value": "okra"}}
SDK_WORDS = (
    "must be an object carrying",
    "envelope key",
    "does not match",
    "appears more than once",
    "Unsupported protocol version",
    "Method not found",
    "handshake is not accepted",
)
"""The SDK's own words for these refusals, which no answer of ``/mcp`` may carry."""


def _connect(served: Served, *grants: str) -> tuple[str, dict[str, str]]:
    """A new connection with ``grants`` switched on: its name and its ``Authorization`` header."""
    name = f"versions-{next(_NAMES)}"
    return name, {"Authorization": f"Bearer {served.cli.connect(name, *grants)}"}


def _post(served: Served, message: dict[str, Any], headers: dict[str, str] | list[tuple[str, str]]) -> httpx.Response:
    """POST ``message`` with ``headers``; a header listed twice in a list is sent twice."""
    items = list(headers.items()) if isinstance(headers, dict) else headers
    sent = [("Accept", _BOTH), ("Content-Type", "application/json"), *items]
    return httpx.post(f"{served.url}/mcp", content=json.dumps(message).encode(), headers=sent, timeout=30)


def _stateless(
    served: Served, auth: dict[str, str], method: str, params: dict[str, Any] | None = None, **headers: str
) -> httpx.Response:
    """A request of the 2026-07-28 protocol: ``params`` as given (``_META`` is not added), and the
    headers a client sends with it unless ``headers`` says otherwise (``Mcp_Name`` for ``Mcp-Name``)."""
    sent = {**auth, "Mcp-Protocol-Version": _MODERN, "Mcp-Method": method}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = params
    return _post(served, message, sent)


def _refusal(response: httpx.Response, status: int, code: int, request_id: int | str | None) -> dict[str, Any]:
    """The error of ``response``: a JSON-RPC error at ``status`` with ``code`` and ``request_id``, in
    no one's words but the server's, and no session begun."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert "mcp-session-id" not in response.headers, "a refused request began no session to name"
    body = response.json()
    assert body["jsonrpc"] == "2.0", body
    assert body["id"] == request_id, body
    error: dict[str, Any] = body["error"]
    assert error["code"] == code, body
    for words in (*FOREIGN_WORDS, *SDK_WORDS):
        assert words not in error["message"], error["message"]
    return error


def _names_every_version(message: str) -> None:
    for version in (*HANDSHAKE_PROTOCOL_VERSIONS, _MODERN):
        assert version in message, message


class TestAnUnsupportedProtocolVersion:
    """A 2025-style request whose ``Mcp-Protocol-Version`` header names a version the server does
    not speak is told so, with the versions it does speak, instead of being told to send the
    2026-07-28 protocol's envelope it never meant to use."""

    @pytest.mark.parametrize(
        "version",
        [
            pytest.param("1999-01-01", id="made-up"),
            pytest.param("2025-6-18", id="garbled"),
            pytest.param("latest please", id="words"),
            pytest.param("2099-01-01", id="newer-than-the-server"),
        ],
    )
    def test_initialize_is_told_the_version_is_not_spoken_and_which_are(self, served: Served, version: str) -> None:
        """400, -32602, the request's id kept; the message names the version sent and every version
        the server speaks, with how a session begins."""
        _, auth = _connect(served)
        error = _refusal(_post(served, _INIT, {**auth, "Mcp-Protocol-Version": version}), 400, -32602, 1)
        message = error["message"]
        assert message.startswith(f'unsupported protocol version "{version}" in the Mcp-Protocol-Version header'), (
            message
        )
        _names_every_version(message)
        assert "initialize sent without that header" in message, message
        # following the advice begins the session
        opened = _post(served, _INIT, auth)
        assert opened.status_code == 200, opened.text
        assert "mcp-session-id" in opened.headers

    def test_a_request_with_a_garbled_version_writes_nothing(self, served: Served) -> None:
        """K-CHG-06: a tool call under a version the server does not speak is refused and not run."""
        name, auth = _connect(served, "facts.write:self:pref.food.*")
        put = {"jsonrpc": "2.0", "id": "put", "method": "tools/call", "params": _PUT}
        error = _refusal(_post(served, put, {**auth, "Mcp-Protocol-Version": "v2!"}), 400, -32602, "put")
        assert error["message"].startswith('unsupported protocol version "v2!"'), error
        assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []

    def test_a_notification_keeps_the_code_and_data_clients_negotiate_by(self, served: Served) -> None:
        """-32022 with ``data`` naming the supported and requested versions, as the SDK sends it; only
        the message is the server's, and it names the session protocols too."""
        _, auth = _connect(served)
        error = _refusal(_post(served, INITIALIZED, {**auth, "Mcp-Protocol-Version": "1999-01-01"}), 400, -32022, None)
        assert error["data"] == {"supported": [_MODERN], "requested": "1999-01-01"}
        assert error["message"].startswith('unsupported protocol version "1999-01-01"'), error
        _names_every_version(error["message"])

    def test_a_get_keeps_its_405_and_allow_and_is_told_of_the_version(self, served: Served) -> None:
        """Not "the protocol version has no sessions": the version is not one the server speaks."""
        _, auth = _connect(served)
        headers = {**auth, "Mcp-Protocol-Version": "1999-01-01", "Accept": "text/event-stream"}
        response = httpx.get(f"{served.url}/mcp", headers=headers, timeout=30)
        error = _refusal(response, 405, -32600, None)
        assert response.headers["allow"] == "POST"
        assert error["message"].startswith('unsupported protocol version "1999-01-01"'), error
        assert "has no sessions" not in error["message"]

    def test_the_sdk_client_shows_the_servers_words(self, served: Served) -> None:
        """The official client, sent out with a version header of its own, shows which versions work."""
        _, auth = _connect(served)

        headers = {**auth, "Mcp-Protocol-Version": "1999-01-01"}
        error = anyio.run(initialize_error, f"{served.url}/mcp", headers)
        assert isinstance(error, MCPError), repr(error)
        assert error.error.code == -32602, error.error
        assert error.error.message.startswith('unsupported protocol version "1999-01-01"'), error.error.message
        _names_every_version(error.error.message)


class TestInitializeNamingAVersionTheServerDoesNotSpeak:
    @pytest.mark.parametrize("offered", ["1999-01-01", _MODERN, "garbled"])
    def test_the_server_answers_with_the_newest_version_it_speaks_in_a_session(
        self, served: Served, offered: str
    ) -> None:
        """The MCP handshake: a server that does not speak the version offered answers with one it
        does, the newest, and the client decides whether it can go on; that is not an error."""
        _, auth = _connect(served)
        init = {**_INIT, "params": {**INIT_PARAMS, "protocolVersion": offered}}
        response = _post(served, init, auth)
        assert response.status_code == 200, response.text
        assert "mcp-session-id" in response.headers
        data = next(line for line in response.text.splitlines() if line.startswith("data: "))
        assert json.loads(data.removeprefix("data: "))["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION


class TestTheEnvelopeOfTheStatelessProtocol:
    @pytest.mark.parametrize(
        "params",
        [
            pytest.param(None, id="no-params"),
            pytest.param({}, id="no-meta"),
            pytest.param({"_meta": "2026-07-28"}, id="meta-not-an-object"),
        ],
    )
    def test_a_request_without_it_is_shown_what_to_send(self, served: Served, params: dict[str, Any] | None) -> None:
        """400, -32602, the id kept: the envelope's keys and values, or a session instead."""
        _, auth = _connect(served)
        error = _refusal(_stateless(served, auth, "tools/list", params), 400, -32602, 7)
        message = error["message"]
        assert message.startswith("a request of the 2026-07-28 protocol carries params._meta"), message
        assert json.dumps(_META) in message, message
        assert "send initialize without the Mcp-Protocol-Version header" in message, message
        # following the advice gets the answer
        assert _stateless(served, auth, "tools/list", {"_meta": _META}).status_code == 200

    def test_an_envelope_lacking_a_key_names_it(self, served: Served) -> None:
        """400, -32602: the key missing, and the whole envelope."""
        _, auth = _connect(served)
        meta = {"io.modelcontextprotocol/protocolVersion": _MODERN}
        error = _refusal(_stateless(served, auth, "tools/list", {"_meta": meta}), 400, -32602, 7)
        message = error["message"]
        lacked, carried = message.split(": ", 1)
        assert lacked == 'params._meta lacks "io.modelcontextprotocol/clientCapabilities"', message
        assert carried.startswith("a request of the 2026-07-28 protocol carries params._meta"), message

    def test_a_tool_call_without_it_writes_nothing(self, served: Served) -> None:
        """K-CHG-06."""
        name, auth = _connect(served, "facts.write:self:pref.food.*")
        error = _refusal(_stateless(served, auth, "tools/call", _PUT, Mcp_Name="facts_put"), 400, -32602, 7)
        assert "params._meta" in error["message"]
        assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


class TestTheHeadersOfTheStatelessProtocol:
    def test_a_version_header_and_envelope_that_differ_are_both_named(self, served: Served) -> None:
        """400 with the SDK's -32020: both versions, and which one to send in both."""
        _, auth = _connect(served)
        meta = {**_META, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}
        error = _refusal(_stateless(served, auth, "tools/list", {"_meta": meta}), 400, -32020, 7)
        message = error["message"]
        assert 'the Mcp-Protocol-Version header says "2026-07-28"' in message, message
        assert '"2025-06-18"' in message, message
        assert "send the same version in both (2026-07-28" in message, message

    @pytest.mark.parametrize(
        ("sent", "said"),
        [
            pytest.param("tools/call", 'the Mcp-Method header says "tools/call"', id="another-method"),
            pytest.param(None, "no Mcp-Method header", id="missing"),
        ],
    )
    def test_a_method_header_that_does_not_repeat_the_method_says_what_to_send(
        self, served: Served, sent: str | None, said: str
    ) -> None:
        """400, -32020: the header to send, which then gets the answer."""
        _, auth = _connect(served)
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": _META}}
        headers = {**auth, "Mcp-Protocol-Version": _MODERN}
        if sent is not None:
            headers["Mcp-Method"] = sent
        error = _refusal(_post(served, request, headers), 400, -32020, 7)
        message = error["message"]
        assert message.startswith(said), message
        assert message.endswith("send Mcp-Method: tools/list"), message
        assert _post(served, request, {**headers, "Mcp-Method": "tools/list"}).status_code == 200

    @pytest.mark.parametrize(
        ("method", "field", "value", "advised"),
        [
            pytest.param("tools/call", "name", "profile", "profile", id="a-tool"),
            pytest.param("tools/call", "name", "café", "=?base64?Y2Fmw6k=?=", id="not-ascii"),
            pytest.param("resources/read", "uri", "notochord://documents/x", "notochord://documents/x", id="a-uri"),
        ],
    )
    def test_a_name_header_that_does_not_repeat_the_name_says_what_to_send(
        self, served: Served, method: str, field: str, value: str, advised: str
    ) -> None:
        """400, -32020: the header to send, in the protocol's base64 form when the name is not plain
        ASCII; sent so, the request gets past the header check to the method itself."""
        _, auth = _connect(served)
        params = {field: value, "_meta": _META}
        error = _refusal(_stateless(served, auth, method, params, Mcp_Name="something-else"), 400, -32020, 7)
        message = error["message"]
        assert message.startswith('the Mcp-Name header says "something-else"'), message
        assert message.endswith(f"send Mcp-Name: {advised}"), message
        followed = _stateless(served, auth, method, params, Mcp_Name=advised)
        assert followed.json().get("error", {}).get("code") != -32020, followed.text

    def test_a_routing_header_sent_twice_is_told_to_be_sent_once(self, served: Served) -> None:
        """400, -32020, naming the header as a client writes it."""
        _, auth = _connect(served)
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": _META}}
        headers = [*auth.items(), ("Mcp-Protocol-Version", _MODERN), ("Mcp-Method", "tools/list")]
        error = _refusal(_post(served, request, [*headers, ("Mcp-Method", "tools/list")]), 400, -32020, 7)
        assert error["message"].startswith("the Mcp-Method header is sent more than once: send it once"), error

    def test_the_sdk_client_shows_the_servers_words(self, served: Served) -> None:
        """The official client, whose method header a proxy rewrote, shows what to send."""
        _, auth = _connect(served)

        async def rewrite(request: httpx2.Request) -> None:
            if request.headers.get("mcp-method") == "tools/list":
                request.headers["Mcp-Method"] = "resources/list"

        async def go() -> MCPError | None:
            async with (
                httpx2.AsyncClient(headers=auth, timeout=30, event_hooks={"request": [rewrite]}) as http,
                Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client,
            ):
                try:
                    await client.list_tools()
                except MCPError as error:
                    return error
            return None

        error = anyio.run(go)
        assert isinstance(error, MCPError), repr(error)
        assert error.error.code == -32020, error.error
        assert error.error.message.endswith("send Mcp-Method: tools/list"), error.error.message


class TestAMethodOfTheOtherProtocol:
    def test_initialize_in_the_stateless_protocol_says_how_to_do_without_it_or_begin_a_session(
        self, served: Served
    ) -> None:
        """404, -32601, ``data`` the method, as the SDK sends it; sent without the version header,
        initialize begins a session."""
        _, auth = _connect(served)
        params = {**INIT_PARAMS, "_meta": _META}
        error = _refusal(_stateless(served, auth, "initialize", params), 404, -32601, 7)
        assert error["data"] == "initialize"
        message = error["message"]
        assert message.startswith("initialize is not part of the 2026-07-28 protocol"), message
        assert "params._meta" in message, message
        assert "send initialize without the Mcp-Protocol-Version header" in message, message
        assert _post(served, _INIT, auth).status_code == 200

    def test_ping_in_the_stateless_protocol_points_at_server_discover(self, served: Served) -> None:
        """404, -32601: ping belongs to sessions; server/discover answers in its place."""
        _, auth = _connect(served)
        error = _refusal(_stateless(served, auth, "ping", {"_meta": _META}), 404, -32601, 7)
        message = error["message"]
        assert message.startswith("ping is not part of the 2026-07-28 protocol"), message
        assert "server/discover" in message, message
        assert _stateless(served, auth, "server/discover", {"_meta": _META}).status_code == 200

    def test_an_unknown_method_in_the_stateless_protocol_names_the_methods_it_takes(self, served: Served) -> None:
        """The list of methods is the 2026-07-28 protocol's: server/discover, neither initialize nor ping."""
        _, auth = _connect(served)
        error = _refusal(_stateless(served, auth, "tools/run", {"_meta": _META}), 404, -32601, 7)
        message = error["message"]
        assert message.startswith("unknown method 'tools/run' (this server answers server/discover, tools/list"), (
            message
        )
        assert "initialize" not in message
        assert "ping" not in message

    def test_server_discover_in_a_session_says_where_it_is_answered(self, served: Served) -> None:
        """-32601 within the session's stream: server/discover belongs to the 2026-07-28 protocol,
        sent outside the session with its header and envelope, where it is answered."""
        _, auth = _connect(served)
        opened = _post(served, _INIT, auth)
        session = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        assert _post(served, INITIALIZED, session).status_code == 202
        discover = {"jsonrpc": "2.0", "id": 3, "method": "server/discover"}
        answered = _post(served, discover, {**session, "Mcp-Protocol-Version": "2025-06-18"})
        assert answered.status_code == 200, answered.text
        data = next(line for line in answered.text.splitlines() if line.startswith("data: "))
        error = json.loads(data.removeprefix("data: "))["error"]
        assert error["code"] == -32601, error
        assert error["data"] == "server/discover", error
        message = error["message"]
        assert message.startswith("server/discover is not part of the 2025-06-18 protocol this session speaks"), message
        assert "without the Mcp-Session-Id header, with the header Mcp-Protocol-Version: 2026-07-28" in message
        for words in (*FOREIGN_WORDS, *SDK_WORDS):
            assert words not in message, message
        assert _stateless(served, auth, "server/discover", {"_meta": _META}).status_code == 200


def test_server_discover_in_a_stdio_session_says_how_to_send_it_there(cli: Cli) -> None:
    """Over stdio the protocol is chosen by a connection's first request, not by a header: the
    refusal says so, and names no header."""
    cli.connect("desk")
    (reply,) = exchange(cli.data_dir, ['{"jsonrpc": "2.0", "id": 1, "method": "server/discover"}'])
    assert reply["id"] == 1, reply
    error = reply["error"]
    assert error["code"] == -32601, error
    message = error["message"]
    assert message.startswith("server/discover is not part of the 2025-06-18 protocol this session speaks"), message
    assert "send it as the first request of a new connection, with params._meta" in message, message
    assert "header" not in message, message
    for words in (*FOREIGN_WORDS, *SDK_WORDS):
        assert words not in message, message


def test_the_2026_envelope_in_a_stdio_session_is_told_the_connection_speaks_a_session(cli: Cli) -> None:
    """A connection speaks the protocol its first request chose: after initialize, a request carrying
    the 2026-07-28 envelope is refused, saying which protocol this connection speaks and how to speak
    the other, and nothing is written (K-CHG-06)."""
    cli.connect("desk", "facts.write:self:pref.food.*")
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**_PUT, "_meta": _META}})
    (reply,) = exchange(cli.data_dir, [line])
    assert reply["id"] == 1, reply
    error = reply["error"]
    assert error["code"] == -32600, error
    message = error["message"]
    assert message.startswith("this connection began with initialize, so it speaks a session's protocol"), message
    assert "start a new connection whose first request carries params._meta" in message, message
    assert "handshake protocol era" not in message, message
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


def test_initialize_on_a_stdio_connection_begun_in_2026_says_how_to_begin_a_session(cli: Cli) -> None:
    """A connection whose first request carried the 2026-07-28 envelope has no handshake: a later
    initialize is told so, with the SDK's code and data kept (its client reads them)."""
    cli.connect("desk")
    first = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": _META}}
    later = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": INIT_PARAMS}
    with stdio_process(cli.data_dir) as process:
        assert process.stdin is not None and process.stdout is not None
        replies = []
        for request in (first, later):
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()
    assert "result" in replies[0], replies[0]
    error = replies[1]["error"]
    assert replies[1]["id"] == 2, replies[1]
    assert error["code"] == -32022, error
    assert "data" in error, error
    message = error["message"]
    assert message.startswith("this connection began with a 2026-07-28 request, a protocol without sessions"), message
    assert "start a new connection and send initialize first" in message, message
    assert "handshake is not accepted" not in message, message
