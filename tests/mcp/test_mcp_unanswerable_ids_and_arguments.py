"""A request whose id cannot be answered, and ``tools/call`` arguments that are not an object, get a
JSON-RPC error in notochord's own words over both transports, never silence or the SDK's bare
"Invalid request parameters".

JSON-RPC 2.0 lets an id be a string, a number or null, and MCP narrows that to a string or an
integer. The SDK reads a message whose id is anything else (a fraction, null, true, a list, an
object) as a notification and never answers, so a client waits forever for its reply. Such a
message is a request all the same (JSON-RPC: only a message without an ``id`` member is a
notification), so it is answered: -32600 Invalid Request with ``id: null`` (the id cannot be
echoed), over HTTP with status 400. ``id: null`` is refused the same way rather than run: MCP
forbids it, and its reply could not be told apart from the reply to a message that was not
understood at all.

K-CHG-06: none of these calls writes anything.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from mcp_harness import FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, PROTOCOL, Cli, Served, exchange

_NAMES = itertools.count(1)

BAD_IDS = [
    pytest.param("1.5", "1.5", id="fraction"),
    pytest.param("1.0", "1.0", id="integer-written-as-a-fraction"),
    pytest.param("null", "null", id="null"),
    pytest.param('{"n": 1}', '{"n": 1}', id="object"),
    pytest.param("[1]", "[1]", id="list"),
    pytest.param("true", "true", id="boolean"),
]
"""``(the id as the client writes it, as the refusal names it)``."""

NOT_OBJECTS = [
    pytest.param('["pref.food.like", "stew"]', "a list", id="a-list"),
    pytest.param('"pref.food.like"', "a string", id="a-string"),
    pytest.param("7", "a number", id="a-number"),
    pytest.param("true", "true or false", id="a-boolean"),
]
"""``(arguments as the client writes them, how the refusal names what they are)``."""


def _request(raw_id: str, method: str, params: dict[str, Any] | None = None) -> str:
    """A request line with its id written as raw JSON text."""
    tail = f',"params":{json.dumps(params)}' if params is not None else ""
    return f'{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}"{tail}}}'


def _put_with_arguments(i: int, arguments: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"facts_put","arguments":{arguments}}}}}'


def _no_foreign_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message


def _unanswerable(reply: dict[str, Any], shown: str) -> None:
    """``reply`` is the refusal of a request whose id is ``shown``."""
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] is None, reply
    error = reply["error"]
    assert error["code"] == -32600, error
    message = error["message"]
    assert f"not {shown};" in message, message
    assert "must be a string or an integer" in message
    _no_foreign_words(message)


def _not_an_object(reply: dict[str, Any], kind: str) -> None:
    error = reply["error"]
    assert error["code"] == -32602, error
    message = error["message"]
    assert message.startswith("facts_put: arguments must be an object of the tool's parameters by name"), message
    assert "predicateHint" in message
    assert message.endswith(f"not {kind}")
    _no_foreign_words(message)


# --- stdio --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw_id", "shown"), BAD_IDS)
def test_a_request_whose_id_cannot_be_answered_is_refused_over_stdio_and_the_session_goes_on(
    cli: Cli, raw_id: str, shown: str
) -> None:
    """K-CHG-06: the refusal names the id and says what an id may be; the put is not run, and the
    next request is answered as usual."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    put = _request(raw_id, "tools/call", {"name": "facts_put", "arguments": {"predicateHint": "pref.food.like"}})
    refused, listed = exchange(cli.data_dir, [put, _request("9", "tools/list")])
    _unanswerable(refused, shown)
    assert listed["id"] == 9
    assert listed["result"]["tools"]
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


