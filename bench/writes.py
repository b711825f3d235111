"""Fact write throughput and lookup latency of notochord's host API, next to plain ``sqlite3``.

Run from the repository root (``make bench`` runs the default)::

    python bench/writes.py                         # 10,000 and 100,000 facts
    python bench/writes.py --sizes 2000 --lookups 500
    python bench/writes.py --sizes 100000 --write-sample 100000   # time every one of the 100k writes

For each size it builds one realistic dataset (about 1000 people plus ``self``, mostly ``many``
predicates such as foods, e-mail addresses, projects, events and notes, some ``one`` predicates such
as the home city or the job title) and loads it twice, in the same process:

- **notochord**: ``space.user.facts.put`` in a fresh data directory, one transaction per fact as the
  product writes (each put also checks duplicates, replaces ``one`` values and appends its change
  record); then ``space.user.facts.lookup(subject, prefix)`` for random subjects and prefixes.
- **sqlite3**: the baseline, a table with the same columns and the same
  ``(subject_id, predicate, valid_to)`` index, WAL and ``synchronous=NORMAL`` like notochord's
  engine; one ``INSERT`` per transaction (for a ``one`` predicate preceded by the ``UPDATE`` that
  expires the previous value, so both sides hold the same current facts), and ``SELECT`` by subject
  plus whole-level predicate prefix with the JSON values decoded.

Writes are timed on the *last* ``--write-sample`` facts (default 10,000), one transaction each, so
that they land in a table of the full size; the facts before them are bulk-loaded first, in
transactions of ``--batch`` facts, through the same ``facts.put`` code (the host API has no batch
call, so the loader runs consecutive puts inside one shared transaction). The baseline is treated
the same way, with the same statements. Lookups are timed one by one, after a short warm-up, with the
same (subject, prefix) sequence on both sides.

Figures: writes per second and write latency p50/p95, lookup latency p50/p95 and rows per lookup,
file size, and for each the ratio notochord / sqlite3 (the figure to watch: for writes per second a
ratio below 1 means slower, for latencies a ratio above 1 means slower). It prints; it never asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
try:
    import notochord
except ImportError:  # running from a checkout without an editable install
    sys.path.insert(0, str(REPO / "src"))
    import notochord

import sqlalchemy as sa  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table  # noqa: E402

from notochord.clock import iso_utc  # noqa: E402
from notochord.db.engine import write_tx  # noqa: E402
from notochord.knowledge.predicates import CORE_PREDICATES  # noqa: E402
from notochord.knowledge.quotas import DailyLimits  # noqa: E402
from notochord.knowledge.writes import Actor, Store, WriteTx  # noqa: E402
from notochord.settings import Settings  # noqa: E402

console = Console(width=None if sys.stdout.isatty() else 140)

# ------------------------------------------------------------------ the dataset

FIRST_NAMES = (
    "Anna", "Bram", "Chen", "Daan", "Eva", "Fatima", "Femke", "Hao", "Ingrid", "Jan", "Jing", "Joost",
    "Karim", "Lars", "Lei", "Lieke", "Lin", "Maarten", "Mei", "Mila", "Noor", "Pieter", "Ping", "Qiang",
    "Ravi", "Ruben", "Sanne", "Sophie", "Tim", "Wei", "Xiu", "Yan", "Yusuf", "Zoë", "Ming",
)  # fmt: skip
LAST_NAMES = (
    "Bakker", "Chen", "de Boer", "de Jong", "de Vries", "Dekker", "Huang", "Janssen", "Li", "Liu",
    "Meijer", "Mulder", "Peters", "Smit", "Visser", "van Dijk", "van den Berg", "Wang", "Wu", "Xu",
    "Yang", "Zhao", "Zhou", "O'Brien", "张", "王",
)  # fmt: skip
CITIES = (
    "Utrecht", "Amsterdam", "Rotterdam", "Delft", "Leiden", "Groningen", "Eindhoven", "Shanghai",
    "Beijing", "Shenzhen", "Hangzhou", "Berlin", "Antwerp", "London", "Lisbon", "Singapore",
)  # fmt: skip
COMPANIES = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark Industries", "Wayne Bio")
TITLES = ("engineer", "designer", "product manager", "nurse", "teacher", "researcher", "accountant", "chef")
DISHES = (
    "dumplings", "ramen", "sushi", "stroopwafels", "bitterballen", "hotpot", "mapo tofu", "pad thai",
    "lasagne", "paella", "falafel", "pho", "biryani", "croissants", "pierogi", "risotto", "ceviche",
    "bibimbap", "shakshuka", "goulash", "小笼包", "erwtensoep",
)  # fmt: skip
CUISINES = ("Sichuan", "Cantonese", "Japanese", "Italian", "Indonesian", "Ethiopian", "Mexican", "Dutch")
ADJECTIVES = ("spicy", "home-made", "vegetarian", "grandma's", "street-food", "smoked", "fresh", "crispy")
ALLERGIES = ("peanuts", "shellfish", "lactose", "gluten", "pollen", "cats", "penicillin", "sesame")
LANGUAGES = ("Dutch", "English", "Mandarin", "Cantonese", "German", "French", "Spanish", "Arabic")
PROJECTS = ("migration", "rebrand", "data platform", "mobile app", "audit", "launch", "onboarding", "pilot")
EVENTS = ("dentist", "birthday dinner", "team offsite", "flight", "concert", "parents' evening", "1:1")
NOTE_PHRASES = (
    "likes to talk about cycling", "prefers short messages in the morning", "met at the conference",
    "asked about the quarterly report", "owes me a book recommendation", "moving house in summer",
    "plays the piano", "works remotely on Fridays", "has two kids at the same school as ours",
    "recommended the noodle place near the station", "is training for a marathon",
    "喜欢喝茶", "下个月去上海出差",
)  # fmt: skip

# (predicate, weight); the weights make ``many`` predicates most of the data, as in real use.
PREDICATES: tuple[tuple[str, int], ...] = (
    ("pref.food.like", 14),
    ("pref.food.dislike", 5),
    ("pref.food.cuisine", 5),
    ("contact.email", 8),
    ("contact.phone", 6),
    ("identity.nickname", 4),
    ("identity.language", 4),
    ("work.project", 8),
    ("schedule.event", 12),
    ("health.allergy", 3),
    ("x.note", 16),
    ("x.gift_idea", 5),
    ("location.home.city", 3),
    ("work.company", 3),
    ("work.title", 2),
    ("identity.birthday", 2),
)
LOOKUP_PREFIXES: tuple[str | None, ...] = (
    None,
    "pref",
    "pref.food",
    "pref.food.like",
    "contact",
    "contact.email",
    "work",
    "schedule.event",
    "location.home",
    "identity",
    "health",
    "x",
    "x.note",
)
ONE_PREDICATES = frozenset(p.name for p in CORE_PREDICATES if p.cardinality == "one")
SELF_SHARE = 0.05
"""Share of the facts about the user; the rest is spread over the people."""


@dataclass(frozen=True)
class FactSpec:
    subject: int
    """Index into the subjects: 0 is ``self``, 1… the people."""
    predicate: str
    value: Any


def _value(rng: random.Random, predicate: str, person: str) -> Any:
    slug = person.lower().replace(" ", ".").replace("'", "")
    match predicate:
        case "pref.food.like" | "pref.food.dislike" | "x.gift_idea":
            return f"{rng.choice(ADJECTIVES)} {rng.choice(DISHES)}"
        case "pref.food.cuisine":
            return rng.choice(CUISINES)
        case "contact.email":
            domain = rng.choice(("example.org", "example.com", "mail.example.nl", "qq.example.cn"))
            return f"{slug}{rng.randrange(1, 10_000)}@{domain}"
        case "contact.phone":
            return f"+31 6 {rng.randrange(10_000_000, 99_999_999)}"
        case "identity.nickname":
            suffix = rng.choice(("", "je", "tje", " ge", " xiao"))
            return f"{person.split()[0][:3]}{suffix}{rng.randrange(100)}"
        case "identity.language":
            return rng.choice(LANGUAGES)
        case "work.project":
            return f"{rng.choice(COMPANIES)} {rng.choice(PROJECTS)} {rng.randrange(2020, 2027)}"
        case "schedule.event":
            return {
                "title": rng.choice(EVENTS),
                "date": f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
                "time": f"{rng.randrange(7, 22):02d}:{rng.choice(('00', '15', '30', '45'))}",
                "place": rng.choice(CITIES),
            }
        case "health.allergy":
            return rng.choice(ALLERGIES)
        case "x.note":
            return "; ".join(rng.sample(NOTE_PHRASES, rng.randrange(1, 5)))
        case "location.home.city":
            return rng.choice(CITIES)
        case "work.company":
            return rng.choice(COMPANIES)
        case "work.title":
            return rng.choice(TITLES)
        case "identity.birthday":
            return f"{rng.randrange(1950, 2010)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    raise AssertionError(predicate)


def people(count: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)} {n}" for n in range(count)]


def dataset(size: int, names: Sequence[str], rng: random.Random) -> list[FactSpec]:
    """``size`` facts with no identical (subject, predicate, value), so every put is a real write."""
    names_by_subject = ["Me Myself", *names]
    predicates = [p for p, _ in PREDICATES]
    weights = [w for _, w in PREDICATES]
    seen: set[tuple[int, str, str]] = set()
    specs: list[FactSpec] = []
    while len(specs) < size:
        subject = 0 if rng.random() < SELF_SHARE else rng.randrange(1, len(names_by_subject))
        predicate = rng.choices(predicates, weights)[0]
        value = _value(rng, predicate, names_by_subject[subject])
        key = (subject, predicate, json.dumps(value, sort_keys=True))
        if key not in seen:
            seen.add(key)
            specs.append(FactSpec(subject, predicate, value))
    return specs


def lookups(count: int, subjects: int, rng: random.Random) -> list[tuple[int, str | None]]:
    return [(rng.randrange(subjects), rng.choice(LOOKUP_PREFIXES)) for _ in range(count)]


# ------------------------------------------------------------------ measuring


@dataclass
class Figures:
    writes_timed: int = 0
    write_seconds: float = 0.0
    write_latencies: list[float] = field(default_factory=list)
    bulk_rows: int = 0
    bulk_seconds: float = 0.0
    lookup_latencies: list[float] = field(default_factory=list)
    rows_returned: int = 0
    file_bytes: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def writes_per_second(self) -> float:
        return self.writes_timed / self.write_seconds if self.write_seconds else float("nan")

    @property
    def bulk_per_second(self) -> float:
        return self.bulk_rows / self.bulk_seconds if self.bulk_seconds else float("nan")


def percentile(samples: Sequence[float], q: int) -> float:
    if not samples:
        return float("nan")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def timed_loop(bar: Progress, label: str, items: Sequence[Any], call: Callable[[Any], None]) -> list[float]:
    """Run ``call`` on each item, one at a time, and return each call's seconds."""
    latencies: list[float] = []
    task = bar.add_task(label, total=len(items))
    for n, item in enumerate(items):
        started = time.perf_counter()
        call(item)
        latencies.append(time.perf_counter() - started)
        if n % 100 == 99:
            bar.update(task, completed=n + 1)
    bar.update(task, completed=len(items))
    return latencies


