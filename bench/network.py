"""The cost of the network guard: requests through ``GuardedClient`` next to plain ``httpx``.

Run from the repository root (``make bench`` should run it next to ``writes.py``)::

    python bench/network.py                              # 600 requests, 8 at a time, 3 rounds
    python bench/network.py --requests 500 --concurrency 4 --rounds 1

A small HTTP/1.1 server with keep-alive answers ``GET /`` with 64 bytes on 127.0.0.1; it runs on its
own event loop in its own thread, so serving does not compete with the clients' loop. Nothing leaves
the machine. The same number of requests with the same concurrency is sent, in the same process,
by:

- **httpx**: one ``httpx.AsyncClient(trust_env=False)``, the baseline: parse, pool, send, read.
- **guarded (IP)**: one :class:`~notochord.net.transport.GuardedClient` to ``http://127.0.0.1:<port>/``.
  Per request it checks the URL, runs the policy (a gem with ``allowLocalNetwork`` and the user's
  local entry ``127.0.0.1:<port>``), pins the address, reads the body with its size bound and the
  whole exchange under a timeout, and follows no redirect since there is none.
- **guarded (name)**: the same to ``http://localhost:<port>/``, so the name is "resolved" on every
  request (the system resolver answers ``localhost`` itself, without a lookup) and every address is
  checked.

Rounds alternate the three so that drift of the machine hits each alike; the figures are the median
over rounds. Printed: requests per second, latency p50 and p99 of one request, and the ratio guarded /
httpx (for requests per second a ratio below 1 means the guard is slower; for latencies above 1).
It prints; it never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

import httpx  # noqa: E402

from notochord.net.hosts import NetworkPermission  # noqa: E402
from notochord.net.policy import NetworkPolicy, UserNetworkRules  # noqa: E402
from notochord.net.transport import GuardedClient  # noqa: E402

BODY = b"x" * 64
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
    + str(len(BODY)).encode()
    + b"\r\nConnection: keep-alive\r\n\r\n"
    + BODY
)


class LocalServer:
    """A keep-alive HTTP/1.1 server on 127.0.0.1 answering every request with :data:`RESPONSE`."""

    def __init__(self) -> None:
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        self._ready.wait(timeout=10)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=512)
        self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        async with server:
            await self._stop.wait()

    @staticmethod
    async def _connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip() or b"0")
                if length:
                    await reader.readexactly(length)
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


@dataclass(frozen=True)
class Round:
    rate: float
    p50: float
    p99: float


Send = Callable[[], Awaitable[int]]


async def measure(send: Send, *, requests: int, concurrency: int) -> Round:
    """Send ``requests`` requests, ``concurrency`` at a time; time each and the whole."""
    latencies: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            status = await send()
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise RuntimeError(f"the local server answered {status}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return Round(
        rate=len(ordered) / wall,
        p50=ordered[len(ordered) // 2],
        p99=ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    )


def local_policy(port: int) -> NetworkPolicy:
    """A gem that may reach the local network, and a user who listed this one server."""
    permission = NetworkPermission(hosts=(), allow_local_network=True, reason="bench")
    rules = UserNetworkRules.build(local_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"])
    return NetworkPolicy(permission=permission, user_rules=rules)


async def run(requests: int, concurrency: int, rounds: int, warmup: int) -> dict[str, list[Round]]:
    results: dict[str, list[Round]] = {"httpx": [], "guarded (IP)": [], "guarded (name)": []}
    with LocalServer() as server:
        ip_url = f"http://127.0.0.1:{server.port}/"
        name_url = f"http://localhost:{server.port}/"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with (
            httpx.AsyncClient(trust_env=False, limits=limits) as plain,
            GuardedClient(policy=local_policy(server.port)) as guarded,
        ):

            async def plain_get() -> int:
                return (await plain.get(ip_url)).status_code

            async def guarded_ip() -> int:
                return (await guarded.get(ip_url)).status

            async def guarded_name() -> int:
                return (await guarded.get(name_url)).status

            senders: dict[str, Send] = {
                "httpx": plain_get,
                "guarded (IP)": guarded_ip,
                "guarded (name)": guarded_name,
            }
            for send in senders.values():
                await measure(send, requests=warmup, concurrency=concurrency)
            for _ in range(rounds):
                for label, send in senders.items():
                    results[label].append(await measure(send, requests=requests, concurrency=concurrency))
    return results


def report(results: dict[str, list[Round]], *, requests: int, concurrency: int, rounds: int) -> None:
    def median(label: str, pick: Callable[[Round], float]) -> float:
        return statistics.median(pick(r) for r in results[label])

    base_rate = median("httpx", lambda r: r.rate)
    base_p50 = median("httpx", lambda r: r.p50)
    base_p99 = median("httpx", lambda r: r.p99)
    print(f"{requests} requests, {concurrency} at a time, median of {rounds} round(s), server on 127.0.0.1")
    print(f"{'client':<16} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9}   {'ratio req/s':>11} {'p50':>7} {'p99':>7}")
    for label in results:
        rate = median(label, lambda r: r.rate)
        p50 = median(label, lambda r: r.p50)
        p99 = median(label, lambda r: r.p99)
        print(
            f"{label:<16} {rate:>9.0f} {p50 * 1000:>9.2f} {p99 * 1000:>9.2f}   "
            f"{rate / base_rate:>10.2f}x {p50 / base_p50:>6.2f}x {p99 / base_p99:>6.2f}x"
        )
    print("ratios are guarded / httpx: req/s below 1 and latencies above 1 are the cost of the guard")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=600, help="requests per client per round")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the clients")
    parser.add_argument("--warmup", type=int, default=50, help="untimed requests per client first")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--requests, --concurrency and --rounds must be at least 1, --warmup at least 0")
    results = asyncio.run(run(args.requests, args.concurrency, args.rounds, args.warmup))
    report(results, requests=args.requests, concurrency=args.concurrency, rounds=args.rounds)


if __name__ == "__main__":
    main()
