"""A batch of new documents costs a fixed number of statements, whatever its documents and chunks
.

``upsert_many`` decides, charges and records each document in its turn, and then writes, once for
the whole batch, the documents' rows, their change records with the objects those touched, the
chunks, their full-text rows (and postings on PostgreSQL) and the mentions: the number of
statements depends neither on how many documents the batch creates nor on how many chunks or
mentions they hold. Counted on the space's engine with SQLAlchemy events (the bulk writes announce
themselves there too), on both backends (K-DOC, K-CHG).
"""

from __future__ import annotations

from typing import Any

import pytest
from walk_harness import counted

from notochord import Space
from postgres_server import BACKENDS

# the write lock's own statements are not the walk's
LOCKING = ("BEGIN", "SELECT pg_advisory_xact_lock", "SET TRANSACTION")

PARAGRAPH = "Anna Bakker and Bram de Vries met Chen Wei about the quarterly report; Anna Bakker paid. " * 4


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _items(collection: int, count: int, paragraphs: int, tag: str) -> list[dict[str, Any]]:
    body = "\n\n".join(f"{tag} {n}: {PARAGRAPH}" for n in range(paragraphs))
    return [{"collection": collection, "title": f"{tag} {n}", "body": body} for n in range(count)]


def _walk(space: Space, items: list[dict[str, Any]]) -> tuple[int, list[str]]:
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        outcome = space.user.documents.upsert_many(items)
    assert [r.status for r in outcome.results] == ["created"] * len(items)
    return walk.transactions, walk.statements


def _chunks(space: Space) -> int:
    with space.core.store.read() as conn:
        return sum(1 for _ in conn.exec_driver_sql("SELECT id FROM chunks"))


def _recorded(change_id: int | None) -> int:
    """The id of the change a write recorded (every write here records one)."""
    assert change_id is not None
    return change_id


def test_the_statements_of_a_batch_do_not_depend_on_its_chunks(space: Space) -> None:
    """20 one-chunk documents and 20 documents of about 8 chunks each, mentioning
    three people in every paragraph, take the same statements, a constant number for the batch: the
    documents' rows in one statement, their 20 change records in another."""
    for name in ("Anna Bakker", "Bram de Vries", "Chen Wei"):
        space.user.entities.resolve(name=name, create=True)
    notes = space.user.collections.create("notes")
    space.user.documents.upsert_many(_items(notes.id, 2, 1, "warm-up"))

    short_tx, short = _walk(space, _items(notes.id, 20, 1, "short"))
    before = _chunks(space)
    long_tx, long = _walk(space, _items(notes.id, 20, 24, "long"))

    assert _chunks(space) - before >= 8 * 20, "the long documents have many chunks each"
    assert short_tx == long_tx == 1
    assert len(long) == len(short), "\n".join(long)
    assert len(long) <= 16, "\n".join(long)
    for table in ("documents ", "changes ", "chunks ", "mentions ", "change_objects "):
        assert sum(table in s and s.startswith(("INSERT", "COPY")) for s in long) == 1, (table, long)


def test_the_statements_of_a_batch_do_not_depend_on_its_documents(space: Space) -> None:
    """K-DOC, K-CHG: 10 new documents and 40 take the same statements, and each of
    the 40 still has its own change record, in the order of the items."""
    space.user.entities.resolve(name="Anna Bakker", create=True)
    notes = space.user.collections.create("notes")
    space.user.documents.upsert_many(_items(notes.id, 2, 1, "warm-up"))

    _, few = _walk(space, _items(notes.id, 10, 2, "few"))
    with counted(space.core.store.engine, ignore=LOCKING) as walk:
        outcome = space.user.documents.upsert_many(_items(notes.id, 40, 2, "many"))

    assert len(walk.statements) == len(few), "\n".join(walk.statements)
    changes = [_recorded(r.change_id) for r in outcome.results]
    assert changes == sorted(changes)
    assert [r.id for r in outcome.results] == sorted(r.id for r in outcome.results)
    listed = {c.id: c for c in space.changes.list(limit=40)}
    for result in outcome.results:
        change = listed[_recorded(result.change_id)]
        assert change.summary.startswith("created document many") and change.target_id == result.id


def test_updating_documents_in_a_batch_removes_their_old_chunks_in_a_few_statements(space: Space) -> None:
    """Replacing 10 long documents removes their old chunks, full-text rows,
    mentions and vectors by document, in the same statements as replacing 10 short ones."""
    space.user.entities.resolve(name="Anna Bakker", create=True)
    keep = space.user.collections.create("keep-these")
    short = [dict(i, key=f"s{n}") for n, i in enumerate(_items(keep.id, 10, 1, "short"))]
    long = [dict(i, key=f"l{n}") for n, i in enumerate(_items(keep.id, 10, 24, "long"))]
    space.user.documents.upsert_many(short + long)

    def rewrite(items: list[dict[str, Any]]) -> list[str]:
        with counted(space.core.store.engine, ignore=LOCKING) as walk:
            outcome = space.user.documents.upsert_many([dict(i, body=i["body"] + " (edited)") for i in items])
        assert [r.status for r in outcome.results] == ["updated"] * len(items)
        return walk.statements

    assert len(rewrite(long)) == len(rewrite(short))
