"""Writes of a SQLite space run on one writer connection, with every guarantee of the pool path
(K-FACT, K-CHG, K-QUOTA).

The oracle is the pool path itself: the same operations on a second store whose writes each take a
pool connection, as every write did before (forced by the test, nowhere else). Random mixes of
puts, retracts, document upserts and reverts by change and by run must leave identical rows,
change records, results, look-ups and search results behind.
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import notochord
from notochord.clock import FixedClock
from notochord.db import writer
from notochord.db.schema import change_objects, changes, chunks, documents, facts, quota_usage
from notochord.errors import KnowledgeError, ReadOnlyStoreError, StorageError
from notochord.settings import Settings

PREDICATES = ["location.home.city", "pref.food.like", "contact.email"]
VALUES = ["tea", "coffee", "Paris", "Lyon", {"n": 1}]
WORDS = ["tea", "coffee", "paris", "lyon", "garden", "piano"]


@contextmanager
def _space(root: Path, clock: FixedClock, *, busy_ms: int = 30_000) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=root, index_in_background=False, sqlite_busy_timeout_ms=busy_ms)
    with notochord.open(root, settings, clock=clock, embedder=None) as opened:
        yield opened.personal


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    """A SQLite space (the writer connection is SQLite's; PostgreSQL writes keep their pool connections)."""
    with _space(tmp_path / "space", clock, busy_ms=200) as opened:
        yield opened


@contextmanager
def _pool_writes(engine: sa.Engine) -> Iterator[None]:
    """The oracle: ``engine``'s writes each take a pool connection (the path before the writer connection)."""
    original, pooled = writer._writer, engine
    writer._writer = lambda engine: None if engine is pooled else original(engine)
    try:
        yield
    finally:
        writer._writer = original


def _state(space: notochord.Space, subjects: list[Any]) -> dict[str, Any]:
    with space.core.store.read() as conn:
        tables: dict[str, list[object]] = {
            table.name: [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()]
            for table in (facts, changes, change_objects, documents, chunks, quota_usage)
        }
    tables["lookups"] = [_lookup(space, s) for s in subjects]
    tables["search"] = [[(h.document_id, h.chunk, h.score) for h in space.user.search(w)] for w in WORDS]
    return tables


def _lookup(space: notochord.Space, subject: Any) -> Any:
    try:
        return space.user.facts.lookup(subject)
    except KnowledgeError as error:  # a reverted entity creation: the subject is gone on both sides
        return type(error).__name__


def _step(space: notochord.Space, rng: random.Random, step: int, subjects: list[Any]) -> Any:
    kind = rng.random()
    try:
        if kind < 0.15:
            current = space.user.facts.lookup(rng.choice(subjects))
            return space.user.facts.retract(rng.choice(current).id) if current else None
        if kind < 0.3:
            with space.core.store.read() as conn:
                ids = [r.id for r in conn.execute(sa.select(changes.c.id).where(changes.c.status == "applied"))]
            if rng.random() < 0.5 and ids:
                return space.changes.revert(change_id=rng.choice(ids))
            return space.changes.revert(run_id=f"run-{rng.randrange(step + 1)}")
        if kind < 0.4:
            body = " ".join(rng.choice(WORDS) for _ in range(6))
            return space.user.documents.upsert(collection="keep", key=f"k{rng.randrange(3)}", title="t", body=body)
        facts_of = space.as_assistant.facts if rng.random() < 0.3 else space.user.facts
        if rng.random() < 0.3:
            items = [
                {"subject": rng.choice(subjects), "predicate": rng.choice(PREDICATES), "value": rng.choice(VALUES)}
                for _ in range(rng.randint(1, 5))
            ]
            return facts_of.put_many(items, run_id=f"run-{step}").results
        return facts_of.put(
            predicate=rng.choice(PREDICATES),
            value=rng.choice(VALUES),
            subject=rng.choice(subjects),
            run_id=f"run-{step}",
        )
    except KnowledgeError as error:
        return type(error).__name__, error.message


# each example opens two spaces: few examples, no shrinking (a failure names its seed and steps)
@settings(
    max_examples=5, deadline=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow]
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), steps=st.integers(min_value=5, max_value=15))
def test_the_writer_connection_stores_exactly_what_pool_writes_store(seed: int, steps: int) -> None:
    """The same random writes on the writer connection and on pool
    connections leave identical rows, change records, undo results, look-ups and search results."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
        with _space(root / "fast", clock) as fast, _space(root / "plain", clock) as plain:
            subjects: list[Any] = ["self"]
            for name in ("Anna", "Bob"):
                one = fast.user.entities.resolve(name=name, create=True)
                other = plain.user.entities.resolve(name=name, create=True)
                assert one is not None and other is not None and one.id == other.id
                subjects.append(one.id)
            rng_fast, rng_plain = random.Random(seed), random.Random(seed)
            for step in range(steps):
                got = _step(fast, rng_fast, step, subjects)
                with _pool_writes(plain.core.store.engine):
                    want = _step(plain, rng_plain, step, subjects)
                assert got == want, f"step {step}"
            assert _state(fast, subjects) == _state(plain, subjects)
            assert writer._WRITERS.get(fast.core.store.engine) is not None


def test_a_driver_error_on_the_writer_connection_is_the_projects_error(space: notochord.Space) -> None:
    """An error SQLite raises on the writer connection is translated as on
    the pool path (here: the database refuses writes), and nothing of the write stays behind."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    engine = space.core.store.engine
    held, driver = writer._WRITERS[engine].connection()
    assert driver is held.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.execute("PRAGMA query_only=ON")
    try:
        with pytest.raises(ReadOnlyStoreError, match="the store is read-only"):
            space.user.facts.put(predicate="pref.food.like", value="coffee")
    finally:
        driver.execute("PRAGMA query_only=OFF")
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["tea"]
    assert space.user.facts.put(predicate="pref.food.like", value="coffee").status == "applied"
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["tea", "coffee"]


