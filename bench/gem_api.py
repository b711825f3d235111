"""The cost of permission checks and refs: ``ctx.knowledge.facts`` against the host API.

Builds one space with facts about the user and about people, installs a gem allowed to read them
and to write food preferences, and times the same calls through the host API (``space.user.facts``)
and through the gem's ``ctx.knowledge.facts`` (the switches checked against their grants version
on every call, ranges compiled into the SQL, ids turned into refs; on SQLite a lookup runs in the
caller's thread, a put in a worker thread): ``lookup``, then ``put`` of new values (a gem writes at
most 500 times a day, so ``--puts`` stays below that). Host and gem calls alternate one by one, so
both paths run under the same load of a shared machine, and the ratio is of the two measured in
this process. Prints calls per second, p50/p95, and the ratio of each. Never asserts.

``--profile N`` then runs the lookup legs once more under cProfile (after the timed run, so the
figures above are unprofiled) and prints the N functions with the most own time of each leg.

    python bench/gem_api.py [--people 500] [--facts-per-person 10] [--calls 2000] [--puts 400]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import notochord
from notochord.settings import Settings

PREDICATES = ["work.company", "work.title", "relation.colleague", "relation.friend", "contact.email", "pref.food.like"]
# two grants of full predicates and one wildcard, so both kinds of range are compiled into the SQL
PERMISSIONS = [
    "facts.read:person:work.company",
    "facts.read:person:relation.colleague",
    "facts.read:person:pref.food.*",
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, samples: list[float]) -> tuple[str, float, float, float]:
    total = sum(samples)
    return name, len(samples) / total, _percentile(samples, 0.5) * 1000, _percentile(samples, 0.95) * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, default=500)
    parser.add_argument("--facts-per-person", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--puts", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--inline",
        action="store_true",
        help="run each ctx call's work in the caller's thread: the gem API's own cost, without the "
        "hop to a worker thread (which a loaded machine can make dominate)",
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile the lookup legs, N rows each")
    parser.add_argument("--save", type=Path, help="write the gem/host ratios to this JSON file")
    parser.add_argument("--before", type=Path, help="a --save file of an earlier run: print before → after")
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
            if args.inline:

                async def inline(work: Callable[[], object], **_options: object) -> object:
                    return work()

                knowledge.run = inline  # type: ignore[method-assign,assignment]

            async def refs() -> list[str]:
                listed = await knowledge.entities.list("person")
                return [e.ref for e in listed]

            person_refs = asyncio.run(refs())
            pairs = [
                (rng.randrange(len(people)), rng.choice(["work", "relation", "pref.food"])) for _ in range(args.calls)
            ]

            host_samples: list[float] = []
            gem_samples: list[float] = []

            async def lookups() -> None:
                for index, prefix in pairs:
                    start = time.perf_counter()
                    space.user.facts.lookup(people[index], prefix)
                    host_samples.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await knowledge.facts.lookup(person_refs[index], prefix)
                    gem_samples.append(time.perf_counter() - start)

            asyncio.run(lookups())

            host_puts: list[float] = []
            gem_puts: list[float] = []

            async def puts() -> None:
                for i in range(args.puts):
                    start = time.perf_counter()
                    space.user.facts.put(predicate="pref.food.like", value=f"host dish {i}")
                    host_puts.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await knowledge.facts.put(predicate_hint="pref.food.like", value=f"gem dish {i}")
                    gem_puts.append(time.perf_counter() - start)

            asyncio.run(puts())

            profiles: list[tuple[str, str]] = []
            if args.profile:

                async def host_leg() -> None:
                    for index, prefix in pairs:
                        space.user.facts.lookup(people[index], prefix)

                async def gem_leg() -> None:
                    for index, prefix in pairs:
                        await knowledge.facts.lookup(person_refs[index], prefix)

                for label, leg in (("host lookup", host_leg), ("gem lookup", gem_leg)):
                    profiler = cProfile.Profile()
                    profiler.runcall(asyncio.run, leg())
                    out = io.StringIO()
                    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
                    profiles.append((label, out.getvalue()))

    rows = [
        _row("host API  space.user.facts.lookup", host_samples),
        _row("gem API   ctx.knowledge.facts.lookup", gem_samples),
        _row("host API  space.user.facts.put", host_puts),
        _row("gem API   ctx.knowledge.facts.put", gem_puts),
    ]
    where = ", ctx work in the caller's thread" if args.inline else ""
    print(
        f"{args.people} people × {args.facts_per_person} facts, {args.calls} lookups and {args.puts} puts each{where}"
    )
    print(f"{'path':<40} {'calls/s':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for name, rate, p50, p95 in rows:
        print(f"{name:<40} {rate:>10.0f} {p50:>8.2f} {p95:>8.2f}")
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before is not None else {}
    ratios: dict[str, float] = {}
    for op, gem_times, host_times in (("lookup", gem_samples, host_samples), ("put", gem_puts, host_puts)):
        ratio = ratios[op] = statistics.median(gem_times) / statistics.median(host_times)
        earlier = f" (before: {before[op]:.2f}×)" if op in before else ""
        target = "; target ≤ 1.30×" if op == "lookup" else ""
        print(f"facts.{op}: the gem path takes {ratio:.2f}× the host path (p50){earlier}{target}")
    for label, text in profiles:
        print(f"\n--- cProfile of the {label} leg ({args.calls} calls), by own time")
        print(text.strip())
    if args.save is not None:
        args.save.write_text(json.dumps(ratios, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
