"""The cost of the process boundary: ``ctx.knowledge.facts.lookup`` from a tool process vs in-process.

Run from the repository root (``make bench`` should run it next to ``network.py``)::

    python bench/runtime.py                    # 2000 calls per measurement, 3 rounds
    python bench/runtime.py --calls 500 --rounds 1

A fresh data directory (in a temporary folder, deleted afterwards) holds five ``pref.food`` facts
entered by the user and one gem allowed ``facts.read:self:pref.food.*``. The same call,
``facts.lookup('self', 'pref.food')`` returning those five facts, is timed:

- **in-process**: through ``space.gems.context(...)`` on the host's own event loop; the baseline.
- **Python tool**: a Python tool run by ``space.gems.runner`` in its own confined process; every
  call crosses the channel as a JSON line and back.
- **JavaScript tool**: the same from a node tool through the JS shim.

Each tool loops itself and returns the time it measured, so the figures leave out process start-up;
that is shown separately as the wall time of the whole run (spawn, confinement, import, the calls,
the record). Calls are timed one after another (``sequential``) and with 16 in flight at once
(``concurrent``, ``asyncio.gather`` / ``Promise.all``), since the host answers calls concurrently.
Rounds alternate the runners; figures are the median over rounds. Printed: calls per second and
the ratio to in-process (below 1 means slower). It prints; it never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

from notochord.settings import Settings  # noqa: E402

GEM = "bench-lookup"
IN_FLIGHT = 16
FOODS = ("pancakes", "tomato beef stew", "dumplings", "stroopwafels", "mapo tofu")

PY_TOOL = """
import asyncio
import time


