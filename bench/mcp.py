"""The cost of MCP: one tool call over stdio and over streamable HTTP, beside the same ``ctx.knowledge`` call.

Builds a small vault (food preferences of the user), registers an assistant connection allowed to
read them, and times ``facts_lookup`` (a permission-checked read answering a few facts):

- in-process: the connection's ``ctx.knowledge.facts.lookup`` (what every MCP call ends in);
- stdio: the SDK's client on ``notochord mcp serve --connection bench`` (a subprocess);
- HTTP: the SDK's client on ``/mcp`` of ``notochord serve`` (a subprocess), with the bearer secret.

Prints calls per second, p50/p99 and each transport's ratio to the in-process call. Never asserts.

    python bench/mcp.py [--calls 200] [--facts 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would shadow the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import httpx2  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import notochord  # noqa: E402
from notochord.mcp_server.connections import Connections  # noqa: E402
from notochord.settings import Settings  # noqa: E402

ENV = {"NOTOCHORD_EMBEDDER": "none", "NOTOCHORD_INDEX_IN_BACKGROUND": "false", "NOTOCHORD_JWT_SECRET": "b" * 40}
CALL = ("facts_lookup", {"prefix": "pref.food"})


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _time(calls: int, fn: Callable[[], Awaitable[object]]) -> list[float]:
    await fn()  # warm-up: the first call opens the session's run
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


def _setup(data_dir: Path, facts: int) -> str:
    settings = Settings(data_dir=data_dir, index_in_background=False)
    with notochord.open(data_dir, settings, create=True, embedder=None) as nc:
        for i in range(facts):
            nc.personal.user.facts.put(predicate="pref.food.like", value=f"dish {i}")
        _, secret = Connections(nc.personal).connect("bench", permissions=["facts.read:self:pref.food.*"])
        nc.personal.gems.set_permission("bench", "facts.read:self:pref.food.*", True)
    return secret


async def _in_process(data_dir: Path, calls: int) -> list[float]:
    settings = Settings(data_dir=data_dir, index_in_background=False)
    with notochord.open(data_dir, settings, embedder=None) as nc:
        connections = Connections(nc.personal)
        installation = connections.installed("bench")
        knowledge = connections.knowledge("bench", "run-bench-in-process", installation=installation)
        return await _time(calls, lambda: knowledge.facts.lookup("self", "pref.food"))


async def _stdio(data_dir: Path, calls: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "notochord", "--data-dir", str(data_dir), "mcp", "serve", "--connection", "bench"],
        env={**os.environ, **ENV},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await _time(calls, lambda: session.call_tool(*CALL))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _http(data_dir: Path, secret: str, calls: int) -> list[float]:
    port = _free_port()
    command = [sys.executable, "-m", "notochord", "serve", "--port", str(port), "--data-dir", str(data_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")} | ENV
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise SystemExit("notochord serve did not start") from None
                    time.sleep(0.1)
            headers = {"Authorization": f"Bearer {secret}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await _time(calls, lambda: session.call_tool(*CALL))
        finally:
            process.terminate()
            process.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--facts", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="notochord-bench-mcp-") as tmp:
        data_dir = Path(tmp) / "data"
        secret = _setup(data_dir, args.facts)
        rows = [
            ("ctx.knowledge (in-process)", asyncio.run(_in_process(data_dir, args.calls))),
            ("MCP over stdio", asyncio.run(_stdio(data_dir, args.calls))),
            ("MCP over HTTP (/mcp)", asyncio.run(_http(data_dir, secret, args.calls))),
        ]
    base = rows[0][1]
    print(f"facts_lookup of {args.facts} facts, {args.calls} calls each")
    print(f"{'path':<28} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'p50 ratio':>10}")
    for name, samples in rows:
        rate = len(samples) / sum(samples)
        p50, p99 = _percentile(samples, 0.5), _percentile(samples, 0.99)
        ratio = p50 / _percentile(base, 0.5)
        print(f"{name:<28} {rate:>9.0f} {p50 * 1000:>8.2f} {p99 * 1000:>8.2f} {ratio:>9.1f}x")


if __name__ == "__main__":
    main()
