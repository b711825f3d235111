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
from notochord.search.chunking import chunk_markdown  # noqa: E402
from notochord.settings import Settings  # noqa: E402
from writes_data import ONE_PREDICATES, FactSpec, dataset, lookups, notes, people  # noqa: E402  (beside this script)

console = Console(width=None if sys.stdout.isatty() else 140)

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
    subject_ids: list[int] = field(default_factory=list)
    """The entity id of each subject of the specs (``self`` as 0 until :attr:`self_id` is known)."""
    self_id: int = 0

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


def sqlite3_writes(
    conn: sqlite3.Connection,
    bar: Progress,
    label: str,
    specs: Sequence[FactSpec],
    write: Callable[[FactSpec], None],
    figures: Figures,
    *,
    timed: int,
    batch: int,
) -> None:
    """Write ``specs`` on a plain ``sqlite3`` connection with ``write``: all but the last ``timed`` in
    transactions of ``batch`` (the batched figures), then the rest one per transaction, each timed."""
    untimed = specs[: len(specs) - timed]
    if untimed:
        task = bar.add_task(f"{label} ({batch}/tx)", total=len(untimed))
        started = time.perf_counter()
        for chunk in batched(untimed, batch):
            conn.execute("BEGIN IMMEDIATE")
            for spec in chunk:
                write(spec)
            conn.execute("COMMIT")
            bar.advance(task, len(chunk))
        figures.bulk_rows, figures.bulk_seconds = len(untimed), time.perf_counter() - started

    def insert(spec: FactSpec) -> None:
        conn.execute("BEGIN IMMEDIATE")
        write(spec)
        conn.execute("COMMIT")

    started = time.perf_counter()
    figures.write_latencies = timed_loop(bar, f"{label} (1/tx)", specs[len(untimed) :], insert)
    figures.write_seconds = time.perf_counter() - started
    figures.writes_timed = len(specs) - len(untimed)


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
        figures.self_id = _self_entity(store_path)
        _empty_copy(store_path, root / "rows-floor.db")
    figures.file_bytes = sum(p.stat().st_size for p in (data_dir / "spaces").iterdir())
    return figures


# ------------------------------------------------------------------ documents


@dataclass
class DocRun:
    """One way of writing the documents into a fresh space: what was stored and how long it took."""

    chunks: int = 0
    mentions: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds if self.seconds else float("nan")


@dataclass
class DocFigures:
    backend: str
    documents: int
    characters: int
    single: DocRun
    batched: DocRun | None
    floor: DocRun
    """Plain ``sqlite3``: the same chunk texts into a table and an FTS5 index, ``--doc-batch`` per transaction."""


@contextlib.contextmanager
def _documents_space(data_dir: Path, database_url: str | None, names: Sequence[str]) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=data_dir, database_url=database_url, index_in_background=False)
    with notochord.open(data_dir, settings, embedder=None) as nc:
        space = nc.personal
        with space.core.store.batch():  # the people are set-up, not measured
            for name in names:
                space.user.entities.resolve(name=name, create=True)
        yield space


def _stored(space: notochord.Space, run: DocRun) -> None:
    with space.core.store.read() as conn:
        run.chunks = int(conn.execute(sa.text("SELECT count(*) FROM chunks")).scalar_one())
        run.mentions = int(conn.execute(sa.text("SELECT count(*) FROM mentions")).scalar_one())


def _one_way(
    path: Path,
    url: str | None,
    names: Sequence[str],
    docs: Sequence[tuple[str, str]],
    label: str,
    batch: int | None,
) -> DocRun | None:
    """Write ``docs`` into a fresh space, one ``upsert`` per transaction (``batch`` None) or in
    ``upsert_many`` batches; ``None`` on a checkout without ``upsert_many``."""
    run = DocRun()
    with progress() as bar, _documents_space(path, url, names) as space:
        upsert_many = getattr(space.user.documents, "upsert_many", None)
        if batch is not None and upsert_many is None:
            return None
        task = bar.add_task(label, total=len(docs))
        started = time.perf_counter()
        if batch is None:
            for title, body in docs:
                space.user.documents.upsert(collection="keep", title=title, body=body)
                bar.advance(task)
        else:
            for chunk in batched(docs, batch):
                upsert_many([{"collection": "keep", "title": t, "body": b} for t, b in chunk])
                bar.advance(task, len(chunk))
        run.seconds = time.perf_counter() - started
        _stored(space, run)
    return run