def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ------------------------------------------------------------------ notochord


@contextlib.contextmanager
def one_transaction(store: Store) -> Iterator[None]:
    """Run every read and write of ``store`` inside one shared write transaction.

    Only for bulk-loading the untimed part of a dataset: each ``facts.put`` still runs all of its
    checks and records its change, but the puts commit together. Quotas are not charged, which is
    what the user's writes get anyway.
    """
    with write_tx(store.engine) as conn:

        @contextlib.contextmanager
        def read() -> Iterator[sa.Connection]:
            yield conn

        @contextlib.contextmanager
        def write(
            *,
            actor: Actor,
            run_id: str | None,
            chars: int = 0,  # noqa: ARG001  (the signature of Store.write)
            limits: DailyLimits | None = None,
        ) -> Iterator[WriteTx]:
            if limits is not None:
                raise RuntimeError("the bulk loader only writes as the user, who has no quota")
            yield WriteTx(conn=conn, actor=actor, run_id=run_id, now=store.now())

        store.read = read  # type: ignore[method-assign]
        store.write = write  # type: ignore[method-assign]
        try:
            yield
        finally:
            del store.read, store.write


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
        if untimed:
            task = bar.add_task(f"notochord: bulk load ({batch}/tx)", total=len(untimed))
            started = time.perf_counter()
            for chunk in batched(untimed, batch):
                with one_transaction(space.core.store):
                    for spec in chunk:
                        put(spec)
                bar.advance(task, len(chunk))
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
    figures.file_bytes = sum(p.stat().st_size for p in (data_dir / "spaces").iterdir())
    return figures


