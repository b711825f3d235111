"""Batches large enough to be written in multi-row statements and to read their slots in chunks of
keys store exactly what single puts store (K-FACT, K-CHG, K-QUOTA).

A batch's facts, changes and touched objects go in statements of a fixed number of rows plus one
for the rest, and its slots are read a fixed number of keys at a time, the last chunk filled up
with repeated keys (:mod:`notochord.knowledge.many_rows`). Seeded batches of a few hundred items
(several full chunks and a rest; ``one`` values replaced, duplicates, objects, the assistant's
conflicts with the user's values) on two stores: one through ``put_many``, the other through
``put`` per item inside one ``Store.batch``. Results, facts, changes, touched objects and the
quota counter must be identical, ids included.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa

import notochord
from notochord.db.schema import change_objects, changes, facts
from notochord.knowledge.many_rows import KEYS_PER_STATEMENT, ROWS_PER_STATEMENT, insert_rows
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, usage
from notochord.knowledge.writes import ASSISTANT, USER, Actor

PREDICATES = ["location.home.city", "work.title", "pref.food.like", "contact.email", "x.note"]


def _rows(space: notochord.Space) -> dict[str, list[tuple[Any, ...]]]:
    with space.core.store.read() as conn:
        return {
            name: [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()]
            for name, table in (("facts", facts), ("changes", changes), ("objects", change_objects))
        }


def _people(space: notochord.Space) -> list[Any]:
    ids: list[Any] = ["self"]
    for n in range(30):
        person = space.user.entities.resolve(name=f"Person {n}", create=True)
        assert person is not None
        ids.append(person.id)
    return ids


def _items(rng: random.Random, subjects: list[Any], count: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for _ in range(count):
        item: dict[str, Any] = {
            "subject": rng.choice(subjects),
            "predicate": rng.choice(PREDICATES),
            "value": rng.choice(["tea", "Lyon", "小笼包", {"n": rng.randrange(3)}, rng.randrange(40)]),
        }
        if rng.random() < 0.1:
            item["object_id"] = rng.choice(subjects[1:])
        items.append(item)
    return items


@pytest.mark.parametrize("seed", [1, 2])
def test_a_batch_of_several_chunks_stores_exactly_what_single_puts_store(two: list[notochord.Space], seed: int) -> None:
    """K-FACT, K-CHG, K-QUOTA: batches of a few full chunks and a rest, by the user and then by the
    assistant (whose ``one`` values conflict with the user's), equal single puts row for row."""
    fast, plain = two
    subjects = _people(fast)
    assert _people(plain) == subjects
    rng = random.Random(seed)
    actor: Actor
    for actor, count in ((USER, 3 * ROWS_PER_STATEMENT + 37), (ASSISTANT, 2 * KEYS_PER_STATEMENT + 63)):
        items = _items(rng, subjects, count)
        limits = None if actor.is_user else DailyLimits(writes=10_000)
        batched = fast.core.facts.put_many(items, actor=actor, run_id=f"run-{count}", limits=limits).results
        with plain.core.store.batch():
            single = [plain.core.facts.put(actor=actor, run_id=f"run-{count}", limits=limits, **item) for item in items]
        assert batched == single
        assert {r.status for r in batched} >= {"applied", "duplicate"}
        assert _rows(fast) == _rows(plain)
        with fast.core.store.read() as a, plain.core.store.read() as b:
            day = fast.core.store.today()
            assert usage(a, writer=str(actor), day=day) == usage(b, writer=str(actor), day=day)
    assert any(r.status == "conflict" for r in batched)


_NOTES = sa.Table(
    "notes",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("writer", sa.Text, nullable=False),
    sa.Column("run_id", sa.Text),
    sa.Column("at", sa.Text, nullable=False),
)
_NOTE_COLUMNS = ("id", "body", "writer", "run_id", "at")


def _stored_notes(rows: list[tuple[Any, ...]], *, shared: frozenset[str]) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The rows of ``notes`` after :func:`insert_rows` of ``rows``, and the INSERT texts it sent."""
    engine = sa.create_engine("sqlite://")
    _NOTES.metadata.create_all(engine)
    sent: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("INSERT"):
            sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    with engine.begin() as conn:
        insert_rows(conn, Prepared(sa.insert(_NOTES)), _NOTES, _NOTE_COLUMNS, rows, shared=shared)
        stored = [tuple(r) for r in conn.execute(sa.select(_NOTES).order_by(_NOTES.c.id))]
    return stored, sent


def _notes(count: int) -> list[tuple[Any, ...]]:
    return [(n + 1, f"note {n} ✓", "gem:kb", None, "2026-12-02T10:00:00.000Z") for n in range(count)]


def test_rows_agreeing_on_their_shared_columns_are_stored_as_they_are_given() -> None:
    """A statement whose rows all hold one writer, run and time binds those once; the rows stored
    are the rows given, value for value, in every chunk size and the rest."""
    rows = _notes(ROWS_PER_STATEMENT + ROWS_PER_STATEMENT // 4 + 3)
    stored, sent = _stored_notes(rows, shared=frozenset({"writer", "run_id", "at"}))
    assert stored == rows
    assert sum("SELECT" in s for s in sent) == 2  # one full statement, one of a quarter as many rows


def test_rows_that_differ_in_a_shared_column_keep_their_own_values() -> None:
    """One row of a chunk with another writer, or a run where the others have none: that chunk goes
    row by row with every value bound, and no row takes another's value."""
    rows = _notes(2 * ROWS_PER_STATEMENT)
    rows[5] = (*rows[5][:2], "user", *rows[5][3:])
    rows[ROWS_PER_STATEMENT + 9] = (*rows[ROWS_PER_STATEMENT + 9][:3], "run-7", rows[ROWS_PER_STATEMENT + 9][4])
    stored, sent = _stored_notes(rows, shared=frozenset({"writer", "run_id", "at"}))
    assert stored == rows
    assert not any("SELECT" in s for s in sent)
    mixed = rows[:ROWS_PER_STATEMENT] + _notes(2 * ROWS_PER_STATEMENT)[ROWS_PER_STATEMENT:]
    stored, sent = _stored_notes(mixed, shared=frozenset({"writer", "run_id", "at"}))
    assert stored == mixed
    assert ["SELECT" in s for s in sent] == [False, True]


@pytest.mark.parametrize("shared", [frozenset(_NOTE_COLUMNS), frozenset({"title"})], ids=["every column", "no column"])
def test_shared_columns_that_leave_nothing_to_bind_once_or_per_row_bind_every_value(shared: frozenset[str]) -> None:
    """Naming every column, or none of the table's, as shared is no reason to fail: the rows go with
    every value bound."""
    rows = _notes(ROWS_PER_STATEMENT + 1)
    stored, sent = _stored_notes(rows, shared=shared)
    assert stored == rows
    assert not any("SELECT" in s for s in sent)
