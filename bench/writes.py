"""Write throughput of notochord's host API next to plain ``sqlite3``: facts one by one and in
batches, documents one by one and in batches; and fact lookup latency.

Run from the repository root (``make bench`` runs the default)::

    python bench/writes.py                         # 10,000 and 100,000 facts
    python bench/writes.py --sizes 2000 --lookups 500 --documents 200
    python bench/writes.py --sizes 100000 --write-sample 100000   # time every one of the 100k writes
    python bench/writes.py --sizes 10000 --repeat 3 --before before.json  # median of 3 runs, beside a saved run

For each size it builds one realistic dataset (about 1000 people plus ``self``, mostly ``many``
predicates such as foods, e-mail addresses, projects, events and notes, some ``one`` predicates such
as the home city or the job title) and loads it twice, in the same process:

- **notochord**: in a fresh data directory, the first facts through ``space.user.facts.put_many``
  in batches of ``--batch`` (one transaction per batch, each fact still checked for duplicates,
  replacing ``one`` values and recording its own change), the last ``--write-sample`` through
  ``space.user.facts.put``, one transaction per fact; then ``space.user.facts.lookup(subject,
  prefix)`` for random subjects and prefixes.
- **sqlite3**: the baseline, a table with the same columns and the same
  ``(subject_id, predicate, valid_to)`` index, WAL and ``synchronous=NORMAL`` like notochord's
  engine; the same facts in transactions of ``--batch`` rows, then one ``INSERT`` per transaction
  (for a ``one`` predicate preceded by the ``UPDATE`` that expires the previous value, so both sides
  hold the same current facts), and ``SELECT`` by subject plus whole-level predicate prefix with
  the JSON values decoded.

Then words indexing: ``--documents`` notes (12 paragraphs, about 2,000 characters and 2.3 chunks
each, every paragraph naming three of the people), all of them written into a fresh space through
``space.user.documents.upsert`` one per transaction, and all of them again into another fresh space
through ``upsert_many`` in batches of ``--doc-batch``: chunks, full-text rows (and postings on
PostgreSQL), mentions and one change per document, in chunks per second, beside plain ``sqlite3``
storing the same chunks in a table and an FTS5 index in the same run. ``--backend postgresql`` (or
``both``) runs the documents on a throwaway PostgreSQL server too (``bench/postgres_server.py``)::

    python bench/writes.py --sizes 1000 --write-sample 100 --lookups 100 --documents 1000 --backend both

Figures: writes per second, write latency p50/p95, lookup latency p50/p95 and rows per lookup,
file size, and for each the ratio notochord / sqlite3 (for writes per second a ratio below 1 means
slower, for latencies a ratio above 1 means slower); chunks per second for documents, and their
ratio to the plain ``sqlite3`` + FTS5 floor. The targets
are printed beside them; nothing is asserted. Run against a checkout without the batch calls, the
batch rows say so and the first facts are loaded one put at a time.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

from rich.table import Table  # noqa: E402

from notochord.settings import Settings  # noqa: E402
from writes_data import FactSpec, dataset, lookups, people  # noqa: E402  (beside this script)
from writes_documents import measure_documents  # noqa: E402
from writes_measure import Figures, batched, console, percentile, progress, ratio, timed_loop  # noqa: E402
from writes_sqlite3 import empty_copy, run_baseline, run_rows_floor, self_entity  # noqa: E402

# ------------------------------------------------------------------ notochord


def run_notochord(
    root: Path,
    names: Sequence[str],
    specs: Sequence[FactSpec],
    queries: Sequence[tuple[int, str | None]],
    *,
    timed: int,
    batch: int,
) -> Figures:
    figures = Figures()
    data_dir = root / "notochord"
    with notochord.open(data_dir, Settings(data_dir=data_dir)) as nc, progress() as bar:
        space = nc.personal
        subjects: list[str | int] = ["self"]
        task = bar.add_task("notochord: people", total=len(names))
        for name in names:
            email = name.lower().replace(" ", ".").replace("'", "") + "@people.example"
            entity = space.user.entities.resolve(name=name, email=email, create=True)
            assert entity is not None
            subjects.append(entity.id)
            bar.advance(task)

        def put(spec: FactSpec) -> None:
            result = space.user.facts.put(predicate=spec.predicate, value=spec.value, subject=subjects[spec.subject])
            figures.statuses[result.status] = figures.statuses.get(result.status, 0) + 1

        untimed = specs[: len(specs) - timed]
        put_many = getattr(space.user.facts, "put_many", None)
        if untimed:
            label = f"notochord: put_many ({batch}/tx)" if put_many else "notochord: load (no put_many)"
            task = bar.add_task(label, total=len(untimed))
            started = time.perf_counter()
            for chunk in batched(untimed, batch):
                if put_many is None:
                    for spec in chunk:
                        put(spec)
                else:
                    items = [
                        {"predicate": s.predicate, "value": s.value, "subject": subjects[s.subject]} for s in chunk
                    ]
                    for result in put_many(items).results:
                        figures.statuses[result.status] = figures.statuses.get(result.status, 0) + 1
                bar.advance(task, len(chunk))
            if put_many is not None:
                figures.bulk_rows, figures.bulk_seconds = len(untimed), time.perf_counter() - started

        started = time.perf_counter()
        figures.write_latencies = timed_loop(bar, "notochord: facts.put (1/tx)", specs[len(untimed) :], put)
        figures.write_seconds = time.perf_counter() - started
        figures.writes_timed = len(specs) - len(untimed)

        def lookup(query: tuple[int, str | None]) -> None:
            figures.rows_returned += len(space.user.facts.lookup(subjects[query[0]], query[1]))

        for query in queries[:50]:
            space.user.facts.lookup(subjects[query[0]], query[1])
        figures.lookup_latencies = timed_loop(bar, "notochord: facts.lookup", queries, lookup)
        figures.subject_ids = [0 if s == "self" else int(s) for s in subjects]
        store_path = Path(str(space.core.store.engine.url.database))
        figures.self_id = self_entity(store_path)
        empty_copy(store_path, root / "rows-floor.db")
    figures.file_bytes = sum(p.stat().st_size for p in (data_dir / "spaces").iterdir())
    return figures


# ------------------------------------------------------------------ report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def report(size: int, people_count: int, batch: int, ours: Figures, base: Figures, rows: Figures) -> None:
    table = Table(title=f"{size:,} facts about {people_count:,} people and self", title_justify="left")
    table.add_column("figure")
    table.add_column("notochord", justify="right")
    table.add_column("sqlite3", justify="right")
    table.add_column("notochord / sqlite3", justify="right")
    table.add_column("sqlite3, notochord's rows", justify="right")
    table.add_column("notochord / its rows", justify="right")
    table.add_row(
        f"writes/s (1 fact per tx, last {ours.writes_timed:,})",
        f"{ours.writes_per_second:,.0f}",
        f"{base.writes_per_second:,.0f}",
        ratio(ours.writes_per_second, base.writes_per_second),
        f"{rows.writes_per_second:,.0f}",
        ratio(ours.writes_per_second, rows.writes_per_second),
    )
    for label, q in (("write p50", 50), ("write p95", 95)):
        mine, theirs, floor = (percentile(f.write_latencies, q) for f in (ours, base, rows))
        table.add_row(label, _ms(mine), _ms(theirs), ratio(mine, theirs), _ms(floor), ratio(mine, floor))
    table.add_row(
        f"batched writes/s ({batch} per tx, first {base.bulk_rows:,}; put_many)",
        f"{ours.bulk_per_second:,.0f}" if ours.bulk_rows else "n/a",
        f"{base.bulk_per_second:,.0f}",
        ratio(ours.bulk_per_second, base.bulk_per_second) if ours.bulk_rows else "n/a",
        f"{rows.bulk_per_second:,.0f}",
        ratio(ours.bulk_per_second, rows.bulk_per_second) if ours.bulk_rows else "n/a",
    )
    for label, q in (("lookup p50", 50), ("lookup p95", 95)):
        mine, theirs = percentile(ours.lookup_latencies, q), percentile(base.lookup_latencies, q)
        table.add_row(label, _ms(mine), _ms(theirs), ratio(mine, theirs), "", "")
    queries = max(len(ours.lookup_latencies), 1)
    table.add_row(
        "rows per lookup (mean)",
        f"{ours.rows_returned / queries:.1f}",
        f"{base.rows_returned / max(len(base.lookup_latencies), 1):.1f}",
        "",
        "",
        "",
    )
    table.add_row(
        "file size (with WAL)",
        f"{ours.file_bytes / 1e6:.1f} MB",
        f"{base.file_bytes / 1e6:.1f} MB",
        ratio(ours.file_bytes, base.file_bytes),
        f"{rows.file_bytes / 1e6:.1f} MB",
        ratio(ours.file_bytes, rows.file_bytes),
    )
    console.print(table)
    if ours.rows_returned != base.rows_returned:
        console.print(
            f"  [yellow]warning:[/yellow] the lookups returned {ours.rows_returned:,} rows in notochord and "
            f"{base.rows_returned:,} in sqlite3; the two sides did not run equivalent queries"
        )
    statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(ours.statuses.items()))
    console.print(f"  notochord put statuses: {statuses}")
    console.print(
        f"  single writes timed on the last {ours.writes_timed:,} of {size:,} facts, batched ones on the first "
        f"{base.bulk_rows:,}; targets: single ≥ 0.20×, batched ≥ 0.50× of sqlite3"
    )
    console.print(
        "  sqlite3, notochord's rows: plain sqlite3 writing the fact, its change and touched objects and any expiry "
        "into a copy of notochord's schema (its indexes and foreign keys), no reads or checks"
    )
    console.print()


TARGETS = {
    "writes/s (1 per tx) / sqlite3": "≥ 0.20",
    "batched writes/s / sqlite3": "≥ 0.50",
    "chunks/s (batched)": "≥ 1,000",
}


def report_headline(headline: dict[str, float], before_path: Path | None) -> None:
    """The figures the targets are about, with an earlier run's beside them (``--before``)."""
    before: dict[str, float] = {}
    if before_path is not None:
        before = json.loads(before_path.read_text(encoding="utf-8"))
    table = Table(title="headline figures (ratios are to sqlite3 measured in the same run)", title_justify="left")
    table.add_column("figure")
    if before:
        table.add_column("before", justify="right")
    table.add_column("now", justify="right")
    if before:
        table.add_column("now / before", justify="right")
    table.add_column("target", justify="right")
    for name, value in headline.items():
        target = next((t for key, t in TARGETS.items() if name.endswith(key)), "")
        row = [name]
        if before:
            earlier = before.get(name)
            row.append("n/a" if earlier is None else f"{earlier:,.2f}")
        row.append(f"{value:,.2f}")
        if before:
            earlier = before.get(name)
            row.append("n/a" if not earlier else f"{value / earlier:.1f}×")
        row.append(target)
        table.add_row(*row)
    console.print(table)


