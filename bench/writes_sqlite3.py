"""The plain ``sqlite3`` sides of ``bench/writes.py``: the one-table baseline, and the floor that
writes notochord's own rows into a copy of its schema.

Helpers only; run ``bench/writes.py``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.progress import Progress

from notochord.clock import iso_utc
from writes_data import ONE_PREDICATES, FactSpec
from writes_measure import Figures, batched, progress, timed_loop


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


def self_entity(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT id FROM entities WHERE kind = 'self'").fetchone()[0])
    finally:
        conn.close()


def empty_copy(store: Path, target: Path) -> None:
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
