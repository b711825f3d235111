"""Requests the server does not serve, or whose params do not fit their method, are refused in words
that say what to send, for every method, not only ``tools/call`` and ``resources/read``.

The SDK answers params of the wrong form with a bare "Invalid request parameters" naming neither
the field nor its form, a method it does not serve by repeating its name whole, and a method the
specification defines but this server does not serve (``logging/setLevel``,
``completion/complete``) as bad params rather than as unknown. A notification sent with an id is a
request of that name (JSON-RPC 2.0), which is unknown; the refusal says a notification has no id.
Nothing refused here writes anything (K-CHG-06), and the session goes on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, Cli, exchange, stdio_process


def _request(i: int, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def _no_foreign_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message
    assert "Input should" not in message, message


@pytest.mark.parametrize(
    ("method", "params", "said"),
    [
        pytest.param("tools/list", {"cursor": 5}, "tools/list: params.cursor must be a string", id="cursor"),
        pytest.param(
            "tools/call",
            {"name": "profile", "arguments": {}, "_meta": [1]},
            "tools/call: params._meta must be an object",
            id="meta-a-list",
        ),
        pytest.param(
            "tools/call",
            {"name": "profile", "arguments": {}, "_meta": {"progressToken": {"a": 1}}},
            "tools/call: params._meta.progressToken must be a string or a whole number",
            id="progress-token-an-object",
        ),
        pytest.param("ping", {"_meta": "x"}, "ping: params._meta must be an object", id="ping-meta"),
        pytest.param(
            "resources/list", {"cursor": ["a"]}, "resources/list: params.cursor must be a string", id="list-cursor"
        ),
    ],
)
def test_params_of_the_wrong_form_are_named_with_the_form_they_must_have(
    cli: Cli, method: str, params: Any, said: str
) -> None:
    """-32602 naming the field and its form; the next request is answered."""
    cli.connect("desk", "facts.read:self:pref.food.*")
    refused, listed = exchange(cli.data_dir, [_request(1, method, params), _request(2, "tools/list")])
    assert refused["id"] == 1, refused
    assert refused["error"]["code"] == -32602, refused
    assert refused["error"]["message"] == said, refused
    _no_foreign_words(refused["error"]["message"])
    assert listed["result"]["tools"], listed
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


@pytest.mark.parametrize(
    ("method", "params", "said"),
    [
        pytest.param("logging/setLevel", {"level": "loud"}, "unknown method 'logging/setLevel'", id="logging"),
        pytest.param("completion/complete", {}, "unknown method 'completion/complete'", id="completion"),
        pytest.param("drop/everything", None, "unknown method 'drop/everything'", id="made-up"),
        pytest.param(
            "notifications/initialized",
            None,
            "a notification is sent without an id",
            id="a-notification-with-an-id",
        ),
    ],
)
def test_a_method_this_server_does_not_serve_is_unknown_whatever_its_params(
    cli: Cli, method: str, params: Any, said: str
) -> None:
    """-32601 naming the methods it answers, even for a method of the specification whose params do
    not fit it."""
    cli.connect("desk")
    refused, listed = exchange(cli.data_dir, [_request(1, method, params), _request(2, "tools/list")])
    assert refused["id"] == 1, refused
    assert refused["error"]["code"] == -32601, refused
    message = refused["error"]["message"]
    assert said in message, message
    assert "tools/call" in message, message
    _no_foreign_words(message)
    assert listed["result"]["tools"], listed


def test_an_unknown_method_of_a_hundred_kilobytes_is_repeated_cut_short(cli: Cli) -> None:
    """The refusal and its data name the method, but not a hundred kilobytes of it."""
    cli.connect("desk")
    method = "m" * 100_000
    (refused,) = exchange(cli.data_dir, [_request(1, method)])
    assert refused["error"]["code"] == -32601, refused["error"]["code"]
    assert len(json.dumps(refused)) < 1000, len(json.dumps(refused))
    assert refused["error"]["message"].startswith("unknown method 'mmmm")
    assert refused["error"]["data"] == "m" * 60 + "…"


def test_a_request_before_the_handshake_is_told_to_begin_with_initialize(cli: Cli) -> None:
    """The SDK's bare "Invalid request parameters" for a request sent before ``initialize``."""
    cli.connect("desk")
    with stdio_process(cli.data_dir) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_request(1, "tools/list") + "\n")
        process.stdin.flush()
        early = json.loads(process.stdout.readline())
        process.stdin.write(_request(2, "initialize", INIT_PARAMS) + "\n")
        process.stdin.flush()
        opened = json.loads(process.stdout.readline())
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    assert early["id"] == 1, early
    message = early["error"]["message"]
    assert message == "tools/list before initialize: send initialize, then notifications/initialized, first"
    _no_foreign_words(message)
    assert opened["result"]["serverInfo"]["name"] == "notochord", opened