# ------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated dataset sizes (facts)")
    ap.add_argument("--people", type=int, default=1000, help="person entities the facts are spread over")
    ap.add_argument("--write-sample", type=int, default=10_000, help="writes timed one per transaction")
    ap.add_argument("--batch", type=int, default=500, help="facts per transaction while bulk-loading")
    ap.add_argument("--lookups", type=int, default=2000, help="timed lookups per size")
    ap.add_argument("--documents", type=int, default=1000, help="notes written as documents each way (0: none)")
    ap.add_argument("--doc-batch", type=int, default=50, help="documents per upsert_many")
    ap.add_argument(
        "--backend", choices=("sqlite", "postgresql", "both"), default="sqlite", help="store of the documents runs"
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each size (both sides); the median run is shown")
    ap.add_argument("--seed", type=int, default=20260929)
    ap.add_argument("--save", type=Path, help="write the headline figures to this JSON file")
    ap.add_argument("--before", type=Path, help="a --save file of an earlier run: print before → after")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if (
        not sizes
        or min(sizes) <= 0
        or args.people <= 0
        or args.write_sample <= 0
        or args.batch <= 0
        or args.repeat <= 0
    ):
        ap.error("sizes, --people, --write-sample, --batch and --repeat must be positive")
    if args.documents < 0 or args.doc_batch <= 0:
        ap.error("--documents must not be negative and --doc-batch must be positive")

    headline: dict[str, float] = {}
    python = sys.version.split()[0]
    console.print(
        f"notochord {notochord.__version__}, SQLite {sqlite3.sqlite_version}, Python {python}; "
        f"sizes {', '.join(f'{s:,}' for s in sizes)}, {args.people:,} people, {args.lookups:,} lookups"
    )
    for size in sizes:
        rng = random.Random(args.seed)
        names = people(args.people, rng)
        with console.status(f"generating {size:,} facts"):
            specs = dataset(size, names, rng)
            queries = lookups(args.lookups, len(names) + 1, rng)
        timed = min(args.write_sample, size)
        runs: list[tuple[Figures, Figures, Figures]] = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="notochord-bench-") as tmp:
                root = Path(tmp)
                ours = run_notochord(root, names, specs, queries, timed=timed, batch=args.batch)
                base = run_baseline(root, specs, queries, timed=timed, batch=args.batch)
                subjects = [ours.self_id, *ours.subject_ids[1:]]
                rows = run_rows_floor(root / "rows-floor.db", specs, subjects, timed=timed, batch=args.batch)
            runs.append((ours, base, rows))
        # a loaded machine moves single runs a lot: the run with the median single-write ratio
        runs.sort(key=lambda run: run[0].writes_per_second / run[1].writes_per_second)
        ours, base, rows = runs[len(runs) // 2]
        if args.repeat > 1:
            ratios = ", ".join(f"{o.writes_per_second / b.writes_per_second:.2f}×" for o, b, _ in runs)
            console.print(f"  {args.repeat} runs, single-write ratios {ratios}; the median run:")
        report(size, len(names), args.batch, ours, base, rows)
        headline[f"{size:,} facts: writes/s (1 per tx) / sqlite3"] = ours.writes_per_second / base.writes_per_second
        headline[f"{size:,} facts: write p50 notochord / sqlite3"] = percentile(ours.write_latencies, 50) / max(
            percentile(base.write_latencies, 50), 1e-9
        )
        if ours.bulk_rows:
            headline[f"{size:,} facts: batched writes/s / sqlite3"] = ours.bulk_per_second / base.bulk_per_second
            headline[f"{size:,} facts: batched writes/s / sqlite3 writing notochord's rows"] = (
                ours.bulk_per_second / rows.bulk_per_second
            )
        headline[f"{size:,} facts: writes/s (1 per tx) / sqlite3 writing notochord's rows"] = (
            ours.writes_per_second / rows.writes_per_second
        )
    if args.documents > 0:
        headline.update(measure_documents(args))
    report_headline(headline, args.before)
    if args.save is not None:
        args.save.write_text(json.dumps(headline, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