def run_documents(
    root: Path,
    names: Sequence[str],
    docs: Sequence[tuple[str, str]],
    *,
    batch: int,
    backend: str,
    database_urls: Callable[[], contextlib.AbstractContextManager[str | None]],
) -> DocFigures:
    """The same documents into two fresh spaces of ``backend``: one ``upsert`` per transaction, then
    ``upsert_many`` of ``batch``; words indexing only (chunks, full-text rows and postings, mentions)."""
    with database_urls() as url:
        single = _one_way(root / f"{backend}-single", url, names, docs, f"{backend}: upsert (1/tx)", None)
    with database_urls() as url:
        many = _one_way(root / f"{backend}-batched", url, names, docs, f"{backend}: upsert_many ({batch}/tx)", batch)
    assert single is not None
    return DocFigures(
        backend=backend,
        documents=len(docs),
        characters=sum(len(t) + len(b) for t, b in docs),
        single=single,
        batched=many,
        floor=run_documents_floor(root / f"{backend}-floor.db", docs, batch=batch),
    )


_FLOOR_DDL = """
CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc INTEGER NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE chunks_fts USING fts5(body, tokenize='porter unicode61 remove_diacritics 2');
"""


def run_documents_floor(path: Path, docs: Sequence[tuple[str, str]], *, batch: int) -> DocRun:
    """Plain ``sqlite3`` beside it: the same chunks (cut beforehand, not timed) into a chunk table and an
    FTS5 table with notochord's tokenizer, ``batch`` documents per transaction; no mentions, no changes."""
    pieces = [(title, [c.text for c in chunk_markdown(body)]) for title, body in docs]
    run = DocRun(chunks=sum(len(texts) for _, texts in pieces))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_FLOOR_DDL)
        started = time.perf_counter()
        for start in range(0, len(pieces), batch):
            conn.execute("BEGIN IMMEDIATE")
            for doc, (title, texts) in enumerate(pieces[start : start + batch], start=start):
                for idx, text in enumerate(texts):
                    row = conn.execute("INSERT INTO chunks (doc, idx, text) VALUES (?, ?, ?)", (doc, idx, text))
                    conn.execute(
                        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", (row.lastrowid, f"{title}\n\n{text}")
                    )
            conn.execute("COMMIT")
        run.seconds = time.perf_counter() - started
    finally:
        conn.close()
    return run


