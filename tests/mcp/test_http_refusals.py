"""Every refusal ``/mcp`` gives before it reads a JSON-RPC message is a JSON-RPC error object.

A request from another site (403, its ``Origin``), under a host name that is not this server's
(421, DNS rebinding) or without a valid connection secret (401, with ``WWW-Authenticate: Bearer``)
is answered at that status with ``{"jsonrpc": "2.0", "id": null, "error": {...}}``, as the 413 and
415 answers are, so that the SDK's own client shows the server's words rather than "Server
returned an error response". What the refusal repeats of the request is cut short.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, Served, initialize_error

_NAMES = itertools.count(1)
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}


def _post(served: Served, headers: dict[str, str]) -> httpx.Response:
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers}
    return httpx.post(f"{served.url}/mcp", content=json.dumps(_INIT).encode(), headers=sent, timeout=30)


def _refusal(response: httpx.Response, status: int) -> str:
    """The message of ``response``, a JSON-RPC error with ``id: null`` at ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0", body
    assert body["id"] is None, body
    assert body["error"]["code"] == -32600, body
    message: str = body["error"]["message"]
    for words in FOREIGN_WORDS:
        assert words not in message, message
    return message


@pytest.mark.parametrize(
    ("headers", "status", "said"),
    [
        pytest.param({"Origin": "http://evil.example"}, 403, "origin http://evil.example", id="foreign-origin"),
        pytest.param({"Origin": "null"}, 403, "origin null", id="null-origin"),
        pytest.param({"Host": "evil.example"}, 421, "not reachable under that host name", id="rebound-host"),
    ],
)
def test_a_request_from_another_site_is_refused_with_a_json_rpc_error(
    served: Served, headers: dict[str, str], status: int, said: str
) -> None:
    """Host and Origin are checked before the secret, even a valid one: the status stays, the body
    is a JSON-RPC error in the server's words."""
    secret = served.cli.connect(f"site-{next(_NAMES)}")
    message = _refusal(_post(served, {"Authorization": f"Bearer {secret}", **headers}), status)
    assert said in message, message


@pytest.mark.parametrize("authorization", [None, "Bearer ncmcp_not-a-secret", "Basic dXNlcjpwYXNz"], ids=str)
def test_a_request_without_a_valid_secret_is_refused_with_a_json_rpc_error_and_a_bearer_challenge(
    served: Served, authorization: str | None
) -> None:
    """401 keeps ``WWW-Authenticate: Bearer`` (RFC 6750); the body says what to send."""
    response = _post(served, {} if authorization is None else {"Authorization": authorization})
    message = _refusal(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer"), response.headers
    assert "Authorization: Bearer" in message, message


def test_a_long_origin_is_repeated_cut_short(served: Served) -> None:
    """The refusal names the origin it refuses, but not ten thousand characters of it."""
    origin = "http://" + "o" * 10_000 + ".example"
    message = _refusal(_post(served, {"Origin": origin}), 403)
    assert f"origin {origin[:200]}… are refused" in message, message
    assert len(message) < 500, len(message)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        pytest.param({"Origin": "http://evil.example"}, "origin http://evil.example", id="foreign-origin"),
        pytest.param({"Host": "evil.example"}, "not reachable under that host name", id="rebound-host"),
        pytest.param({"Authorization": "Bearer ncmcp_wrong"}, "no valid connection secret", id="wrong-secret"),
    ],
)
def test_the_sdk_client_shows_the_servers_words_for_a_refusal_at_the_door(
    served: Served, extra: dict[str, str], said: str
) -> None:
    """The official client surfaces the JSON-RPC error of the refusal, not a bare HTTP failure."""
    headers: dict[str, Any] = {"Authorization": f"Bearer {served.cli.connect(f'sdk-{next(_NAMES)}')}", **extra}
    error = anyio.run(initialize_error, f"{served.url}/mcp", headers)
    assert isinstance(error, MCPError), repr(error)
    assert said in error.error.message, error.error.message
