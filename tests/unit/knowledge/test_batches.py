"""Facts and documents written in batches through the host API (K-FACT, K-DOC, K-CHG, K-QUOTA).

A batch is one transaction; each item is still its own counted write and its own change, undone
alone or with the whole batch; a refused item names its index and leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from notochord import KnowledgeQuotaError, KnowledgeValidationError, Space
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.quotas import DailyLimits, usage
from sent_sql import statements_sent

# PostgreSQL's write lock is part of how a write transaction begins there; left out, a transaction's
# start is its one BEGIN entry on both backends
_WRITE_LOCK = "SELECT pg_advisory_xact_lock"


@contextmanager
def statements(space: Space) -> Iterator[list[str]]:
    """Every SQL statement the space's engine sends while the block runs, each transaction's start as
    one entry starting with ``BEGIN`` whatever the backend (SQLite sends ``BEGIN`` or ``BEGIN
    IMMEDIATE``; PostgreSQL begins implicitly and a write then takes its lock, left out here)."""
    with statements_sent(space.core.store.engine, begins=True) as seen:
        yield seen
    seen[:] = [s for s in seen if not s.startswith(_WRITE_LOCK)]


def _count(space: Space, table: str) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.text(f"select count(*) from {table}")).scalar_one())


def _transactions(seen: list[str]) -> int:
    return sum(1 for s in seen if s.startswith("BEGIN"))


# ------------------------------------------------------------------ facts


def test_put_many_writes_every_fact_in_one_transaction_each_with_its_own_change(space: Space) -> None:
    """Results come in order and mean what single puts mean: the repeated value is a duplicate."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    changes_before = _count(space, "changes")
    with statements(space) as seen:
        outcome = space.user.facts.put_many(
            [
                {"predicate": "pref.food.like", "value": "tea"},
                {"predicate": "location.home.city", "value": "Delft", "subject": anna.id},
                {"predicate": "pref.food.like", "value": "tea"},
                {"predicate": "x.hobby", "value": "chess"},
            ]
        )
    assert _transactions(seen) == 1
    assert [r.status for r in outcome.results] == ["applied", "applied", "duplicate", "applied"]
    assert outcome.results[2].id == outcome.results[0].id
    assert _count(space, "changes") == changes_before + 3
    assert {c.run_id for c in space.changes.list(limit=3)} == {outcome.run_id}
    assert outcome.run_id.startswith("batch-")
    assert [f.value for f in space.user.facts.lookup(anna.id)] == ["Delft"]


def test_a_refused_fact_names_its_index_and_nothing_of_the_batch_is_written(space: Space) -> None:
    """All or nothing: not even the predicate the first item declared stays in the vocabulary."""
    changes_before = _count(space, "changes")
    with pytest.raises(BatchItemError) as refused:
        space.user.facts.put_many(
            [
                {"predicate": "x.brand_new", "value": 1},
                {"predicate": "pref.food.like", "value": "tea"},
                {"predicate": "pref.food.like", "value": {"huge": "x" * 70_000}},
            ]
        )
    assert refused.value.index == 2
    assert "exceeds limit" in refused.value.problem
    assert "item 2" in refused.value.message
    assert isinstance(refused.value, KnowledgeValidationError)
    assert _count(space, "facts") == 0
    assert _count(space, "changes") == changes_before
    with space.core.store.read() as conn:
        assert space.core.vocabulary.get(conn, "x.brand_new") is None


@pytest.mark.parametrize(
    ("items", "index", "problem"),
    [
        ([{"predicate": "pref.food.like", "value": 1}, {"value": 2}], 1, "predicate is required"),
        ([{"predicate": "pref.food.like", "value": 1, "colour": "red"}], 0, "unknown argument(s) colour"),
        ([{"predicate": "pref.food.like", "value": 1}, "tea"], 1, "must be a mapping"),
        ([{"predicate": "pref.food.like", "value": 1, "subject": 999_999}], 0, "not found"),
        ([{"predicate": "pref.food.like", "value": 1, "source": "inferred"}], 0, "not inferred"),
    ],
)
def test_every_kind_of_refused_fact_item_names_its_index(
    space: Space, items: list[Any], index: int, problem: str
) -> None:
    with pytest.raises(BatchItemError) as refused:
        space.user.facts.put_many(items)
    assert refused.value.index == index
    assert problem in refused.value.problem
    assert _count(space, "facts") == 0


def test_a_fact_of_a_batch_is_undone_alone_and_the_batch_as_its_run(space: Space) -> None:
    """K-CHG: revert one change, then the whole run; a caller's run id is kept."""
    outcome = space.user.facts.put_many(
        [{"predicate": "pref.food.like", "value": v} for v in ("tea", "soup", "rice")], run_id="import-7"
    )
    assert outcome.run_id == "import-7"
    space.changes.revert(outcome.results[1].change_id)
    assert sorted(f.value for f in space.user.facts.lookup("self", "pref")) == ["rice", "tea"]
    result = space.changes.revert(run_id="import-7")
    assert result.count == 2
    assert space.user.facts.lookup("self", "pref") == []


def test_a_batch_is_charged_one_write_per_item_and_refused_whole_when_it_does_not_fit(space: Space) -> None:
    """K-QUOTA: the assistant's batch of three counts three writes and their characters; a batch
    that would pass the daily limit midway is refused, and nothing of it is counted or written."""
    store = space.core.store
    space.as_assistant.facts.put_many([{"predicate": "pref.food.like", "value": v} for v in ("ab", "cd", "ab")])
    with store.read() as conn:
        assert usage(conn, writer="assistant", day=store.today()) == (3, 12)
    for i in range(495):
        space.as_assistant.facts.put(predicate="pref.food.like", value=f"dish {i}")
    with pytest.raises(KnowledgeQuotaError):
        space.as_assistant.facts.put_many([{"predicate": "pref.food.like", "value": f"late {i}"} for i in range(3)])
    with store.read() as conn:
        assert usage(conn, writer="assistant", day=store.today())[0] == 498
    assert len(space.user.facts.lookup("self", "pref")) == 497
    assert DailyLimits().writes == 500