def report_documents(people_count: int, doc_batch: int, figures: DocFigures) -> None:
    chunks = figures.single.chunks
    table = Table(
        title=(
            f"documents on {figures.backend}: {figures.documents:,} notes of 12 paragraphs "
            f"(≈{figures.characters / max(figures.documents, 1):,.0f} characters, "
            f"≈{chunks / max(figures.documents, 1):.1f} chunks each), each paragraph naming 3 of {people_count:,} "
            "people; each way into a fresh space"
        ),
        title_justify="left",
    )
    table.add_column("figure")
    table.add_column("upsert (1 per tx)", justify="right")
    table.add_column(f"upsert_many ({doc_batch} per tx)", justify="right")
    table.add_column("batch / single", justify="right")
    table.add_column(f"sqlite3 + FTS5 ({doc_batch} per tx)", justify="right")
    many = figures.batched
    floor = figures.floor
    table.add_row("chunks", f"{chunks:,}", f"{many.chunks:,}" if many else "n/a", "", f"{floor.chunks:,}")
    table.add_row("mentions", f"{figures.single.mentions:,}", f"{many.mentions:,}" if many else "n/a", "", "—")
    table.add_row(
        "seconds",
        f"{figures.single.seconds:,.2f}",
        f"{many.seconds:,.2f}" if many else "n/a",
        "",
        f"{floor.seconds:,.2f}",
    )
    table.add_row(
        "chunks/s (words indexing)",
        f"{figures.single.rate:,.0f}",
        f"{many.rate:,.0f}" if many else "n/a",
        _ratio(many.rate, figures.single.rate) if many else "n/a",
        f"{floor.rate:,.0f}",
    )
    table.add_row(
        "÷ sqlite3 + FTS5 in the same run",
        _ratio(figures.single.rate, floor.rate),
        _ratio(many.rate, floor.rate) if many else "n/a",
        "",
        "1.00×",
    )
    console.print(table)
    if many and (many.chunks, many.mentions) != (chunks, figures.single.mentions):
        console.print("  [yellow]warning:[/yellow] the two ways stored different chunks or mentions")
    console.print(
        "  words indexing = chunks, full-text rows (and postings on PostgreSQL), mentions, one change per document; "
        "target: ≥ 1,000 chunks/s in batches"
    )
    console.print()


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

        def select(query: tuple[int, str | None]) -> None:
            subject, prefix = query
            if prefix is None:
                cursor = conn.execute(BASELINE_SELECT_ALL, (subject,))
            else:
                cursor = conn.execute(BASELINE_SELECT_PREFIX, (subject, prefix, _like_prefix(prefix)))
            found = [(r[0], r[2], json.loads(r[3])) for r in cursor]
            figures.rows_returned += len(found)

        with progress() as bar:
            sqlite3_writes(conn, bar, "sqlite3", specs, write, figures, timed=timed, batch=batch)
            figures.statuses = {"applied": len(specs)}

            for query in queries[:50]:
                conn.execute(BASELINE_SELECT_ALL, (query[0],)).fetchall()
            figures.lookup_latencies = timed_loop(bar, "sqlite3: SELECT", queries, select)
    finally:
        conn.close()
    figures.file_bytes = sum(p.stat().st_size for p in root.glob("baseline.db*"))
    return figures


# ------------------------------------------------------------------ sqlite3 writing notochord's rows