@pytest.mark.parametrize(("arguments", "kind"), NOT_OBJECTS)
def test_tool_arguments_that_are_not_an_object_are_told_so_over_stdio(cli: Cli, arguments: str, kind: str) -> None:
    """K-CHG-06: the refusal says arguments must be an object and names the tool's parameters."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    (reply,) = exchange(cli.data_dir, [_put_with_arguments(1, arguments)])
    assert reply["id"] == 1
    _not_an_object(reply, kind)
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


# --- HTTP ---------------------------------------------------------------------------------------


class _RawSession:
    """One MCP session over ``/mcp`` spoken with bare HTTP requests, so any body can be sent."""

    def __init__(self, served: Served, name: str, *grants: str) -> None:
        self.url = f"{served.url}/mcp"
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {served.cli.connect(name, *grants)}",
        }

    def post(self, body: str) -> httpx.Response:
        return httpx.post(self.url, content=body.encode(), headers=self.headers, timeout=30)

    def open(self) -> None:
        opened = self.post(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}))
        assert opened.status_code == 200, opened.text
        self.headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": PROTOCOL}
        assert self.post(json.dumps(INITIALIZED)).status_code == 202

    @staticmethod
    def reply(answer: httpx.Response) -> dict[str, Any]:
        """The one JSON-RPC message of an answer, sent as JSON or as a server-sent event."""
        if answer.headers["content-type"].startswith("text/event-stream"):
            data = [line.removeprefix("data:").strip() for line in answer.text.splitlines() if line.startswith("data:")]
            (message,) = [json.loads(d) for d in data if d]
            found: dict[str, Any] = message
            return found
        whole: dict[str, Any] = answer.json()
        return whole


@pytest.mark.parametrize(("raw_id", "shown"), BAD_IDS)
def test_an_opening_request_whose_id_cannot_be_answered_gets_a_400_and_no_session(
    served: Served, raw_id: str, shown: str
) -> None:
    """Instead of a 202 and silence: the refusal in our words, and no session was opened for it."""
    raw = _RawSession(served, f"ids-{next(_NAMES)}")
    answer = raw.post(_request(raw_id, "initialize", INIT_PARAMS))
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in answer.headers
    _unanswerable(answer.json(), shown)


@pytest.mark.parametrize(("raw_id", "shown"), BAD_IDS)
def test_a_request_in_a_session_whose_id_cannot_be_answered_gets_a_400_and_writes_nothing(
    served: Served, raw_id: str, shown: str
) -> None:
    """K-CHG-06: the put is not run and the session goes on."""
    name = f"ids-{next(_NAMES)}"
    raw = _RawSession(served, name, "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    raw.open()
    arguments = {"predicateHint": "pref.food.like", "value": "stew"}
    answer = raw.post(_request(raw_id, "tools/call", {"name": "facts_put", "arguments": arguments}))
    assert answer.status_code == 400, answer.text
    _unanswerable(answer.json(), shown)
    listed = raw.post(_request("2", "tools/list"))
    assert listed.status_code == 200, listed.text
    assert raw.reply(listed)["result"]["tools"]
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


def test_a_stateless_request_whose_id_cannot_be_answered_gets_the_same_refusal(served: Served) -> None:
    """The 2026-07-28 protocol, which has no sessions, is answered in the same words."""
    raw = _RawSession(served, f"ids-{next(_NAMES)}")
    raw.headers |= {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    answer = raw.post(_request("1.5", "tools/list"))
    assert answer.status_code == 400, answer.text
    _unanswerable(answer.json(), "1.5")


@pytest.mark.parametrize(("arguments", "kind"), NOT_OBJECTS)
def test_tool_arguments_that_are_not_an_object_are_told_so_over_http(served: Served, arguments: str, kind: str) -> None:
    """K-CHG-06: a protocol error naming what arguments must be, and nothing is written."""
    name = f"args-{next(_NAMES)}"
    raw = _RawSession(served, name, "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    raw.open()
    reply = raw.reply(raw.post(_put_with_arguments(1, arguments)))
    assert reply["id"] == 1
    _not_an_object(reply, kind)
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


@pytest.mark.parametrize(
    ("params", "kind"),
    [
        pytest.param('{"name": 7, "arguments": {}}', "a number", id="a-number"),
        pytest.param('{"name": ["facts_put"]}', "a list", id="a-list"),
        pytest.param('{"name": {"tool": "facts_put"}}', "an object", id="an-object"),
        pytest.param('{"name": null}', "nothing", id="null"),
        pytest.param('{"arguments": {}}', "nothing", id="missing"),
    ],
)
def test_a_tool_call_whose_name_is_not_a_string_is_told_so_over_stdio(cli: Cli, params: str, kind: str) -> None:
    """K-CHG-06: the refusal says the name must be a tool's name and lists the tools; nothing runs."""
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    (reply,) = exchange(cli.data_dir, [f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}'])
    assert reply["id"] == 1
    error = reply["error"]
    assert error["code"] == -32602, error
    message = error["message"]
    assert message.startswith("tools/call needs the name of a tool as a string"), message
    assert "facts_put" in message
    assert message.endswith(f"not {kind}"), message
    _no_foreign_words(message)
    assert cli.json("changes", "list", "--actor", "gem:desk") == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        pytest.param(
            '{"jsonrpc": "2.0", "id": 1,',
            "the text is not JSON (EOF while parsing a value at line 1 column 27)",
            id="cut",
        ),
        pytest.param("[1, 2]", "not a JSON-RPC message: send one JSON object", id="a-list"),
        pytest.param('{"hello": "world"}', "not a JSON-RPC message: send one JSON object", id="no-method"),
    ],
)
def test_a_stateless_body_that_is_not_one_request_is_told_so_in_own_words(served: Served, body: str, said: str) -> None:
    """The 2026-07-28 protocol answers a body that is not one JSON-RPC request in the words of the
    session protocol and of stdio, not in the SDK's."""
    raw = _RawSession(served, f"bodies-{next(_NAMES)}")
    raw.headers |= {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    answer = raw.post(body)
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert said in message, message
    _no_foreign_words(message)
    assert "Parse error" not in message


def test_a_body_cut_short_in_a_session_is_told_where_like_a_stateless_one(served: Served) -> None:
    """Both protocols name where the JSON stops, in the same words."""
    raw = _RawSession(served, f"bodies-{next(_NAMES)}")
    raw.open()
    answer = raw.post('{"jsonrpc": "2.0", "id": 1,')
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message == (
        "not a JSON-RPC message: the text is not JSON (EOF while parsing a value at line 1 column 27)"
    ), message
