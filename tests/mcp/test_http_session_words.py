"""What ``/mcp`` answers about sessions, HTTP methods and the ``Accept`` header is said in the
server's words: what is wrong and what to send instead.

The SDK's transport answers these itself, in its own English ("Session not found", "Bad Request:
Missing session ID", "Method Not Allowed", "Not Acceptable: …", "Conflict: …", a plain-text
"Request body too large", or no body at all). Each answer keeps its HTTP status, its JSON-RPC code,
``id: null`` and every header the SDK sets (``Allow``, ``Mcp-Session-Id``); only the words change,
and where there were none, a JSON-RPC error is the body. A session begun with another connection's
secret answers exactly as an unknown one (K-CON-06: nothing of one connection is visible to
another). Nothing refused here writes anything (K-CHG-06).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, Served

_NAMES = itertools.count(1)
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
_BOTH = "application/json, text/event-stream"
_MODERN = {"Mcp-Protocol-Version": "2026-07-28"}
SDK_WORDS = (
    "Session not found",
    "Bad Request",
    "Missing session ID",
    "Method Not Allowed",
    "Not Acceptable",
    "Client must accept",
    "Conflict:",
    "SSE",
    "Request body too large",
    "Too many open sessions",
)
"""The SDK transport's own words, which no answer of ``/mcp`` may carry."""


def _connect(served: Served) -> dict[str, str]:
    """The ``Authorization`` header of a new connection."""
    return {"Authorization": f"Bearer {served.cli.connect(f'words-{next(_NAMES)}')}"}