def _self_entity(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT id FROM entities WHERE kind = 'self'").fetchone()[0])
    finally:
        conn.close()


def _empty_copy(store: Path, target: Path) -> None:
    """A copy of the space's database (schema, indexes, entities, vocabulary) without its facts and
    changes: what the store held before the facts were written, as far as these rows care."""
    source = sqlite3.connect(store)
    copy = sqlite3.connect(target, isolation_level=None)
    try:
        source.backup(copy)
        copy.execute("PRAGMA foreign_keys=OFF")
        copy.executescript("DELETE FROM change_objects; DELETE FROM facts; DELETE FROM changes; VACUUM;")
    finally:
        source.close()
        copy.close()


ROWS_EXPIRE = (
    "UPDATE facts SET valid_to = ?, expired_by = ? WHERE subject_id = ? AND predicate = ? AND valid_to IS NULL "
    "AND id <> ? RETURNING id"
)
ROWS_FACT = (
    "INSERT INTO facts (subject_id, predicate, value_json, object_id, origin, source, source_ref, writer, pinned,"
    " valid_from, valid_to, recorded_at) VALUES (?, ?, ?, NULL, 'user', 'user', NULL, 'user', ?, ?, NULL, ?)"
)
ROWS_CHANGE = (
    "INSERT INTO changes (run_id, actor, op, target_type, target_id, summary, before_json, after_json,"
    " proposed_json, status, created_at) VALUES (NULL, 'user', 'facts.put', 'fact', ?, ?, NULL, ?, NULL, 'applied', ?)"
)
ROWS_OBJECT = "INSERT INTO change_objects (change_id, object_type, object_id) VALUES (?, 'fact', ?)"


def run_rows_floor(
    path: Path, specs: Sequence[FactSpec], subject_ids: Sequence[int], *, timed: int, batch: int
) -> Figures:
    """Plain ``sqlite3`` writing the rows notochord stores for the same facts into a copy of its own
    schema (its indexes and foreign keys, WAL, ``synchronous=NORMAL``): per fact the fact, its change
    and the change's touched objects, and for a ``one`` predicate the expiry of the value it replaces,
    recorded in the change. No reads, no checks, no duplicates to find: the storage work of the
    product's guarantees alone, the floor its Python path stands on."""
    figures = Figures()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")

        def write(spec: FactSpec) -> None:
            now = iso_utc(datetime.now(UTC))
            subject = subject_ids[spec.subject]
            value_json = json.dumps(spec.value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            shown = spec.value if isinstance(spec.value, str) else value_json
            summary = f"{spec.predicate} = {shown[:80]}"
            fact_id = conn.execute(
                ROWS_FACT, (subject, spec.predicate, value_json, spec.subject == 0, now, now)
            ).lastrowid
            change_id = conn.execute(ROWS_CHANGE, (fact_id, summary, value_json, now)).lastrowid
            replaced: list[int] = []
            if spec.predicate in ONE_PREDICATES:
                replaced = [r[0] for r in conn.execute(ROWS_EXPIRE, (now, change_id, subject, spec.predicate, fact_id))]
            conn.executemany(ROWS_OBJECT, [(change_id, fact) for fact in (*replaced, fact_id)])

        with progress() as bar:
            sqlite3_writes(conn, bar, "sqlite3, notochord's rows", specs, write, figures, timed=timed, batch=batch)
    finally:
        conn.close()
    figures.file_bytes = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return figures


# ------------------------------------------------------------------ report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def _ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}×" if base else "n/a"


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
        _ratio(ours.writes_per_second, base.writes_per_second),
        f"{rows.writes_per_second:,.0f}",
        _ratio(ours.writes_per_second, rows.writes_per_second),
    )
    for label, q in (("write p50", 50), ("write p95", 95)):
        mine, theirs, floor = (percentile(f.write_latencies, q) for f in (ours, base, rows))
        table.add_row(label, _ms(mine), _ms(theirs), _ratio(mine, theirs), _ms(floor), _ratio(mine, floor))
    table.add_row(
        f"batched writes/s ({batch} per tx, first {base.bulk_rows:,}; put_many)",
        f"{ours.bulk_per_second:,.0f}" if ours.bulk_rows else "n/a",
        f"{base.bulk_per_second:,.0f}",
        _ratio(ours.bulk_per_second, base.bulk_per_second) if ours.bulk_rows else "n/a",
        f"{rows.bulk_per_second:,.0f}",
        _ratio(ours.bulk_per_second, rows.bulk_per_second) if ours.bulk_rows else "n/a",
    )
    for label, q in (("lookup p50", 50), ("lookup p95", 95)):
        mine, theirs = percentile(ours.lookup_latencies, q), percentile(base.lookup_latencies, q)
        table.add_row(label, _ms(mine), _ms(theirs), _ratio(mine, theirs), "", "")
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
        _ratio(ours.file_bytes, base.file_bytes),
        f"{rows.file_bytes / 1e6:.1f} MB",
        _ratio(ours.file_bytes, rows.file_bytes),
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


def measure_documents(args: argparse.Namespace) -> dict[str, float]:
    """The documents measurement on each backend of ``--backend``; its headline figures."""
    headline: dict[str, float] = {}
    rng = random.Random(args.seed)
    names = people(args.people, rng)
    docs = notes(args.documents, names, rng)
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="notochord-bench-") as tmp:
        server: str | None = None
        if "postgresql" in backends:
            import postgres_server  # beside this script; starts a throwaway server unless one is named

            server = stack.enter_context(postgres_server.server_url())
        for backend in backends:

            def database_urls(backend: str = backend) -> contextlib.AbstractContextManager[str | None]:
                if backend == "sqlite":
                    return contextlib.nullcontext(None)
                assert server is not None
                return postgres_server.database_url(server)

            figures = run_documents(
                Path(tmp), names, docs, batch=args.doc_batch, backend=backend, database_urls=database_urls
            )
            report_documents(len(names), args.doc_batch, figures)
            where = "" if backend == "sqlite" else f" on {backend}"
            floor = figures.floor.rate
            headline[f"documents{where}: chunks/s (1 per tx)"] = figures.single.rate
            headline[f"documents{where}: chunks/s (1 per tx) / sqlite3 + FTS5"] = figures.single.rate / floor
            if figures.batched is not None:
                headline[f"documents{where}: chunks/s (batched)"] = figures.batched.rate
                headline[f"documents{where}: chunks/s (batched) / sqlite3 + FTS5"] = figures.batched.rate / floor
    return headline


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
