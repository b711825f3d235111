"""Messages that are JSON but not what a message may be: lists and objects nested past what the
server reads, and a JSON-RPC batch (a list of messages), which MCP does not have.

Each is refused in the server's words, saying what is wrong with the message as sent (never that
valid JSON "is not JSON") and what to send instead; the connection goes on and nothing is written
(K-CHG-06). Over HTTP the same words answer the same bodies (one function words both transports).
"""

from __future__ import annotations

import json

from mcp_harness import FOREIGN_WORDS, Cli, exchange

_PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def _own_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message


def test_values_nested_past_what_the_server_reads_are_told_so_not_called_not_json(cli: Cli) -> None:
    """K-CHG-06: a request whose ``_meta`` nests lists thousands deep is valid JSON: the refusal says
    it is nested too deeply and to send it less deeply nested, and the connection answers the next
    request."""
    cli.connect("desk")
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"a": ' + "[" * 5000 + "]" * 5000 + "}}}"
    refused, pinged = exchange(cli.data_dir, [deep, json.dumps(_PING)])
    message = refused["error"]["message"]
    assert refused["error"]["code"] == -32700 and refused["id"] is None, refused
    assert "nested too deeply" in message and "not JSON" not in message, message
    assert "recursion" not in message, message
    _own_words(message)
    assert pinged == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


def test_a_batch_of_messages_is_told_to_send_each_message_on_its_own(cli: Cli) -> None:
    """A JSON list of requests (a JSON-RPC batch) is refused naming it a batch, which MCP does not
    take, and saying to send each message on its own; none of its requests is run."""
    cli.connect("desk", "facts.write:self:pref.food.*")
    put = {"name": "facts_put", "arguments": {"predicateHint": "pref.food.like", "value": "okra"}}
    batch = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": put}, _PING])
    refused, pinged = exchange(cli.data_dir, [batch, json.dumps(_PING)])
    message = refused["error"]["message"]
    assert refused["error"]["code"] == -32600 and refused["id"] is None, refused
    assert "batch" in message and "each message on its own" in message, message
    _own_words(message)
    assert pinged["result"] == {}
    assert cli.json("changes", "list", "--actor", "gem:desk") == []
