"""``/mcp`` takes one ``Authorization`` header: a request sending two is refused, whichever comes first.

Readers of a repeated header disagree (one takes the first, another the last, a proxy may join
them), so which connection is asking must not depend on the order: a request naming two is
refused with 401, a JSON-RPC error with ``id: null`` in the server's words, and nothing it asked
for is done. The REST service answers the same request the same way (KB-GEN-03, applied to the
MCP endpoint, which the catalogue does not cover).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, PROTOCOL, Served, one_message

_NAMES = itertools.count(1)
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
_PUT = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "facts_put", "arguments": {"predicateHint": "pref.food.like", "value": "twice-told soup"}},
}
_SENT = [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")]

Headers = list[tuple[str, str]]


def _post(served: Served, body: dict[str, Any], headers: Headers) -> httpx.Response:
    return httpx.post(f"{served.url}/mcp", content=json.dumps(body).encode(), headers=[*_SENT, *headers], timeout=30)


def _refused_for_two(response: httpx.Response) -> None:
    """``response`` is the 401 refusing two ``Authorization`` headers, as a JSON-RPC error."""
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer"), response.headers
    assert "mcp-session-id" not in response.headers
    body = response.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32600), body
    message: str = body["error"]["message"]
    assert message.startswith("refused: the Authorization header is sent 2 times"), message
    assert "send one header: Authorization: Bearer SECRET" in message, message
    for words in FOREIGN_WORDS:
        assert words not in message, message


def _orders(secret: str) -> list[Headers]:
    valid, junk = ("Authorization", f"Bearer {secret}"), ("Authorization", "Bearer ncmcp_not-a-secret")
    return [[valid, junk], [junk, valid], [valid, valid]]


@pytest.mark.parametrize("order", ["valid-first", "valid-last", "valid-twice"])
def test_initialize_with_two_authorization_headers_is_refused_and_opens_no_session(served: Served, order: str) -> None:
    """Neither the first header nor the last decides: even the same valid secret twice is refused."""
    secret = served.cli.connect(f"twice-{next(_NAMES)}")
    headers = dict(zip(["valid-first", "valid-last", "valid-twice"], _orders(secret), strict=True))[order]
    _refused_for_two(_post(served, _INIT, headers))


def test_a_call_with_two_authorization_headers_in_an_open_session_is_refused_and_writes_nothing(
    served: Served,
) -> None:
    """A session opened with one valid secret: a write sent with that secret and a second header, in
    either order, is refused and leaves no change; the same write with one header is applied."""
    name = f"twice-{next(_NAMES)}"
    secret = served.cli.connect(name, "facts.write:self:pref.food.*")
    one = [("Authorization", f"Bearer {secret}")]
    opened = _post(served, _INIT, one)
    assert one_message(opened)["result"]["protocolVersion"] == PROTOCOL
    session = [("Mcp-Session-Id", opened.headers["mcp-session-id"]), ("Mcp-Protocol-Version", PROTOCOL)]
    assert _post(served, INITIALIZED, [*one, *session]).status_code == 202
    for headers in _orders(secret):
        _refused_for_two(_post(served, _PUT, [*headers, *session]))
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []
    assert one_message(_post(served, _PUT, [*one, *session]))["result"]["isError"] is False
    assert len(served.cli.json("changes", "list", "--actor", f"gem:{name}")) == 1