def test_writers_on_many_threads_take_turns_and_the_quota_counts_each(tmp_path: Path, clock: FixedClock) -> None:
    """Writes from several threads at once all land, one at a time on
    the writer connection, and the assistant's daily quota counts every one of them exactly.

    With the default wait: a thread's turn may come late on a busy machine, and the short wait of
    this module's other space would refuse it as busy, which is that setting working, not a lost turn."""
    with _space(tmp_path / "space", clock) as space:
        _write_from_four_threads(space)


def _write_from_four_threads(space: notochord.Space) -> None:
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(15):
                space.as_assistant.facts.put(predicate="x.thread.note", value=f"{n}-{i}")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(space.user.facts.lookup("self", "x.thread")) == 60
    with space.core.store.read() as conn:
        used = conn.execute(sa.select(quota_usage.c.writes).where(quota_usage.c.writer == "assistant")).scalar()
    assert used == 60


def test_a_write_nested_in_a_write_of_the_same_thread_meets_the_lock_as_before(space: notochord.Space) -> None:
    """A second write transaction opened inside a first one on the same
    thread does not hang on the writer connection: it meets SQLite's write lock after the busy
    timeout, as it always did, and the outer write still commits."""
    engine = space.core.store.engine
    with writer.write_session(engine) as outer:
        outer.execute(sa.insert(quota_usage).values(writer="gem:x", day="2026-09-29", writes=1, chars=1))
        with pytest.raises(StorageError, match="locked"), writer.write_session(engine) as inner:
            inner.execute(sa.insert(quota_usage).values(writer="gem:y", day="2026-09-29", writes=1, chars=1))
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(quota_usage.c.writer)).scalars().all() == ["gem:x"]


def test_closing_the_space_closes_the_writer_connection(tmp_path: Path, clock: FixedClock) -> None:
    """After the last write and close, the database is whole in its file
    (no write-ahead log left), so it can be opened read-only again."""
    with _space(tmp_path, clock) as space:
        space.user.facts.put(predicate="pref.food.like", value="tea")
        engine = space.core.store.engine
        assert writer._WRITERS[engine]._conn is not None
    assert writer._WRITERS.get(engine) is None or writer._WRITERS[engine]._conn is None
    assert not list(tmp_path.rglob("*.db-wal"))


def test_an_engine_disposed_of_inside_a_write_closes_the_writer_connection_after_it(space: notochord.Space) -> None:
    """Disposing of the engine while this thread writes lets that write
    commit, then closes the writer connection (the next write opens a new one)."""
    engine = space.core.store.engine
    with writer.write_session(engine) as conn:
        conn.execute(sa.insert(quota_usage).values(writer="gem:x", day="2026-09-29", writes=1, chars=1))
        engine.dispose()
    assert writer._WRITERS[engine]._conn is None
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(quota_usage.c.writer)).scalars().all() == ["gem:x"]
    assert space.user.facts.put(predicate="pref.food.like", value="tea").status == "applied"
