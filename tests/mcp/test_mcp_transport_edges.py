"""What a hostile or sloppy MCP client does at the edges of the transports: bytes that are not
UTF-8, a line far past any limit, a body that is too large or not declared JSON, a client that
closes stdin while its calls are still running, a session whose connection was removed.

Every refusal is a JSON-RPC error in notochord's own words that says what to do, the server
stays up for the next message, and a refused message writes nothing (K-CHG-06).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import ENV, FOREIGN_WORDS, INIT_PARAMS, INITIALIZED, PROTOCOL, Cli, Served, answer

_NAMES = itertools.count(1)
_INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}).encode()


def _no_foreign_words(message: str) -> None:
    for words in FOREIGN_WORDS:
        assert words not in message, message


def _put(i: int, value: str) -> bytes:
    arguments = {"predicateHint": "pref.food.like", "value": value}
    message = {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "facts_put", "arguments": arguments},
    }
    return json.dumps(message, ensure_ascii=False).encode()


class _Wire:
    """``notochord mcp serve --connection desk`` spoken to in raw bytes, past the handshake."""

    def __init__(self, data_dir: Path, connection: str = "desk") -> None:
        command = ["-m", "notochord", "--data-dir", str(data_dir), "mcp", "serve", "--connection", connection]
        self.process = subprocess.Popen(
            [sys.executable, *command],
            env={**os.environ, **ENV},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._out: queue.Queue[bytes] = queue.Queue()
        stdout = self.process.stdout
        assert stdout is not None

        def read() -> None:
            for line in stdout:
                self._out.put(line)

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        self.send(_INIT)
        self.reply()
        self.send(json.dumps(INITIALIZED).encode())

    def send(self, line: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(line + b"\n")
        stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            found: dict[str, Any] = json.loads(self._out.get(timeout=60))
        except queue.Empty:
            self.process.kill()
            pytest.fail("no reply from the server")
        return found

    def close(self) -> list[dict[str, Any]]:
        """Close stdin; the replies still to come, once the server has exited (with 0)."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.close()
        assert self.process.wait(timeout=60) == 0
        rest: list[dict[str, Any]] = []
        while True:
            try:
                rest.append(json.loads(self._out.get(timeout=5)))
            except queue.Empty:
                return rest

    def end(self) -> None:
        """Stop the server if it still runs and let go of its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def peak_kib(self) -> int:
        """The most memory the server has held so far (Linux's high-water mark of its resident set)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text(encoding="ascii")
        (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
        return int(line.split()[1])


@pytest.fixture
def wire(cli: Cli) -> Iterator[_Wire]:
    cli.connect("desk", "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")
    opened = _Wire(cli.data_dir)
    try:
        yield opened
    finally:
        opened.end()


def _values(cli: Cli) -> list[str]:
    return [f["value"] for f in cli.json("facts", "lookup", "self", "pref.food")]


# --- stdio --------------------------------------------------------------------------------------


def test_a_line_far_past_the_limit_is_refused_without_being_held_whole_over_stdio(cli: Cli, wire: _Wire) -> None:
    """K-CHG-06: a line of 48 MB is refused as over the message limit while the server's memory
    stays within a few megabytes of what it held before; nothing is written, and the next request
    is answered."""
    before = wire.peak_kib()
    wire.send(_put(1, "x" * 48_000_000))
    refused = wire.reply()
    grown = wire.peak_kib() - before
    wire.send(_put(2, "stew"))
    applied = wire.reply()
    wire.close()
    assert grown < 24 * 1024, f"the server grew by {grown} KiB reading one refused line"
    assert refused["id"] is None, refused
    assert refused["error"]["code"] == -32600, refused
    message = refused["error"]["message"]
    assert message.startswith("not a JSON-RPC message: a message may be at most 4194304 bytes"), message
    assert "send less in one message" in message
    _no_foreign_words(message)
    assert applied["id"] == 2 and applied["result"]["isError"] is False, applied
    assert "x" * 100 not in json.dumps(_values(cli))


def test_bytes_that_are_not_utf8_are_refused_not_replaced_over_stdio(cli: Cli, wire: _Wire) -> None:
    """K-CHG-06: a value with a Latin-1 byte is not stored with a replacement character in its
    place; the line is refused naming where the bytes stop being UTF-8, and the session goes on."""
    wire.send(_put(1, "café").replace("é".encode(), b"\xe9"))
    refused = wire.reply()
    wire.send(_put(2, "café"))
    applied = wire.reply()
    wire.close()
    assert refused["id"] is None, refused
    assert refused["error"]["code"] == -32700, refused
    message = refused["error"]["message"]
    assert message.startswith("not a JSON-RPC message: the text is not UTF-8 (byte 0xe9 at byte "), message
    assert "send the message as UTF-8" in message
    _no_foreign_words(message)
    assert applied["id"] == 2 and applied["result"]["isError"] is False, applied
    assert "\ufffd" not in "".join(_values(cli))
    assert "café" in _values(cli)


def test_line_and_paragraph_separators_and_carriage_returns_do_not_cut_a_message_over_stdio(
    cli: Cli, wire: _Wire
) -> None:
    """Only a line feed ends a message: U+2028, U+2029 and U+0085 inside a string are stored as
    written, and a carriage return between tokens (JSON whitespace) is part of the message."""
    value = "onions\u2028then\u2029mushrooms\x85slowly"
    wire.send(_put(1, value))
    first = wire.reply()
    wire.send(b'{"jsonrpc":"2.0",\r"id":2,\r"method":"tools/list"}\r')
    listed = wire.reply()
    wire.close()
    assert first["id"] == 1 and first["result"]["isError"] is False, first
    assert listed["id"] == 2, listed
    assert listed["result"]["tools"], listed
    assert value in _values(cli)


def test_calls_sent_before_stdin_closes_are_answered_and_whole(cli: Cli, wire: _Wire) -> None:
    """K-CHG-06, K-CHG-08: a client that writes its requests and closes stdin (a script piping
    into the server) gets every one answered before the server exits, each write applied whole
    and recorded in the session's run, rather than "connection closed" for work that may have
    been done."""
    for i in range(1, 4):
        wire.send(_put(i, f"dish {i}"))
    replies = {r["id"]: r for r in wire.close()}
    assert sorted(replies) == [1, 2, 3], replies
    for i in (1, 2, 3):
        assert replies[i]["result"]["isError"] is False, replies[i]
    assert {"dish 1", "dish 2", "dish 3"} <= set(_values(cli))
    changes = cli.json("changes", "list", "--actor", "gem:desk")
    (run,) = {c["runId"] for c in changes}
    record = cli.json("runs", "show", run)
    assert (record["status"], record["output"]) == ("succeeded", {"toolCalls": 3})


def test_a_session_whose_connection_was_removed_is_told_so_not_about_a_manifest(cli: Cli, wire: _Wire) -> None:
    """K-PERM-23: after ``mcp revoke --uninstall`` a stdio session still open is refused saying
    the connection is gone and how to make it again, and nothing is written."""
    wire.send(_put(1, "soup"))
    assert wire.reply()["result"]["isError"] is False
    cli.run("mcp", "revoke", "desk", "--uninstall")
    wire.send(_put(2, "pie"))
    refused = wire.reply()
    wire.close()
    assert refused["result"]["isError"] is True, refused
    message = refused["result"]["content"][0]["text"]
    assert "manifest" not in message, message
    assert message.startswith("refused: connection desk no longer exists"), message
    assert "notochord mcp connect desk" in message
    assert "pie" not in _values(cli)


# --- HTTP ---------------------------------------------------------------------------------------


def _headers(secret: str) -> dict[str, str]:
    return {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {secret}",
    }


def _opened(served: Served, secret: str) -> dict[str, str]:
    """The headers of a fresh session of ``secret``."""
    headers = _headers(secret)
    url = f"{served.url}/mcp"
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS})
    opened = httpx.post(url, content=body, headers=headers, timeout=30)
    assert opened.status_code == 200, opened.text
    headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": PROTOCOL}
    assert httpx.post(url, json=INITIALIZED, headers=headers, timeout=30).status_code == 202
    return headers


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "streamed"])
def test_a_body_over_the_limit_is_a_json_rpc_error_naming_the_limit_over_http(served: Served, declared: bool) -> None:
    """K-CHG-06: 413 with a JSON-RPC error saying how large a message may be, whether the client
    declared the length or streamed the body; nothing is written and the session goes on."""
    name = f"big-{next(_NAMES)}"
    headers = _opened(served, served.cli.connect(name, "facts.write:self:pref.food.*"))
    body = _put(1, "x" * (1024 * 1024 + 1))
    content: bytes | Iterator[bytes] = body if declared else iter([body[:1000], body[1000:]])
    refused = httpx.post(f"{served.url}/mcp", content=content, headers=headers, timeout=30)
    assert refused.status_code == 413, refused.text
    assert refused.headers["content-type"].startswith("application/json")
    error = refused.json()["error"]
    assert error["code"] == -32600, error
    assert error["message"].startswith("not a JSON-RPC message: a message may be at most 1048576 bytes"), error
    assert "send less in one message" in error["message"]
    listed = httpx.post(
        f"{served.url}/mcp", content=b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}', headers=headers, timeout=30
    )
    assert listed.status_code == 200, listed.text
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_not_declared_json_is_told_to_declare_it_over_http(served: Served, content_type: str | None) -> None:
    """K-CHG-06: 415 with a JSON-RPC error naming the header to send (what a web form or a
    careless client posts), in a session and when opening one; no session is opened and nothing
    is written."""
    name = f"typed-{next(_NAMES)}"
    secret = served.cli.connect(name, "facts.write:self:pref.food.*")
    for headers in (_headers(secret), _opened(served, secret)):
        headers.pop("Content-Type")
        if content_type is not None:
            headers["Content-Type"] = content_type
        refused = httpx.post(f"{served.url}/mcp", content=_put(1, "stew"), headers=headers, timeout=30)
        assert refused.status_code == 415, refused.text
        assert "mcp-session-id" not in refused.headers or "Mcp-Session-Id" in headers
        error = refused.json()["error"]
        assert error["code"] == -32600, error
        assert error["message"] == (
            "not a JSON-RPC message: send the message as JSON with the header Content-Type: application/json"
        ), error
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


