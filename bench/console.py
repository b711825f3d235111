"""Server time of every console page over a vault of 10,000 documents and 1,000 changes.

Run from the repository root (``make bench`` runs the default)::

    python bench/console.py                        # 10,000 documents, 1,000 changes, 30 requests a page
    python bench/console.py --documents 2000 --changes 200 --requests 10    # a quick look

The budget: every page renders in under 100 ms of server time with 10,000 documents and
1,000 changes. The data directory is made afresh in a temporary folder, without an embedder (full
text only, as ``NOTOCHORD_EMBEDDER=none``):

- ``--documents`` generated notes (fixed seed, about 60 words each, English with some Chinese) in
  five collections of the user's and in the diary (dated entries), written through
  ``space.user.documents.upsert`` in shared transactions of 500 (as the loader of ``writes.py``:
  every upsert runs all its checks and records its change, the writes commit together);
- (every upsert is a change of its own, so the vault holds ``--documents`` more changes than
  asked for below: "View changes" is timed over more than the budget's 1,000);
- ``--changes`` changes by the user under ten run ids (so "View changes" and its run filter have
  pages to show): a tenth are foods the user likes (listed on the recipes gem's page), the rest
  create 100 contacts and record where they work; the weather, recipes and contacts example gems
  are installed, and a small gem that records a fact and writes a file into a conversation folder
  runs three times for real.

Each page of :data:`PAGES` (add a page with one line) is then requested ``--requests`` times in
turn, after two warm-up requests, through the console's ASGI app (``httpx.ASGITransport``,
signed in, no network): the time is the server's work plus the in-process client, and the
**baseline** is a trivial route added to the same app, which pays the same front door (Host and
session checks, the CSRF dependency) and nothing else. Printed per page: p50 and p95 in ms, the
ratio of p50 to the baseline's, and whether p95 is within the 100 ms budget. It never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import httpx
from rich.console import Console
from rich.table import Table

import notochord
from notochord.console import create_console
from notochord.console.auth import ConsoleKeys
from notochord.settings import Settings

console = Console()
BUDGET_MS = 100.0
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

PAGES: list[tuple[str, str]] = [
    ("gems", "/gems"),
    ("gem page", "/gems/recipes"),
    ("gem page with runs", "/gems/noter"),
    ("uninstall dialog", "/gems/recipes/uninstall"),
    ("view changes", "/changes"),
    ("view changes, page 10", "/changes?page=10"),
    ("view changes of a run", "/changes?run=run-bench-3"),
    ("gem studio", "/studio"),
    ("search, two words", "/search?q=river+garden"),
    ("search, Chinese", "/search?q=%E5%B7%A5%E4%BD%9C"),
    ("search, empty query in a collection", "/search?collection={collection}"),
    ("search, a date range", "/search?q=garden&from=2025-03-01&to=2025-03-31"),
    ("runs", "/runs"),
    ("a run", "/runs/{run}"),
    ("network access", "/settings/network"),
    ("knowledge: collections tree", "/knowledge"),
    ("knowledge: a collection", "/knowledge/collections/{collection}"),
    ("knowledge: a document", "/knowledge/documents/{document}"),
    ("knowledge: entities", "/knowledge/entities"),
    ("knowledge: a person", "/knowledge/entities/{person}"),
    ("knowledge: contacts", "/knowledge/contacts"),
]
"""The pages timed, as ``(name, path)``; ``{collection}``, ``{run}``, ``{document}`` and ``{person}``
are filled from the data."""

_WORDS = [
    *("river", "garden", "morning", "coffee", "meeting", "project", "deadline", "travel", "train", "station"),
    *("market", "bread", "soup", "friend", "family", "weekend", "summer", "winter", "rain", "walk", "museum"),
    *("book", "music", "letter", "doctor", "school", "office", "kitchen", "recipe", "tomato", "onion"),
    *("garlic", "bicycle", "mountain", "lake", "harbour", "bridge", "city", "street", "window"),
]
_ZH = [
    "工作",
    "会议",
    "周末",
    "朋友",
    "家人",
    "旅行",
    "火车",
    "市场",
    "面包",
    "汤",
    "早上",
    "咖啡",
    "公园",
    "书",
    "音乐",
]
_T = TypeVar("_T")

_TOOL = """
async def run(input, ctx):
    await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value=input.get("food", "soup"))
    await ctx.files.write("workspace:notes/food.md", "# " + input.get("food", "soup") + "\\n")
    return {"noted": True}