# ------------------------------------------------------------------ the sqlite3 baseline

BASELINE_DDL = """
CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    subject_id INTEGER NOT NULL,
    predicate TEXT NOT NULL,
    value_json TEXT NOT NULL,
    object_id INTEGER,
    origin TEXT NOT NULL,
    source TEXT NOT NULL,
    source_ref TEXT,
    writer TEXT NOT NULL,
    pinned BOOLEAN NOT NULL,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    recorded_at TEXT NOT NULL,
    expired_by INTEGER
);
CREATE INDEX ix_facts_subject_predicate_valid_to ON facts (subject_id, predicate, valid_to);
"""
BASELINE_INSERT = (
    "INSERT INTO facts (subject_id, predicate, value_json, object_id, origin, source, source_ref, writer,"
    " pinned, valid_from, valid_to, recorded_at) VALUES (?, ?, ?, NULL, 'user', 'user', NULL, 'user', ?, ?,"
    " NULL, ?)"
)
BASELINE_EXPIRE = "UPDATE facts SET valid_to = ? WHERE subject_id = ? AND predicate = ? AND valid_to IS NULL"
BASELINE_SELECT_ALL = "SELECT * FROM facts WHERE subject_id = ? AND valid_to IS NULL ORDER BY predicate, id"
BASELINE_SELECT_PREFIX = (
    "SELECT * FROM facts WHERE subject_id = ? AND valid_to IS NULL"
    " AND (predicate = ? OR predicate LIKE ? ESCAPE '/') ORDER BY predicate, id"
)


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return escaped + ".%"


