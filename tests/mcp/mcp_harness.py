"""Fixtures of the MCP tests: a vault with some of the person's knowledge, the CLI on it,
and the SDK's own client over stdio (``notochord mcp serve``) and streamable HTTP (``notochord serve``).

Every process runs without an embedder (full-text search only) and without the background
embedding hand-off, so the tests are deterministic and light on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from starlette.applications import Starlette
from typer.testing import CliRunner

from notochord.cli import app
from notochord.mcp_server.http import McpMount

ENV = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false"}
JWT_SECRET = "mcp-tests-" + "s" * 32


@dataclass
class Cli:
    """``notochord --data-dir <data_dir> …`` in-process; fails the test on an unexpected exit code."""

    data_dir: Path

    def run(self, *args: str, code: int = 0) -> str:
        result = CliRunner().invoke(app, ["--data-dir", str(self.data_dir), *args], env=ENV)
        if result.exit_code != code:
            pytest.fail(f"notochord {' '.join(args)} exited {result.exit_code}, expected {code}\n{result.output}")
        return result.stdout

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.run(*args, "--json", code=code))

    def connect(self, name: str, *grants: str) -> str:
        """A new connection with ``grants`` switched on; returns its secret."""
        secret: str = self.json("mcp", "connect", name)["secretToShowOnce"]
        if grants:
            self.run("gem", "grant", name, *grants)
        return secret


def seeded(data_dir: Path) -> Cli:
    """A vault holding a food preference of the person and a keepsake document, written by the person."""
    cli = Cli(data_dir)
    cli.run("init")
    cli.run("facts", "put", "pref.food.like", "mushroom stew", "--pin")
    note = data_dir.parent / "grandma-stew.md"
    note.write_text("# Grandma's stew\n\nOnions first, then the mushrooms, slowly.\n", encoding="utf-8")
    cli.run("docs", "import", str(note), "--collection", "keep")
    return cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return seeded(tmp_path / "data")


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def answer(result: CallToolResult) -> Any:
    """The JSON answer of a successful call."""
    assert not result.is_error, text(result)
    return json.loads(text(result))


async def initialize_error(url: str, headers: dict[str, str]) -> MCPError | None:
    """What the SDK's client raises opening a session at ``url`` with ``headers`` (``None`` when it opens)."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        try:
            await session.initialize()
        except MCPError as error:
            return error
    return None


@contextlib.asynccontextmanager
async def stdio_session(data_dir: Path, connection: str) -> AsyncIterator[ClientSession]:
    """The SDK's client on ``notochord mcp serve --connection <connection>`` (a subprocess)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "notochord", "--data-dir", str(data_dir), "mcp", "serve", "--connection", connection],
        env={**os.environ, **ENV},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def stdio_process(data_dir: Path, connection: str = "desk") -> subprocess.Popen[str]:
    """``notochord mcp serve --connection CONNECTION`` on ``data_dir``, its stdin and stdout pipes of
    text lines, for tests that speak raw JSON-RPC to it (use it in a ``with``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), "mcp", "serve", "--connection", connection],
        env={**os.environ, **ENV},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Served:
    """A running ``notochord serve`` and the CLI on its vault."""

    url: str
    cli: Cli

    @contextlib.asynccontextmanager
    async def session(self, secret: str) -> AsyncIterator[ClientSession]:
        """The SDK's client over streamable HTTP at ``/mcp`` with ``secret`` as its bearer."""
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{self.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``notochord serve`` in a subprocess on a free port, over a seeded vault."""
    root = tmp_path_factory.mktemp("mcp-http")
    cli = seeded(root / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env.update(ENV, NOTOCHORD_JWT_SECRET=JWT_SECRET)
    port = free_port()
    log = root / "serve.log"
    command = [sys.executable, "-m", "notochord", "serve", "--port", str(port), "--data-dir", str(cli.data_dir)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "notochord serve did not start"
                time.sleep(0.1)
        yield Served(f"http://127.0.0.1:{port}", cli)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


FOREIGN_WORDS = (
    "ValidationError",
    "validation error",
    "pydantic",
    "input_value",
    "Input should",
    "Invalid request parameters",
    "Body must be",
    "float",
    "dict",
    "NoneType",
    "Traceback",
)
"""Words of the SDK, pydantic or Python that no message to a client may carry."""

PROTOCOL = "2025-06-18"
INIT_PARAMS = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def exchange(data_dir: Path, lines: list[str], connection: str = "desk") -> list[dict[str, Any]]:
    """Send ``lines`` to ``notochord mcp serve`` after the handshake, one at a time, each waiting for
    one reply (a line left unanswered fails the test instead of hanging it); the replies in order."""
    replies: list[dict[str, Any]] = []
    with stdio_process(data_dir, connection) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        out: queue.Queue[str] = queue.Queue()
        stdout = process.stdout

        def read() -> None:
            for line in stdout:
                out.put(line)

        threading.Thread(target=read, daemon=True).start()

        def send(line: str) -> None:
            assert process.stdin is not None
            process.stdin.write(line + "\n")
            process.stdin.flush()

        def reply_to(line: str) -> dict[str, Any]:
            try:
                found: dict[str, Any] = json.loads(out.get(timeout=30))
            except queue.Empty:
                process.kill()
                pytest.fail(f"no reply to {line}")
            return found

        first = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS})
        send(first)
        reply_to(first)
        send(json.dumps(INITIALIZED))
        for line in lines:
            send(line)
            replies.append(reply_to(line))
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    return replies


def one_message(response: httpx.Response) -> dict[str, Any]:
    """The one JSON-RPC message of a 200 ``response``, sent as JSON or as an event stream."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        found: dict[str, Any] = response.json()
        return found
    (data,) = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    message: dict[str, Any] = json.loads(data)
    return message


def mount_server(mount: McpMount) -> tuple[uvicorn.Server, int]:
    """A uvicorn server of ``/mcp`` alone, on a free port, its mount running for the server's life
    (not started: a test runs it in a thread or in its own event loop); the server and its port."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mount.running():
            yield

    port = free_port()
    app = Starlette(routes=[mount.route], lifespan=lifespan)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="on", ws="none", log_level="critical")
    return uvicorn.Server(config), port


@contextlib.asynccontextmanager
async def serving(mount: McpMount) -> AsyncIterator[str]:
    """:func:`mount_server` running in the caller's event loop for the ``async with``; its base URL.
    The test shares the server's loop, so it can reach into the mount while clients talk to it."""
    server, port = mount_server(mount)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        with anyio.fail_after(30):  # a guard against a server that never starts, not a measure
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