def test_the_sdk_client_reads_an_oversized_call_as_an_error_in_our_words(served: Served) -> None:
    """The official client, sending arguments past the limit, gets an error that names the limit
    (not an HTTP failure it cannot read), and its next call in the same session is answered."""
    name = f"client-{next(_NAMES)}"
    secret = served.cli.connect(name, "facts.write:self:pref.food.*", "facts.read:self:pref.food.*")

    async def go() -> tuple[BaseException | None, Any]:
        async with served.session(secret) as s:
            try:
                await s.call_tool("facts_put", {"predicateHint": "pref.food.like", "value": "x" * (1024 * 1024)})
                failed = None
            except Exception as error:  # whatever the client raises, its words are checked below
                failed = error
            return failed, await s.call_tool("facts_lookup", {"prefix": "pref.food"})

    failed, after = anyio.run(go)
    assert isinstance(failed, MCPError), repr(failed)
    assert "a message may be at most 1048576 bytes" in str(failed), str(failed)
    assert [f["value"] for f in answer(after)] == ["mushroom stew"]
    assert served.cli.json("changes", "list", "--actor", f"gem:{name}") == []


def test_a_client_that_hangs_up_mid_call_leaves_the_write_whole_and_the_server_exits_cleanly(cli: Cli) -> None:
    """K-CHG-06, K-CHG-08: a client that closes both its pipes while a write runs (the app quit)
    leaves that write whole or absent, never half; the server exits with 0 rather than a traceback
    for the answer it can no longer send, and the session's run is finished, not left running."""
    cli.connect("desk", "collections.write:keep")
    body = "Onions first, then the mushrooms, slowly. " * 20_000
    command = ["-m", "notochord", "--data-dir", str(cli.data_dir), "mcp", "serve", "--connection", "desk"]
    process = subprocess.Popen(
        [sys.executable, *command],
        env={**os.environ, **ENV},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write(_INIT + b"\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 0
    arguments = {"collection": "keep", "key": "stew", "title": "Stew", "body": body}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "documents_upsert", "arguments": arguments},
    }
    process.stdin.write(json.dumps(INITIALIZED).encode() + b"\n" + json.dumps(call).encode() + b"\n")
    process.stdin.flush()
    process.stdout.close()
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    said = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    assert "Traceback" not in said, said
    assert "BrokenPipeError" not in said, said
    (run,) = [r for r in cli.json("runs", "list") if r["gem"] == "desk"]
    assert run["status"] == "succeeded", run
    changes = cli.json("changes", "list", "--actor", "gem:desk")
    assert [c["op"] for c in changes] in ([], ["documents.create"]), changes
    if changes:
        assert cli.json("docs", "show", str(changes[0]["targetId"]))["body"] == body


def test_another_connections_session_id_reaches_nothing_and_cannot_end_the_session(served: Served) -> None:
    """K-CON-06: a session id is worth nothing with another connection's secret: posting, opening
    its stream or ending it are all answered as for an unknown session, and the owner's session
    goes on as before."""
    owner = served.cli.connect(f"owner-{next(_NAMES)}", "facts.read:self:pref.food.*")
    intruder = served.cli.connect(f"intruder-{next(_NAMES)}", "facts.read:self:pref.food.*")
    headers = _opened(served, owner)
    borrowed = {**headers, "Authorization": f"Bearer {intruder}"}
    url = f"{served.url}/mcp"
    lookup = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "facts_lookup"}})
    answers = [
        httpx.post(url, content=lookup, headers=borrowed, timeout=30),
        httpx.get(url, headers=borrowed, timeout=30),
        httpx.delete(url, headers=borrowed, timeout=30),
    ]
    for refused in answers:
        assert refused.status_code == 404, refused.text
        assert "mushroom stew" not in refused.text
    still = httpx.post(url, content=lookup, headers=headers, timeout=30)
    assert still.status_code == 200, still.text
    assert "mushroom stew" in still.text