def run_baseline(
    root: Path,
    specs: Sequence[FactSpec],
    queries: Sequence[tuple[int, str | None]],
    *,
    timed: int,
    batch: int,
) -> Figures:
    figures = Figures()
    path = root / "baseline.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(BASELINE_DDL)

        def row(spec: FactSpec) -> tuple[Any, ...]:
            now = iso_utc(datetime.now(UTC))
            value = json.dumps(spec.value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            return (spec.subject, spec.predicate, value, spec.subject == 0, now, now)

        def write(spec: FactSpec) -> None:
            values = row(spec)
            if spec.predicate in ONE_PREDICATES:
                conn.execute(BASELINE_EXPIRE, (values[-1], spec.subject, spec.predicate))
            conn.execute(BASELINE_INSERT, values)

        def insert(spec: FactSpec) -> None:
            conn.execute("BEGIN IMMEDIATE")
            write(spec)
            conn.execute("COMMIT")

        def select(query: tuple[int, str | None]) -> None:
            subject, prefix = query
            if prefix is None:
                cursor = conn.execute(BASELINE_SELECT_ALL, (subject,))
            else:
                cursor = conn.execute(BASELINE_SELECT_PREFIX, (subject, prefix, _like_prefix(prefix)))
            found = [(r[0], r[2], json.loads(r[3])) for r in cursor]
            figures.rows_returned += len(found)

        with progress() as bar:
            untimed = specs[: len(specs) - timed]
            if untimed:
                task = bar.add_task(f"sqlite3: bulk load ({batch}/tx)", total=len(untimed))
                started = time.perf_counter()
                for chunk in batched(untimed, batch):
                    conn.execute("BEGIN IMMEDIATE")
                    for spec in chunk:
                        write(spec)
                    conn.execute("COMMIT")
                    bar.advance(task, len(chunk))
                figures.bulk_rows, figures.bulk_seconds = len(untimed), time.perf_counter() - started

            started = time.perf_counter()
            figures.write_latencies = timed_loop(bar, "sqlite3: INSERT (1/tx)", specs[len(untimed) :], insert)
            figures.write_seconds = time.perf_counter() - started
            figures.writes_timed = len(specs) - len(untimed)
            figures.statuses = {"applied": len(specs)}

            for query in queries[:50]:
                conn.execute(BASELINE_SELECT_ALL, (query[0],)).fetchall()
            figures.lookup_latencies = timed_loop(bar, "sqlite3: SELECT", queries, select)
    finally:
        conn.close()
    figures.file_bytes = sum(p.stat().st_size for p in root.glob("baseline.db*"))
    return figures


# ------------------------------------------------------------------ report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def _ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}×" if base else "n/a"


def report(size: int, people_count: int, ours: Figures, base: Figures) -> None:
    table = Table(title=f"{size:,} facts about {people_count:,} people and self", title_justify="left")
    table.add_column("figure")
    table.add_column("notochord", justify="right")
    table.add_column("sqlite3", justify="right")
    table.add_column("notochord / sqlite3", justify="right")
    table.add_row(
        f"writes/s (1 fact per tx, last {ours.writes_timed:,})",
        f"{ours.writes_per_second:,.0f}",
        f"{base.writes_per_second:,.0f}",
        _ratio(ours.writes_per_second, base.writes_per_second),
    )
    for label, q in (("write p50", 50), ("write p95", 95)):
        mine, theirs = percentile(ours.write_latencies, q), percentile(base.write_latencies, q)
        table.add_row(label, _ms(mine), _ms(theirs), _ratio(mine, theirs))
    if ours.bulk_rows:
        table.add_row(
            f"bulk load rows/s ({ours.bulk_rows:,} untimed above)",
            f"{ours.bulk_per_second:,.0f}",
            f"{base.bulk_per_second:,.0f}",
            _ratio(ours.bulk_per_second, base.bulk_per_second),
        )
    for label, q in (("lookup p50", 50), ("lookup p95", 95)):
        mine, theirs = percentile(ours.lookup_latencies, q), percentile(base.lookup_latencies, q)
        table.add_row(label, _ms(mine), _ms(theirs), _ratio(mine, theirs))
    queries = max(len(ours.lookup_latencies), 1)
    table.add_row(
        "rows per lookup (mean)",
        f"{ours.rows_returned / queries:.1f}",
        f"{base.rows_returned / max(len(base.lookup_latencies), 1):.1f}",
        "",
    )
    table.add_row(
        "file size (with WAL)",
        f"{ours.file_bytes / 1e6:.1f} MB",
        f"{base.file_bytes / 1e6:.1f} MB",
        _ratio(ours.file_bytes, base.file_bytes),
    )
    console.print(table)
    if ours.rows_returned != base.rows_returned:
        console.print(
            f"  [yellow]warning:[/yellow] the lookups returned {ours.rows_returned:,} rows in notochord and "
            f"{base.rows_returned:,} in sqlite3; the two sides did not run equivalent queries"
        )
    statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(ours.statuses.items()))
    console.print(f"  notochord put statuses: {statuses}")
    if ours.bulk_rows:
        console.print(
            f"  writes timed on the last {ours.writes_timed:,} of {size:,} facts; the first "
            f"{ours.bulk_rows:,} were bulk-loaded (same facts.put code, shared transactions). "
            "Use --write-sample to time more."
        )
    console.print()


# ------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated dataset sizes (facts)")
    ap.add_argument("--people", type=int, default=1000, help="person entities the facts are spread over")
    ap.add_argument("--write-sample", type=int, default=10_000, help="writes timed one per transaction")
    ap.add_argument("--batch", type=int, default=500, help="facts per transaction while bulk-loading")
    ap.add_argument("--lookups", type=int, default=2000, help="timed lookups per size")
    ap.add_argument("--seed", type=int, default=20260929)
    args = ap.parse_args(argv)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not sizes or min(sizes) <= 0 or args.people <= 0 or args.write_sample <= 0 or args.batch <= 0:
        ap.error("sizes, --people, --write-sample and --batch must be positive")

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
        with tempfile.TemporaryDirectory(prefix="notochord-bench-") as tmp:
            root = Path(tmp)
            ours = run_notochord(root, names, specs, queries, timed=timed, batch=args.batch)
            base = run_baseline(root, specs, queries, timed=timed, batch=args.batch)
        report(size, len(names), ours, base)


if __name__ == "__main__":
    main()
