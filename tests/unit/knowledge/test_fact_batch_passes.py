"""``put_many`` works in passes over the whole batch and still writes exactly what single puts write
(K-FACT, K-CHG, K-QUOTA).

A batch validates every item first, then charges and resolves them in order, reads the entities it
names and the counter of the writer's quota once each, and decides in memory. What callers see
stays what one put per item gives: the first refused item is the one a loop of puts would refuse
(a bad text is refused where it enters, before anything is read), a merged entity's facts land on
the entity it was merged into, a deleted one is not found, and the quota counts each item exactly.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import sqlalchemy as sa

from notochord import KnowledgeQuotaError, KnowledgeValidationError, Space
from notochord.db.schema import facts
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, usage
from notochord.knowledge.writes import ASSISTANT
from sent_sql import statements_sent


def _people(space: Space, count: int) -> list[int]:
    ids = []
    for n in range(count):
        person = space.user.entities.resolve(name=f"Person {n}", create=True)
        assert person is not None
        ids.append(person.id)
    return ids


def _fact_count(space: Space) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(facts)).scalar_one())


def test_a_text_holding_nul_is_refused_at_its_own_item_before_a_later_items_problem(space: Space) -> None:
    """The origin of item 0 holds U+0000 and item 1 has no value; the batch names
    item 0 (the text is refused where it enters, not when its row is sent) and writes nothing."""
    items: list[dict[str, Any]] = [
        {"predicate": "pref.food.like", "value": "tea", "source_ref": "chat\x00log"},
        {"predicate": "pref.food.like"},
    ]
    with pytest.raises(BatchItemError) as refused:
        space.user.facts.put_many(items)
    assert refused.value.index == 0
    assert "sourceRef" in refused.value.problem and "NUL" in refused.value.problem
    assert _fact_count(space) == 0


def test_an_unknown_entity_is_refused_before_a_later_items_bad_arguments(space: Space) -> None:
    """Item 1 names no entity, item 2 has no value: item 1 is the one refused,
    as a loop of puts would refuse it, though all items are validated before any is resolved."""
    items: list[dict[str, Any]] = [
        {"predicate": "pref.food.like", "value": "tea"},
        {"predicate": "pref.food.like", "value": "tea", "subject": 987_654},
        {"predicate": "pref.food.like"},
    ]
    with pytest.raises(BatchItemError) as refused:
        space.user.facts.put_many(items)
    assert refused.value.index == 1
    assert "entity" in refused.value.problem
    assert _fact_count(space) == 0


def test_a_batch_about_many_entities_reads_them_in_a_constant_number_of_statements(space: Space) -> None:
    """40 facts about 40 entities not looked up since they were created read the
    entities in one statement, and the entities merged into them in one more."""
    people = _people(space, 40)
    items = [{"predicate": "pref.food.like", "value": "tea", "subject": p} for p in people]
    with statements_sent(space.core.store.engine) as statements:
        results = space.user.facts.put_many(items).results
    assert [r.status for r in results] == ["applied"] * 40
    reads = [s for s in statements if "FROM entities" in s]
    assert len(reads) <= 2, "\n".join(reads)


def test_a_merged_entity_in_a_batch_writes_on_the_kept_one_and_a_deleted_one_is_not_found(space: Space) -> None:
    """K-ENT-12, K-ENT-13: facts about (and pointing at) a merged-away id land on
    the kept entity, as single puts land them; an item about a deleted entity names its index."""
    kept, merged, deleted = _people(space, 3)
    space.user.entities.merge(keep=kept, merge=merged)
    space.user.entities.delete(deleted)
    results = space.user.facts.put_many(
        [
            {"predicate": "pref.food.like", "value": "tea", "subject": merged},
            {"predicate": "relation.friend", "value": None, "object": merged},
            {"predicate": "pref.food.like", "value": "tea", "subject": kept},
        ]
    ).results
    assert [r.status for r in results] == ["applied", "applied", "duplicate"]
    assert results[2].id == results[0].id
    [friend] = space.user.facts.lookup("self", "relation.friend")
    assert friend.object == kept
    before = _fact_count(space)
    with pytest.raises(BatchItemError) as refused:
        space.user.facts.put_many(
            [
                {"predicate": "pref.food.like", "value": "coffee", "subject": kept},
                {"predicate": "pref.food.like", "value": "coffee", "subject": deleted},
            ]
        )
    assert refused.value.index == 1
    assert _fact_count(space) == before


def test_the_quota_counts_each_item_of_a_batch_and_reads_its_counter_once(space: Space) -> None:
    """K-QUOTA: the assistant's batch of 5 is charged 5 writes and their
    characters, with one read and one write of the counter; a batch that goes over the limit is
    refused whole and leaves the counter as it was."""
    limits = DailyLimits(writes=7)
    items = [{"predicate": "pref.food.like", "value": f"dish {n}"} for n in range(5)]
    with statements_sent(space.core.store.engine) as statements:
        space.core.facts.put_many(items, actor=ASSISTANT, limits=limits)
    assert len([s for s in statements if "quota_usage" in s]) == 2, "\n".join(statements)
    day = space.core.store.today()
    chars = sum(len(f'"dish {n}"') for n in range(5))
    with space.core.store.read() as conn:
        assert usage(conn, writer="assistant", day=day) == (5, chars)
    more = [{"predicate": "pref.food.like", "value": f"more {n}"} for n in range(3)]
    with pytest.raises(KnowledgeQuotaError):
        space.core.facts.put_many(more, actor=ASSISTANT, limits=limits)
    with space.core.store.read() as conn:
        assert usage(conn, writer="assistant", day=day) == (5, chars)
    space.core.facts.put_many(more[:2], actor=ASSISTANT, limits=limits)
    with space.core.store.read() as conn:
        assert usage(conn, writer="assistant", day=day) == (7, chars + 2 * len('"more 0"'))


def test_a_batch_leaves_the_cycle_collector_as_it_found_it(space: Space) -> None:
    """The collector paused for a batch runs again after it, whether the batch
    wrote or was refused, and stays off when the caller had turned it off."""
    assert gc.isenabled()
    space.user.facts.put_many([{"predicate": "pref.food.like", "value": "tea"}])
    assert gc.isenabled()
    with pytest.raises(BatchItemError):
        space.user.facts.put_many([{"predicate": "pref.food.like"}])
    assert gc.isenabled()
    gc.disable()
    try:
        space.user.facts.put_many([{"predicate": "pref.food.like", "value": "coffee"}])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_rows_sent_as_tuples_keep_their_columns_and_unchecked_ones_are_refused_for_nul(space: Space) -> None:
    """A statement run with value tuples writes each value into its named column
    whatever order the statement binds them in, and rows whose texts were not checked where they
    entered are checked (U+0000 refused, nothing written)."""
    statement = Prepared(
        sa.update(facts).where(facts.c.id == sa.bindparam("fact_id")).values(source_ref=sa.bindparam("ref"))
    )
    [result] = space.user.facts.put_many([{"predicate": "pref.food.like", "value": "tea"}]).results
    with space.core.store.batch() as conn:
        statement.run_tuples(conn, ("fact_id", "ref"), [(result.id, "note 7")], texts_checked=False)
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(facts.c.source_ref).where(facts.c.id == result.id)).scalar_one() == "note 7"
    with pytest.raises(KnowledgeValidationError), space.core.store.batch() as conn:
        statement.run_tuples(conn, ("fact_id", "ref"), [(result.id, "note\x008")], texts_checked=False)
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(facts.c.source_ref).where(facts.c.id == result.id)).scalar_one() == "note 7"


def test_a_hint_later_in_a_batch_finds_the_predicate_an_earlier_item_declared(space: Space) -> None:
    """Each distinct predicate is resolved once per batch, yet a predicate the
    batch itself declares is seen by the items after it: a second hint matching the first one's
    description lands on the same new predicate, and a third item repeats the first hint."""
    items: list[dict[str, Any]] = [
        {"hint": "favourite tea brand", "description": "favourite tea brand", "value": "Lipton"},
        {"hint": "tea brand", "value": "Pickwick"},
        {"hint": "favourite tea brand", "value": "Lipton"},
    ]
    results = space.core.facts.put_many(items, actor=ASSISTANT, limits=DailyLimits()).results
    assert [r.status for r in results] == ["applied", "applied", "duplicate"]
    assert results[0].predicate.startswith("x.")
    assert results[1].predicate == results[2].predicate == results[0].predicate


def test_a_batch_writes_each_table_in_one_statement_on_either_backend(space: Space) -> None:
    """60 facts, 10 of them replacing a ``one`` value, go into the facts, the
    changes and the touched objects in one statement each (SQLite: one ``INSERT``; PostgreSQL: one
    ``COPY`` after one draw of ids per sequence), with ids ascending in the order of the items."""
    items: list[dict[str, Any]] = [{"predicate": "pref.food.like", "value": f"dish {n}"} for n in range(50)]
    items += [{"predicate": "location.home.city", "value": f"city {n}"} for n in range(10)]
    with statements_sent(space.core.store.engine) as statements:
        results = space.user.facts.put_many(items).results
    for table in ("facts", "changes", "change_objects"):
        writes = [s for s in statements if s.startswith((f"INSERT INTO {table} ", f'COPY "{table}"', f"COPY {table} "))]
        assert len(writes) == 1, (table, statements)
    assert len([s for s in statements if "nextval" in s]) <= 2
    ids = [r.id for r in results]
    changes = [r.change_id or 0 for r in results]
    assert ids == sorted(ids) and len(set(ids)) == 60
    assert changes == sorted(changes) and len(set(changes)) == 60 and min(changes) > 0
    assert [f.value for f in space.user.facts.lookup("self", "location.home.city")] == ["city 9"]


def test_a_batch_knows_the_stored_values_it_repeats_whatever_their_characters(space: Space) -> None:
    """K-FACT-05: values with emoji, Chinese, quotes, backslashes and newlines
    stored before are found again by the batch's one read of its slots: each repeat is a duplicate."""
    values: list[Any] = ["😀 tea", "小笼包", 'say "hi"\\now\n', {"k": "ü", "n": [1, 2]}, 3.5, True]
    first = [space.user.facts.put(predicate="pref.food.like", value=v).id for v in values]
    results = space.user.facts.put_many([{"predicate": "pref.food.like", "value": v} for v in values]).results
    assert [(r.status, r.id) for r in results] == [("duplicate", i) for i in first]