async def run(input, ctx):
    lookup = ctx.knowledge.facts.lookup
    calls = input["calls"]
    started = time.perf_counter()
    if input["inFlight"] <= 1:
        for _ in range(calls):
            await lookup("self", "pref.food")
    else:
        for _ in range(calls // input["inFlight"]):
            await asyncio.gather(*[lookup("self", "pref.food") for _ in range(input["inFlight"])])
    return {"seconds": time.perf_counter() - started, "facts": len(await lookup("self", "pref.food"))}
"""

JS_TOOL = """
export default async function (input, ctx) {
  const lookup = (...args) => ctx.knowledge.facts.lookup(...args)
  const started = performance.now()
  if (input.inFlight <= 1) {
    for (let i = 0; i < input.calls; i++) await lookup('self', 'pref.food')
  } else {
    for (let i = 0; i < Math.floor(input.calls / input.inFlight); i++) {
      await Promise.all(Array.from({ length: input.inFlight }, () => lookup('self', 'pref.food')))
    }
  }
  const facts = (await lookup('self', 'pref.food')).length
  return { seconds: (performance.now() - started) / 1000, facts }
}
"""


def _write_gem(root: Path) -> Path:
    folder = root / "gem"
    folder.mkdir()
    (folder / "loop.py").write_text(PY_TOOL, encoding="utf-8")
    (folder / "loop.mjs").write_text(JS_TOOL, encoding="utf-8")
    manifest = {
        "id": GEM,
        "name": GEM,
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": ["facts.read:self:pref.food.*"], "reason": "Benchmark"}},
        "tools": [
            {"name": "python", "entry": "loop.py", "permissions": {"knowledge": True}},
            {"name": "javascript", "entry": "loop.mjs", "permissions": {"knowledge": True}},
        ],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


async def _in_process(space: notochord.Space, calls: int, in_flight: int) -> float:
    ctx = space.gems.context(GEM)
    assert ctx.knowledge is not None
    lookup = ctx.knowledge.facts.lookup
    started = time.perf_counter()
    if in_flight <= 1:
        for _ in range(calls):
            await lookup("self", "pref.food")
    else:
        for _ in range(calls // in_flight):
            await asyncio.gather(*[lookup("self", "pref.food") for _ in range(in_flight)])
    return time.perf_counter() - started


def _tool(space: notochord.Space, tool: str, calls: int, in_flight: int) -> tuple[float, float]:
    """(seconds the tool measured for its calls, wall seconds of the whole run)."""
    started = time.perf_counter()
    record = space.gems.runner.run_sync(GEM, tool, input={"calls": calls, "inFlight": in_flight}, timeout=600)
    wall = time.perf_counter() - started
    if record.status != "succeeded":
        raise SystemExit(f"the {tool} tool {record.status}: {record.error}\n{record.log}")
    if record.output["facts"] != len(FOODS):
        raise SystemExit(f"the {tool} tool saw {record.output['facts']} facts, expected {len(FOODS)}")
    return float(record.output["seconds"]), wall


def _table(rows: list[tuple[str, str, float, float | None]], baseline: dict[str, float]) -> str:
    head = f"{'runner':<18} {'mode':<12} {'calls/s':>12} {'vs in-process':>14} {'run wall (s)':>13}"
    lines = [head, "-" * len(head)]
    for runner, mode, rate, wall in rows:
        ratio = rate / baseline[mode] if baseline[mode] else float("nan")
        wall_text = f"{wall:13.2f}" if wall is not None else f"{'-':>13}"
        lines.append(f"{runner:<18} {mode:<12} {rate:12,.0f} {ratio:14.3f} {wall_text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per measurement (default 2000)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the median is printed (default 3)")
    args = ap.parse_args(argv)
    calls = max(IN_FLIGHT, args.calls // IN_FLIGHT * IN_FLIGHT)

    with tempfile.TemporaryDirectory(prefix="notochord-bench-runtime-") as tmp:
        root = Path(tmp)
        data_dir = root / "data"
        settings = Settings(data_dir=data_dir, embedder="none", index_in_background=False)
        with notochord.open(data_dir, settings, embedder=None) as nc:
            space = nc.personal
            for food in FOODS:
                space.user.facts.put(predicate="pref.food.like", value=food)
            space.gems.install(_write_gem(root))
            space.gems.set_permission(GEM, "facts.read:self:pref.food.*", True)
            isolation = space.gems.runner.run_sync(GEM, "python", input={"calls": 1, "inFlight": 1}).isolation

            modes = {"sequential": 1, "concurrent": IN_FLIGHT}
            seconds: dict[tuple[str, str], list[float]] = {}
            walls: dict[tuple[str, str], list[float]] = {}
            runners: dict[str, Callable[[str, int], tuple[float, float | None]]] = {
                "in-process": lambda _mode, n: (asyncio.run(_in_process(space, calls, n)), None),
                "Python tool": lambda _mode, n: _tool(space, "python", calls, n),
                "JavaScript tool": lambda _mode, n: _tool(space, "javascript", calls, n),
            }
            for round_ in range(args.rounds):
                order = list(runners.items())
                order = order[round_ % len(order) :] + order[: round_ % len(order)]
                for name, measure in order:
                    for mode, in_flight in modes.items():
                        took, wall = measure(mode, in_flight)
                        seconds.setdefault((name, mode), []).append(took)
                        if wall is not None:
                            walls.setdefault((name, mode), []).append(wall)

    rows: list[tuple[str, str, float, float | None]] = []
    baseline: dict[str, float] = {}
    for (name, mode), taken in seconds.items():
        rate = calls / statistics.median(taken)
        if name == "in-process":
            baseline[mode] = rate
        wall_list: list[float] | None = walls.get((name, mode))
        rows.append((name, mode, rate, statistics.median(wall_list) if wall_list else None))
    rank = {"in-process": 0, "Python tool": 1, "JavaScript tool": 2}
    rows.sort(key=lambda r: (rank[r[0]], r[1] != "sequential"))
    print(
        f"ctx.knowledge.facts.lookup('self', 'pref.food') -> {len(FOODS)} facts; {calls} calls, {args.rounds} round(s)"
    )
    print(f"isolation: {'; '.join(isolation) or '(none reported)'}")
    print(_table(rows, baseline))


if __name__ == "__main__":
    main()