"""


def batched(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _note(rng: random.Random, n: int) -> tuple[str, str]:
    words = [rng.choice(_WORDS) for _ in range(60)]
    if n % 5 == 0:
        words += rng.sample(_ZH, 4)
    return f"Note {n}: {' '.join(words[:3])}", " ".join(words) + "."


def _noter(root: Path) -> Path:
    folder = root / "noter"
    folder.mkdir()
    (folder / "note.py").write_text(_TOOL, encoding="utf-8")
    manifest = {
        "id": "noter",
        "name": "noter",
        "version": "1.0.0",
        "permissions": {
            "knowledge": {
                "permissions": ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"],
                "reason": "Remember what you like",
            }
        },
        "tools": [{"name": "note", "entry": "note.py", "permissions": {"knowledge": True}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _seed(space: notochord.Space, root: Path, *, documents: int, changes: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    user = space.user
    collections = [user.collections.create(name).id for name in ("Work", "Home", "Travel", "Reading", "Kitchen")]
    numbers = list(range(documents))
    document = 0
    with console.status(f"writing {documents:,} documents …"):
        for chunk in batched(numbers, 500):
            with space.core.store.batch():
                for n in chunk:
                    title, body = _note(rng, n)
                    if n % 4 == 0:
                        day = f"{2020 + (n // 4) // 365:04d}-{1 + ((n // 4) // 28) % 12:02d}-{1 + (n // 4) % 28:02d}"
                        user.documents.upsert(
                            collection="diary", key=f"{day}-{n}", title=title, body=body, meta={"date": day}
                        )
                    else:
                        written = user.documents.upsert(
                            collection=collections[n % len(collections)], title=title, body=body
                        )
                        document = document or written.id
    with console.status(f"writing {changes:,} changes …"), space.core.store.batch():
        people: list[int] = []
        for n in range(changes):
            run_id = f"run-bench-{n % 10}"
            if n % 10 == 0:
                user.facts.put(predicate="pref.food.like", value=f"dish {n}", run_id=run_id)
            elif len(people) < 100:
                person = user.entities.resolve(kind="person", create=True, name=f"Person {n}", run_id=run_id)
                assert person is not None
                people.append(person.id)
            else:
                subject = people[n % len(people)]
                user.facts.put(subject=subject, predicate="work.company", value=f"Company {n}", run_id=run_id)
    for gem in ("weather", "recipes", "contacts"):
        space.gems.install(EXAMPLES / gem)
    space.gems.install(_noter(root))
    for permission in ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*"):
        space.gems.set_permission("noter", permission, True)
    conversation = root / "conversation"
    conversation.mkdir()
    run = ""
    with console.status("three real runs of a gem …"):
        for food in ("soup", "bread", "stew"):
            run = space.gems.runner.run_sync("noter", "note", input={"food": food}, conversation=conversation).id
    return {
        "collection": str(collections[0]),
        "run": run,
        "document": str(document),
        "person": str(people[0]),
    }


async def _time(client: httpx.AsyncClient, path: str, requests: int) -> list[float]:
    for _ in range(2):
        answer = await client.get(path)
        if answer.status_code != 200:
            raise SystemExit(f"{path} answered {answer.status_code}")
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        await client.get(path)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def _measure(app: object, data: Path, pages: list[tuple[str, str]], requests: int) -> dict[str, list[float]]:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        signed_in = await client.get(f"/login?token={ConsoleKeys(data).mint_login_token()}")
        if signed_in.status_code != 303:
            raise SystemExit(f"could not sign in: {signed_in.status_code}")
        return {name: await _time(client, path, requests) for name, path in pages}


def _p(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if min(args.documents, args.changes, args.requests) <= 0:
        parser.error("--documents, --changes and --requests must be positive")

    with tempfile.TemporaryDirectory(prefix="notochord-console-bench-") as tmp:
        root = Path(tmp)
        data = root / "data"
        settings = Settings(data_dir=data, index_in_background=False)
        with notochord.open(data, settings, embedder=None) as nc:
            started = time.perf_counter()
            values = _seed(nc.personal, root, documents=args.documents, changes=args.changes, seed=args.seed)
            console.print(f"seeded in {time.perf_counter() - started:.1f} s: {nc.personal.core.counts()}")
            app = create_console(nc)

            def ping() -> dict[str, bool]:
                return {"ok": True}

            app.add_api_route("/bench/ping", ping, methods=["GET"], include_in_schema=False)
            pages = [("baseline: trivial route", "/bench/ping"), *((n, p.format(**values)) for n, p in PAGES)]
            figures = asyncio.run(_measure(app, data, pages, args.requests))

    base = statistics.median(figures["baseline: trivial route"])
    table = Table(
        title=f"console pages: {args.documents:,} documents, {args.changes:,} changes, {args.requests} requests each"
    )
    for column in ("page", "p50 ms", "p95 ms", "p50 / baseline", f"p95 < {BUDGET_MS:.0f} ms"):
        table.add_column(column, justify="left" if column == "page" else "right")
    for name, times in figures.items():
        p95 = _p(times, 0.95)
        table.add_row(
            name,
            f"{statistics.median(times):.1f}",
            f"{p95:.1f}",
            f"{statistics.median(times) / base:.1f}",
            "yes" if p95 < BUDGET_MS else "NO",
        )
    console.print(table)


if __name__ == "__main__":
    main()
