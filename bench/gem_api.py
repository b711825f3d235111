"""The cost of permission checks and refs: ``ctx.knowledge.facts.lookup`` against the host API.

Builds one space with facts about the user and about people, installs a gem allowed to read them,
and times the same lookups through the host API (``space.user.facts.lookup``) and through the gem's
``ctx.knowledge.facts.lookup`` (grants read per call, ranges compiled into the SQL, ids turned into
refs, a worker thread per call). Prints calls per second, p50/p95, and the ratio. Never asserts.

    python bench/gem_api.py [--people 500] [--facts-per-person 10] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import notochord
from notochord.settings import Settings

PREDICATES = ["work.company", "work.title", "relation.colleague", "relation.friend", "contact.email", "pref.food.like"]
# two grants of full predicates and one wildcard, so both kinds of range are compiled into the SQL
PERMISSIONS = [
    "facts.read:person:work.company",
    "facts.read:person:relation.colleague",
    "facts.read:person:pref.food.*",
]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, samples: list[float]) -> tuple[str, float, float, float]:
    total = sum(samples)
    return name, len(samples) / total, _percentile(samples, 0.5) * 1000, _percentile(samples, 0.95) * 1000


async def _time_async(calls: int, fn: Callable[[], Awaitable[object]]) -> list[float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, default=500)
    parser.add_argument("--facts-per-person", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = Settings(data_dir=root / "data", index_in_background=False)
        with notochord.open(root / "data", settings, embedder=None) as nc:
            space = nc.personal
            people = []
            for i in range(args.people):
                person = space.user.entities.resolve(email=f"p{i}@example.org", name=f"Person {i}", create=True)
                assert person is not None
                people.append(person.id)
                for j in range(args.facts_per_person):
                    predicate = rng.choice(PREDICATES)
                    space.user.facts.put(predicate=predicate, value=f"{predicate} value {j}", subject=person.id)
            gem_dir = root / "gem"
            gem_dir.mkdir()
            (gem_dir / "notochord.json").write_text(
                json.dumps(
                    {
                        "id": "bench",
                        "name": "bench",
                        "version": "1.0.0",
                        "permissions": {"knowledge": {"permissions": [*PERMISSIONS, "entities.read:person"]}},
                        "tools": [{"name": "t", "entry": "t.py", "permissions": {"knowledge": True}}],
                    }
                ),
                encoding="utf-8",
            )
            (gem_dir / "t.py").write_text("async def run(input, ctx):\n    return None\n", encoding="utf-8")
            gem = space.gems.install(gem_dir)
            for permission in [*PERMISSIONS, "entities.read:person"]:
                space.gems.set_permission(gem.id, permission, True)
            ctx = space.gems.context(gem.id)
            assert ctx.knowledge is not None
            knowledge = ctx.knowledge

            async def refs() -> list[str]:
                listed = await knowledge.entities.list("person")
                return [e.ref for e in listed]

            person_refs = asyncio.run(refs())
            pairs = [
                (rng.randrange(len(people)), rng.choice(["work", "relation", "pref.food"])) for _ in range(args.calls)
            ]

            host_samples = []
            for index, prefix in pairs:
                start = time.perf_counter()
                space.user.facts.lookup(people[index], prefix)
                host_samples.append(time.perf_counter() - start)

            iterator = iter(pairs)

            async def gem_call() -> object:
                index, prefix = next(iterator)
                return await knowledge.facts.lookup(person_refs[index], prefix)

            gem_samples = asyncio.run(_time_async(args.calls, gem_call))

    rows = [
        _row("host API  space.user.facts.lookup", host_samples),
        _row("gem API   ctx.knowledge.facts.lookup", gem_samples),
    ]
    print(f"facts.lookup on {args.people} people × {args.facts_per_person} facts, {args.calls} calls each")
    print(f"{'path':<40} {'calls/s':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for name, rate, p50, p95 in rows:
        print(f"{name:<40} {rate:>10.0f} {p50:>8.2f} {p95:>8.2f}")
    ratio = statistics.median(gem_samples) / statistics.median(host_samples)
    print(f"cost of permission checks and refs: the gem path takes {ratio:.2f}× the host path (p50)")


if __name__ == "__main__":
    main()
