"""What a hostile or careless MCP client can send gets an answer in notochord's own words: a tool
error naming the argument and what to do, or a JSON-RPC error saying what a message must look
like; never "failed unexpectedly", and never pydantic's or Python's wording.

K-SRCH-06 (timeRange of ISO dates, a date alone the whole day), K-CHG-01/02 (``changes_list`` and
its ``since``), OD-K17 (values are JSON), K-CHG-06 (nothing is written unless the call succeeds).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_harness import Cli, Served, stdio_process

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
_NAMES = itertools.count(1)
FOREIGN_WORDS = ("ValidationError", "validation error", "pydantic", "input_value", "JSON compliant", "Input should")


def _call(i: int, name: str, arguments: str) -> str:
    """A ``tools/call`` line with ``arguments`` written as raw JSON text (NaN and lone surrogates too)."""
    return f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}'


def _exchange(data_dir: Path, lines: list[str]) -> dict[Any, dict[str, Any]]:
    """Send ``lines`` to ``notochord mcp serve --connection desk`` one at a time; the replies by id
    (a reply to a message that could not be read has id ``None``)."""
    replies: dict[Any, dict[str, Any]] = {}
    with stdio_process(data_dir) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        for line in [json.dumps(INIT), INITIALIZED, *lines]:
            process.stdin.write(line + "\n")
            process.stdin.flush()
            if '"notifications/' not in line:
                reply = json.loads(process.stdout.readline())
                replies.setdefault(reply["id"], reply)
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    return replies


def _tool_error(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    assert reply["result"]["isError"] is True, reply
    text: str = reply["result"]["content"][0]["text"]
    return text


def _no_foreign_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message


def test_nan_and_infinity_in_a_value_or_meta_are_refused_in_our_own_words(cli: Cli) -> None:
    """OD-K17: JSON has no NaN or Infinity; the refusal names the argument and writes nothing."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*", "collections.write:keep")
    replies = _exchange(
        cli.data_dir,
        [
            _call(1, "facts_put", '{"predicateHint":"pref.food.like","value":NaN}'),
            _call(2, "facts_put", '{"predicateHint":"pref.food.like","value":{"stars":-Infinity}}'),
            _call(3, "documents_upsert", '{"collection":"keep","key":"k","meta":{"rating":Infinity}}'),
        ],
    )
    for i, what in ((1, "value"), (2, "value"), (3, "meta")):
        message = _tool_error(replies[i])
        assert message.startswith(f"{what} holds NaN or Infinity"), message
        assert "send a finite number" in message
        _no_foreign_words(message)
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


def test_dates_at_the_ends_of_the_calendar_are_answered_not_failed(cli: Cli) -> None:
    """K-SRCH-06, K-CHG-02: the last day of the year 9999 is a whole day like any other (it has no
    next day to count back from); a moment outside the years 1 to 9999 once taken to UTC is a tool
    error naming it, not an unexpected failure."""
    cli.connect("desk", "collections.read:keep")
    replies = _exchange(
        cli.data_dir,
        [
            _call(1, "search", '{"timeRange":{"to":"9999-12-31T23:59:59Z"}}'),
            _call(2, "search", '{"timeRange":{"from":"9999-12-31T23:59:59-01:00"}}'),
            _call(3, "changes_list", '{"since":"0001-01-01T00:00:00+01:00"}'),
        ],
    )
    found = replies[1]["result"]
    assert found["isError"] is False, found
    assert [hit["title"] for hit in found["structuredContent"]["result"]] == ["Grandma's stew"]
    assert _tool_error(replies[2]) == (
        "timeRange.from '9999-12-31T23:59:59-01:00' falls outside the years 1 to 9999 once taken to UTC; "
        "choose a moment inside them"
    )
    assert _tool_error(replies[3]).startswith("since '0001-01-01T00:00:00+01:00' falls outside the years 1 to 9999")


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_a_date_alone_at_either_end_of_the_calendar_never_fails_unexpectedly(cli: Cli, day: str) -> None:
    """K-SRCH-06: whatever the local zone makes of the day, the answer is hits or a tool error."""
    cli.connect("desk", "collections.read:keep")
    replies = _exchange(cli.data_dir, [_call(1, "search", json.dumps({"timeRange": {"from": day, "to": day}}))])
    assert "result" in replies[1], replies[1]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            _call(1, "facts_put", '{"predicateHint":"pref.food.like","value":"\\ud800"}'),
            "the text is not JSON",
            id="lone-surrogate",
        ),
        pytest.param("[1, 2, 3]", '"jsonrpc": "2.0"', id="a-list"),
        pytest.param('{"jsonrpc":"1.0","id":1,"method":"tools/list"}', '"jsonrpc": "2.0"', id="old-version"),
        pytest.param('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}', "as an object", id="params-list"),
    ],
)
def test_a_line_that_is_not_json_rpc_is_told_what_a_message_must_be_over_stdio(
    cli: Cli, line: str, expected: str
) -> None:
    """Each unreadable line is a parse error (id null) in our words, and the session goes on."""
    cli.connect("desk")
    replies = _exchange(cli.data_dir, [line, '{"jsonrpc":"2.0","id":9,"method":"tools/list"}'])
    message = replies[None]["error"]["message"]
    assert message.startswith("not a JSON-RPC message: "), message
    assert expected in message
    _no_foreign_words(message)
    assert replies[9]["result"]["tools"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"\\ud800"}}',
            "the text is not JSON",
            id="lone-surrogate",
        ),
        pytest.param(b"[1, 2, 3]", '"jsonrpc": "2.0"', id="a-list"),
        pytest.param(b'"initialize"', '"jsonrpc": "2.0"', id="a-string"),
        pytest.param(b'{"jsonrpc":"1.0","id":1,"method":"initialize"}', '"jsonrpc": "2.0"', id="old-version"),
    ],
)
def test_a_body_that_is_not_json_rpc_is_told_what_a_message_must_be_over_http(
    served: Served, body: bytes, expected: str
) -> None:
    """The SDK's transport would send pydantic's report (model names, input values, links to its
    site) as the message; the client reads ours, with the SDK's status and code."""
    secret = served.cli.connect(f"raw-{next(_NAMES)}")
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {secret}",
    }
    answer = httpx.post(f"{served.url}/mcp", content=body, headers=headers, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-length"] == str(len(answer.content))
    error = answer.json()["error"]
    assert error["message"].startswith("not a JSON-RPC message: "), error
    assert expected in error["message"]
    _no_foreign_words(error["message"])