def test_one_put_reaches_the_store_in_one_transaction_of_at_most_nine_statements(space: Space) -> None:
    """Fewer round trips per single put (was two transactions and twelve
    statements, the subject looked up twice)."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="pref.food.like", value="warm-up", subject=anna.id)
    with statements(space) as seen:
        assert space.user.facts.put(predicate="pref.food.like", value="tea", subject=anna.id).status == "applied"
    assert _transactions(seen) == 1
    assert len(seen) <= 9, seen


def test_a_batch_looks_its_subject_up_once(space: Space) -> None:
    """Ten facts about one person: the person is looked up at most once (the data versions once for
    the batch, then four statements each: the duplicate check, the fact, its change, its object)."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    space.user.facts.put(predicate="pref.food.like", value="warm-up", subject=anna.id)
    with statements(space) as seen:
        space.user.facts.put_many([{"predicate": "pref.food.like", "value": n, "subject": anna.id} for n in range(10)])
    assert len(seen) <= 1 + 1 + 10 * 4, seen
    assert len([s for s in seen if s.startswith("SELECT entities.kind")]) <= 1


def test_inside_a_batch_a_merge_is_followed_by_the_next_write(space: Space) -> None:
    """A remembered look-up is forgotten when an entity changes in the same batch."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    annie = space.user.entities.resolve(name="Annie", create=True)
    assert anna is not None and annie is not None
    with space.core.store.batch():
        space.user.facts.put(predicate="pref.food.like", value="tea", subject=annie.id)
        space.core.entities.merge(actor=space.user.actor, keep=anna.id, merge=annie.id)
        late = space.user.facts.put(predicate="pref.food.like", value="soup", subject=annie.id)
    assert space.user.facts.get(late.id).subject == anna.id
    assert sorted(f.value for f in space.user.facts.lookup(anna.id)) == ["soup", "tea"]


# ------------------------------------------------------------------ documents


def test_upsert_many_writes_every_document_in_one_transaction_each_with_its_own_change(space: Space) -> None:
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    first = space.user.documents.upsert(collection="keep", key="k1", title="old", body="old text")
    with statements(space) as seen:
        outcome = space.user.documents.upsert_many(
            [
                {"collection": "keep", "key": "k1", "title": "new", "body": "Anna writes."},
                {"collection": "keep", "title": "notes", "body": "Anna again.", "meta": {"path": "a.md"}},
                {"collection": "keep", "key": "k1", "title": "new", "body": "Anna writes."},
            ]
        )
    assert _transactions(seen) == 1
    assert [r.status for r in outcome.results] == ["updated", "created", "unchanged"]
    assert outcome.results[0].id == first.id
    assert [h.document_id for h in space.user.search("Anna", entities=[anna.id], group_by="document")] != []
    assert {c.run_id for c in space.changes.list(limit=2)} == {outcome.run_id}


def test_one_document_upsert_reaches_the_store_in_one_transaction(space: Space) -> None:
    """Naming the collection, finding the key and writing share one transaction
    (they were three)."""
    space.user.documents.upsert(collection="keep", key="warm-up", title="t", body="warm-up")
    with statements(space) as seen:
        space.user.documents.upsert(collection="keep", key="k", title="t", body="one chunk")
    assert _transactions(seen) == 1


def test_a_refused_document_names_its_index_and_nothing_of_the_batch_is_written(space: Space) -> None:
    before = (_count(space, "documents"), _count(space, "chunks"), _count(space, "changes"))
    with pytest.raises(BatchItemError) as refused:
        space.user.documents.upsert_many(
            [
                {"collection": "keep", "title": "fine", "body": "fine"},
                {"collection": "keep", "title": "both", "body": "x", "text": "y", "source_uri": "file:///y"},
            ]
        )
    assert refused.value.index == 1
    assert "not both" in refused.value.problem
    assert (_count(space, "documents"), _count(space, "chunks"), _count(space, "changes")) == before
    with pytest.raises(BatchItemError) as missing:
        space.user.documents.upsert_many([{"collection": "keep", "body": "a"}, {"collection": 987_654, "body": "b"}])
    assert missing.value.index == 1
    assert _count(space, "documents") == before[0]


def test_a_document_of_a_batch_is_undone_alone_and_the_batch_as_its_run(space: Space) -> None:
    outcome = space.user.documents.upsert_many(
        [{"collection": "keep", "title": t, "body": f"about {t}"} for t in ("one", "two", "three")]
    )
    space.changes.revert(outcome.results[0].change_id)
    assert sorted(d.title for d in space.user.documents.list("keep")) == ["three", "two"]
    assert space.changes.revert(run_id=outcome.run_id).count == 2
    assert space.user.documents.list("keep") == []


def test_a_document_batch_is_charged_one_write_per_item(space: Space) -> None:
    """K-QUOTA: characters are the titles and texts of every item, unchanged ones included."""
    store = space.core.store
    items = [{"collection": "keep", "key": "a", "title": "t", "body": "body"}] * 2
    space.as_assistant.documents.upsert_many(items)
    with store.read() as conn:
        assert usage(conn, writer="assistant", day=store.today()) == (2, 10)
