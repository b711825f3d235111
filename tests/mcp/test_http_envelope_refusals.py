"""A 2026-07-28 request whose envelope holds a value of the wrong form is told which key, named whole.

The envelope's keys are the protocol's own (``io.modelcontextprotocol/clientCapabilities`` and its
siblings), longer than the cut a client's own key names get in a refusal; a refusal that cut them
would name a key no client can find.
"""

from __future__ import annotations

import json

import httpx
import pytest
from mcp_harness import FOREIGN_WORDS, Served

_MODERN = "2026-07-28"
_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


@pytest.mark.parametrize("method", ["tools/list", "resources/list"])
def test_capabilities_that_are_no_object_are_named_by_their_whole_key(served: Served, method: str) -> None:
    """400, -32602, the request's id kept; nothing but the server's words."""
    secret = served.cli.connect(f"envelope-{method.replace('/', '-')}")
    meta = {"io.modelcontextprotocol/protocolVersion": _MODERN, _CAPABILITIES: "all of them"}
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Protocol-Version": _MODERN,
        "Mcp-Method": method,
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"_meta": meta}})
    response = httpx.post(f"{served.url}/mcp", content=body, headers=headers, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (response.json()["id"], error["code"]) == (5, -32602), error
    assert error["message"] == f"{method}: params._meta.{_CAPABILITIES} must be an object", error["message"]
    for words in FOREIGN_WORDS:
        assert words not in error["message"], error["message"]
