"""A write updates only the indexes a query reads (and the write targets; K-FACT,
K-CHG).

``changes.run_id`` holds only changes made in a run, ``changes (actor, created_at)`` and
``facts.writer`` only what the user did not write, and on SQLite ``change_objects`` is its own
primary key (``WITHOUT ROWID``). A user's fact write therefore appends fewer pages to the
write-ahead log, and every query that read those indexes still reads an index (SQLite's ``EXPLAIN
QUERY PLAN`` of the statements the product sends).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

import notochord
from notochord.clock import FixedClock
from notochord.db import migrate as migrate_module
from notochord.db.engine import create_sqlite_engine
from notochord.db.migrate import migrate
from notochord.db.schema import facts
from notochord.knowledge.fact_rows import written_by
from notochord.knowledge.writes import ASSISTANT, Actor
from notochord.settings import Settings


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        yield opened.personal


def _database(space: notochord.Space) -> str:
    database = space.core.store.engine.url.database
    assert database is not None
    return database


def _sent(space: notochord.Space, call: Any) -> list[tuple[str, Any]]:
    """The statements (with their parameters) ``call`` sends."""
    seen: list[tuple[str, Any]] = []

    def on_statement(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        seen.append((statement, parameters))

    engine = space.core.store.engine
    sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", on_statement)
    return seen


def _plan(space: notochord.Space, statement: str, parameters: Any) -> str:
    db = sqlite3.connect(_database(space))
    try:
        rows = db.execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
    finally:
        db.close()
    return "\n".join(str(r[-1]) for r in rows)


def _plans_of(space: notochord.Space, call: Any, table: str) -> list[str]:
    selects = [(s, p) for s, p in _sent(space, call) if s.lstrip().startswith("SELECT") and f"FROM {table}" in s]
    assert selects, f"the call read {table}"
    return [_plan(space, s, p) for s, p in selects]


def test_change_objects_is_its_own_primary_key_and_the_indexes_skip_the_users_rows(space: notochord.Space) -> None:
    """The schema after migration 0012."""
    db = sqlite3.connect(_database(space))
    try:
        schema = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
    finally:
        db.close()
    assert schema["change_objects"].rstrip().endswith("WITHOUT ROWID")
    assert "WHERE run_id IS NOT NULL" in schema["ix_changes_run_id"]
    assert "WHERE actor <> 'user'" in schema["ix_changes_actor_created_at"]
    assert "WHERE writer <> 'user'" in schema["ix_facts_writer"]


def _wal_frames(database: str) -> int:
    page_size = sqlite3.connect(database).execute("PRAGMA page_size").fetchone()[0]
    wal = Path(f"{database}-wal")
    return 0 if not wal.exists() or wal.stat().st_size == 0 else (wal.stat().st_size - 32) // (page_size + 24)


def test_a_users_fact_write_appends_at_most_seven_pages_to_the_log(space: notochord.Space) -> None:
    """The fact, its slot index, the change, its time index, its object and the
    object's index; before, also the writer, actor and run indexes and the objects' rowid table
    (ten or more pages a write)."""
    for n in range(20):
        space.user.facts.put(predicate="pref.food.like", value=f"warm-up {n}")
    database = _database(space)
    db = sqlite3.connect(database)
    try:
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    finally:
        db.close()
    assert _wal_frames(database) == 0
    writes = 20
    for n in range(writes):
        space.user.facts.put(predicate="pref.food.like", value=f"dish {n}")
    assert _wal_frames(database) <= 7 * writes


def test_listing_a_run_or_an_actors_changes_still_reads_an_index(space: notochord.Space) -> None:
    """``run_id = ?`` and a gem's or the assistant's changes use the partial indexes."""
    outcome = space.user.facts.put_many([{"predicate": "pref.food.like", "value": f"dish {n}"} for n in range(3)])
    space.as_assistant.facts.put(predicate="pref.food.like", value="soup")
    for plan in _plans_of(space, lambda: space.changes.list(run_id=outcome.run_id), "changes"):
        assert "USING INDEX ix_changes_run_id" in plan, plan
    for plan in _plans_of(space, lambda: space.changes.list(actor=str(ASSISTANT)), "changes"):
        assert "USING INDEX ix_changes_actor_created_at" in plan, plan
    assert len(space.changes.list(actor=str(ASSISTANT))) == 1
    assert len(space.changes.list(actor="user")) == 3


def test_undoing_a_run_reads_the_run_and_the_objects_through_indexes(space: notochord.Space) -> None:
    """Undo by run finds the run's changes by ``run_id`` and each change's objects
    by their key (the primary key of ``change_objects``, or its (type, id) index)."""
    outcome = space.user.facts.put_many([{"predicate": "location.home.city", "value": c} for c in ("Delft", "Lyon")])
    sent = _sent(space, lambda: space.changes.revert(run_id=outcome.run_id))
    reads = [(s, p) for s, p in sent if s.lstrip().startswith("SELECT")]
    by_run = [_plan(space, s, p) for s, p in reads if "changes.run_id" in s]
    assert by_run and all("USING INDEX ix_changes_run_id" in plan for plan in by_run), by_run
    objects = [_plan(space, s, p) for s, p in reads if "change_objects" in s]
    assert objects
    for plan in objects:
        assert "SCAN change_objects" not in plan, plan
    assert space.user.facts.lookup("self", "location") == []


def test_a_gems_facts_are_found_through_the_writer_index(space: notochord.Space) -> None:
    """What uninstalling a gem reads (its live facts) uses ``ix_facts_writer``,
    and the user's facts are still found by writer (without it)."""
    gem = Actor.gem("notes")
    space.user.facts.put(predicate="pref.food.like", value="tea")
    assert space.core.facts.put(actor=gem, predicate="pref.food.like", value="stew").status == "applied"
    for writer in ("gem:notes", "user"):
        query = sa.select(facts.c.id).where(written_by(writer), facts.c.valid_to.is_(None))
        compiled = query.compile(dialect=space.core.store.engine.dialect, compile_kwargs={"literal_binds": True})
        plan = _plan(space, str(compiled), ())
        if writer != "user":
            assert "USING INDEX ix_facts_writer" in plan, plan
        with space.core.store.read() as conn:
            assert len(conn.execute(query).all()) == 1