def _post(served: Served, message: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    sent = {"Accept": _BOTH, "Content-Type": "application/json", **headers}
    return httpx.post(f"{served.url}/mcp", content=json.dumps(message).encode(), headers=sent, timeout=30)


def _begin(served: Served, auth: dict[str, str]) -> str:
    """A new session of the connection ``auth`` names, past its handshake; its id."""
    opened = _post(served, _INIT, auth)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    assert _post(served, INITIALIZED, {**auth, "Mcp-Session-Id": session}).status_code == 202
    return session


def _refusal(response: httpx.Response, status: int, code: int = -32600) -> str:
    """The message of ``response``: a JSON-RPC error with ``id: null`` at ``status``, in no one's
    words but the server's."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0", body
    assert body["id"] is None, body
    assert body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    for words in (*FOREIGN_WORDS, *SDK_WORDS):
        assert words not in message, message
    assert "notochord." not in message, message
    assert "/site-packages/" not in message, message
    return message


def _shown(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    """All a client can tell of ``response``, but the moment it was sent."""
    headers = {k: v for k, v in response.headers.items() if k.lower() != "date"}
    return response.status_code, headers, response.content


class TestAnUnknownSession:
    def test_a_session_never_begun_is_told_to_begin_one_with_initialize(self, served: Served) -> None:
        """404, -32600: the id names no session; initialize without the header begins one."""
        message = _refusal(_post(served, _LIST, {**_connect(served), "Mcp-Session-Id": "f" * 32}), 404)
        assert "initialize without the Mcp-Session-Id header" in message, message
        assert "Mcp-Session-Id" in message, message

    def test_a_session_ended_with_delete_answers_as_unknown_for_every_method(self, served: Served) -> None:
        """OD-K45: the session's run is over; a POST, a GET or another DELETE of it is told to begin
        a new session, with the same words."""
        auth = _connect(served)
        session = _begin(served, auth)
        ended = httpx.delete(f"{served.url}/mcp", headers={**auth, "Mcp-Session-Id": session}, timeout=30)
        assert ended.status_code == 200, ended.text
        with_id = {**auth, "Mcp-Session-Id": session}
        after = [
            _post(served, _LIST, with_id),
            httpx.get(f"{served.url}/mcp", headers={**with_id, "Accept": "text/event-stream"}, timeout=30),
            httpx.delete(f"{served.url}/mcp", headers=with_id, timeout=30),
        ]
        messages = {_refusal(response, 404) for response in after}
        assert len(messages) == 1, messages
        assert "initialize without the Mcp-Session-Id header" in messages.pop()

    def test_a_session_of_another_connection_cannot_be_told_from_an_unknown_one(self, served: Served) -> None:
        """K-CON-06: the answer to another connection's session id is the answer to an id no session
        ever had, byte for byte, headers included; the session itself goes on."""
        owner = _connect(served)
        session = _begin(served, owner)
        stranger = _connect(served)
        theirs = _post(served, _LIST, {**stranger, "Mcp-Session-Id": session})
        nobodys = _post(served, _LIST, {**stranger, "Mcp-Session-Id": "0" * 32})
        _refusal(theirs, 404)
        assert _shown(theirs) == _shown(nobodys)
        assert "mcp-session-id" not in theirs.headers
        assert _post(served, _LIST, {**owner, "Mcp-Session-Id": session}).status_code == 200

    def test_the_sdk_client_shows_the_servers_words_when_its_session_has_ended(self, served: Served) -> None:
        """The official client, whose session ended under it (as an idle one does), shows why and
        what to do rather than "Session terminated"."""
        auth = _connect(served)
        seen: list[str] = []

        async def remember(response: httpx2.Response) -> None:
            if "mcp-session-id" in response.headers:
                seen.append(response.headers["mcp-session-id"])

        async def go() -> MCPError | None:
            async with (
                httpx2.AsyncClient(headers=auth, timeout=30, event_hooks={"response": [remember]}) as http,
                streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                ended = httpx.delete(f"{served.url}/mcp", headers={**auth, "Mcp-Session-Id": seen[0]}, timeout=30)
                assert ended.status_code == 200, ended.text
                try:
                    await session.list_tools()
                except MCPError as error:
                    return error
            return None

        error = anyio.run(go)
        assert isinstance(error, MCPError), repr(error)
        assert error.error.code == -32600, error.error
        assert "initialize without the Mcp-Session-Id header" in error.error.message, error.error.message
        assert "Session terminated" not in error.error.message


class TestARequestWithoutItsSession:
    @pytest.mark.parametrize(
        ("method", "said"),
        [
            pytest.param("POST", "every request after initialize", id="post-tools-list"),
            pytest.param("GET", "a GET", id="get-stream"),
            pytest.param("DELETE", "a DELETE", id="delete"),
        ],
    )
    def test_it_is_told_to_begin_a_session_and_send_its_id(self, served: Served, method: str, said: str) -> None:
        """400, -32600: what needs the header, and how to get one."""
        auth = _connect(served)
        if method == "POST":
            response = _post(served, _LIST, auth)
        else:
            headers = {**auth, "Accept": "text/event-stream"}
            response = httpx.request(method, f"{served.url}/mcp", headers=headers, timeout=30)
        message = _refusal(response, 400)
        assert said in message, message
        assert "send initialize without it" in message, message
        assert "Mcp-Session-Id" in message, message
        assert "mcp-session-id" not in response.headers, "a refused request began no session to name"


class TestAnHttpMethodNotServed:
    @pytest.mark.parametrize("method", ["PUT", "PATCH", "OPTIONS"])
    @pytest.mark.parametrize("in_session", [False, True], ids=["no-session", "in-a-session"])
    def test_it_names_the_methods_mcp_takes_and_keeps_allow(
        self, served: Served, method: str, in_session: bool
    ) -> None:
        """405, -32600, ``Allow: GET, POST, DELETE`` (RFC 9110), with what each is for; within a
        session the answer keeps its ``Mcp-Session-Id``, and the session goes on."""
        auth = _connect(served)
        headers = {**auth, "Content-Type": "application/json", "Accept": _BOTH}
        session = _begin(served, auth) if in_session else None
        if session is not None:
            headers["Mcp-Session-Id"] = session
        response = httpx.request(method, f"{served.url}/mcp", headers=headers, content=b"{}", timeout=30)
        message = _refusal(response, 405)
        assert response.headers["allow"] == "GET, POST, DELETE"
        assert f"/mcp does not take {method} requests" in message, message
        for use in ("POST to send a JSON-RPC message", "GET to open", "DELETE to end a session"):
            assert use in message, message
        if session is not None:
            assert response.headers["mcp-session-id"] == session
            assert _post(served, _LIST, {**auth, "Mcp-Session-Id": session}).status_code == 200
        else:
            assert "mcp-session-id" not in response.headers, "a refused request began no session to name"

    def test_a_head_request_keeps_its_headers_and_has_no_body(self, served: Served) -> None:
        """HEAD is answered as the same request would be, bodiless: 405, ``Allow``, a JSON type."""
        response = httpx.head(f"{served.url}/mcp", headers=_connect(served), timeout=30)
        assert response.status_code == 405
        assert response.headers["allow"] == "GET, POST, DELETE"
        assert response.headers["content-type"].startswith("application/json")
        assert response.content == b""

    @pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
    def test_without_sessions_in_the_2026_protocol_only_post_is_taken_and_said_so(
        self, served: Served, method: str
    ) -> None:
        """The SDK answers these with an empty body; now a JSON-RPC error saying that only POST is
        taken, because the protocol named has no sessions, keeping ``Allow: POST``."""
        headers = {**_connect(served), **_MODERN, "Accept": "text/event-stream"}
        response = httpx.request(method, f"{served.url}/mcp", headers=headers, timeout=30)
        message = _refusal(response, 405)
        assert response.headers["allow"] == "POST"
        assert f"/mcp does not take {method} requests" in message, message
        assert "POST to send a JSON-RPC message" in message, message
        assert "has no sessions" in message, message


class TestAnAnswerTheClientWillNotAccept:
    def test_a_post_that_accepts_only_json_is_told_the_accept_header_to_send(self, served: Served) -> None:
        """406, -32600, keeping the session's ``Mcp-Session-Id``."""
        auth = _connect(served)
        session = _begin(served, auth)
        response = _post(served, _LIST, {**auth, "Mcp-Session-Id": session, "Accept": "application/json"})
        message = _refusal(response, 406)
        assert "Accept: application/json, text/event-stream" in message, message
        assert response.headers["mcp-session-id"] == session

    def test_a_get_that_does_not_accept_an_event_stream_is_told_so(self, served: Served) -> None:
        """406: a session's stream is an event stream."""
        auth = _connect(served)
        session = _begin(served, auth)
        headers = {**auth, "Mcp-Session-Id": session, "Accept": "application/json"}
        message = _refusal(httpx.get(f"{served.url}/mcp", headers=headers, timeout=30), 406)
        assert "Accept: text/event-stream" in message, message

    def test_in_the_2026_protocol_the_empty_406_becomes_a_json_rpc_error(self, served: Served) -> None:
        """The SDK answers with no body at all; the client is told which header to send."""
        response = _post(served, _LIST, {**_connect(served), **_MODERN, "Accept": "text/html"})
        message = _refusal(response, 406)
        assert "Accept: application/json, text/event-stream" in message, message


def test_a_second_stream_of_a_session_is_told_one_is_open_already(served: Served) -> None:
    """409, -32600, keeping ``Mcp-Session-Id``; the open stream stays open."""
    auth = _connect(served)
    session = _begin(served, auth)
    headers = {**auth, "Mcp-Session-Id": session, "Accept": "text/event-stream"}
    with (
        httpx.Client(timeout=30) as client,
        client.stream("GET", f"{served.url}/mcp", headers=headers) as first,
    ):
        assert first.status_code == 200
        second = client.get(f"{served.url}/mcp", headers=headers)
        message = _refusal(second, 409)
        assert second.headers["mcp-session-id"] == session
        assert "stream is open already" in message, message


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_body_past_the_limit_on_another_method_is_a_json_rpc_error(served: Served, method: str) -> None:
    """413 as for a POST (its plain-text "Request body too large" otherwise), and the session
    named goes on."""
    auth = _connect(served)
    session = _begin(served, auth)
    headers = {**auth, "Mcp-Session-Id": session, "Accept": "text/event-stream"}
    response = httpx.request(method, f"{served.url}/mcp", headers=headers, content=b"x" * (1024 * 1024 + 1))
    message = _refusal(response, 413)
    assert "at most 1048576 bytes" in message, message
    assert _post(served, _LIST, {**auth, "Mcp-Session-Id": session}).status_code == 200