def test_a_store_written_before_the_lean_indexes_keeps_every_change_object(tmp_path: Path) -> None:
    """Migration 0012 rebuilds ``change_objects`` without losing or adding a row,
    and undo still finds a change's objects after it."""
    engine = create_sqlite_engine(tmp_path / "s.db", busy_timeout_ms=5000)
    config = Config()
    config.set_main_option("script_location", str(migrate_module._SCRIPTS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0011")
        for change_id in (1, 2):
            conn.execute(
                sa.text(
                    "INSERT INTO changes (id, run_id, actor, op, target_type, target_id, summary, status, created_at) "
                    "VALUES (:id, :run, 'user', 'facts.put', 'fact', :id, 's', 'applied', '2026-09-29T08:00:00.000Z')"
                ),
                {"id": change_id, "run": None if change_id == 1 else "r"},
            )
        rows = [(1, "fact", 1), (2, "fact", 2), (2, "fact", 1)]
        for row in rows:
            conn.execute(sa.text("INSERT INTO change_objects VALUES (:c, :t, :o)"), dict(zip("cto", row, strict=True)))
    migrate(engine)
    with engine.connect() as conn:
        kept = conn.execute(sa.text("SELECT change_id, object_type, object_id FROM change_objects")).all()
        ddl = conn.execute(sa.text("SELECT sql FROM sqlite_master WHERE name = 'change_objects'")).scalar_one()
        by_object = conn.execute(
            sa.text("SELECT change_id FROM change_objects WHERE object_type = 'fact' AND object_id = 1 ORDER BY 1")
        ).scalars()
        assert list(by_object) == [1, 2]
    engine.dispose()
    assert sorted(tuple(r) for r in kept) == sorted(rows)
    assert ddl.rstrip().endswith("WITHOUT ROWID")


def test_a_value_stored_with_spaces_before_the_canonical_rule_reads_as_a_duplicate_after_upgrade(
    tmp_path: Path, clock: FixedClock
) -> None:
    """OD-K17: a store whose "take theirs" wrote ``{"no": 2, "street": "Neude"}`` with spaces is
    upgraded to canonical JSON, so the same value said again is a duplicate, not a second copy."""
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        first = opened.personal.user.facts.put(predicate="location.home.address", value={"street": "Neude", "no": 2})
        other = opened.personal.user.facts.put(predicate="pref.note", value="a, b: c")
        database = _database(opened.personal)
    db = sqlite3.connect(database)
    try:
        with db:
            db.execute("UPDATE facts SET value_json = ? WHERE id = ?", ('{"no": 2, "street": "Neude"}', first.id))
            db.execute("UPDATE alembic_version SET version_num = '0012'")
    finally:
        db.close()
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        again = opened.personal.user.facts.put(predicate="location.home.address", value={"no": 2, "street": "Neude"})
        values = {f.id: f.value for f in opened.personal.user.facts.lookup("self", "")}
    assert again.status == "duplicate"
    assert values == {first.id: {"no": 2, "street": "Neude"}, other.id: "a, b: c"}
    db = sqlite3.connect(database)
    try:
        stored = dict(db.execute("SELECT id, value_json FROM facts").fetchall())
    finally:
        db.close()
    assert stored == {first.id: '{"no":2,"street":"Neude"}', other.id: '"a, b: c"'}


def test_a_document_date_stored_with_a_short_year_sorts_as_the_oldest_after_upgrade(
    tmp_path: Path, clock: FixedClock
) -> None:
    """OD-K39, K-SRCH-06: a store whose earlier version wrote the year 999 as ``999-…`` is upgraded
    to ``0999-…``, so the document sorts before today's and falls inside a range around its date."""
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        old = opened.personal.user.documents.upsert(
            collection="keep", title="Chronicle", body="a chronicle of the year 999", meta={"date": "0999-05-01"}
        )
        opened.personal.user.documents.upsert(collection="keep", title="Today", body="a chronicle of today")
        database = _database(opened.personal)
    db = sqlite3.connect(database)
    try:
        with db:
            (stored,) = db.execute("SELECT doc_date FROM documents WHERE id = ?", (old.id,)).fetchone()
            assert stored.startswith("0999-")
            db.execute("UPDATE documents SET doc_date = ? WHERE id = ?", (stored[1:], old.id))
            db.execute("UPDATE alembic_version SET version_num = '0013'")
    finally:
        db.close()
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        titles = [d.title for d in opened.personal.user.documents.list("keep")]
        found = opened.personal.user.search(
            "chronicle", collections=["keep"], time_range={"from": "0900-01-01", "to": "1000-01-01"}
        )
    assert titles == ["Today", "Chronicle"], "newest first"
    assert [hit.title for hit in found] == ["Chronicle"]
