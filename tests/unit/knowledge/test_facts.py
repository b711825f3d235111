"""Facts through the host API: put, lookup, retract, pin, profile (K-FACT, K-CON-10…12)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from notochord import KnowledgeNotFoundError, KnowledgeValidationError, Space
from notochord.clock import FixedClock


def test_user_value_on_a_one_predicate_blocks_other_writers_with_a_recorded_conflict(space: Space) -> None:
    """AS-10, K-FACT-22, K-CHG-09: the user's Utrecht stays; Amsterdam is the conflict's proposal."""
    user = space.user.facts.put(predicate="location.home.city", value="Utrecht")
    result = space.as_assistant.facts.put(predicate="location.home.city", value="Amsterdam")
    assert (result.status, result.id) == ("conflict", user.id)
    assert [f.value for f in space.user.facts.lookup("self", "location.home")] == ["Utrecht"]
    conflicts = space.changes.list(status="conflict")
    assert [(c.proposed, c.actor, c.op) for c in conflicts] == [("Amsterdam", "assistant", "facts.put")]


def test_one_predicate_not_said_by_the_user_is_replaced_and_the_old_fact_expires(space: Space) -> None:
    """AS-11, K-FACT-23, K-CON-11: A then B gives B; A is expired, not deleted."""
    a = space.as_assistant.facts.put(predicate="work.company", value="A")
    b = space.as_assistant.facts.put(predicate="work.company", value="B")
    assert (a.status, b.status) == ("applied", "applied")
    assert [f.value for f in space.user.facts.lookup("self", "work")] == ["B"]
    old = space.user.facts.get(a.id)
    assert old.valid_to is not None
    assert old.value == "A"


def test_user_may_replace_their_own_value(space: Space) -> None:
    """K-FACT-27: the user's own later write is applied, not a conflict."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    again = space.user.facts.put(predicate="location.home.city", value="Delft")
    assert again.status == "applied"
    assert [f.value for f in space.user.facts.lookup("self", "location")] == ["Delft"]


def test_many_predicate_accumulates_distinct_values(space: Space) -> None:
    """K-FACT-24."""
    for dish in ("stew", "noodles", "stew"):
        space.as_assistant.facts.put(predicate="pref.food.like", value=dish)
    assert sorted(f.value for f in space.user.facts.lookup("self", "pref.food")) == ["noodles", "stew"]


@pytest.mark.parametrize(
    ("first", "second"),
    [({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}), ("x", "x"), (3, 3)],
)
def test_identical_value_is_a_duplicate_and_writes_nothing(space: Space, first: object, second: object) -> None:
    """K-FACT-21, OD-K17: equality is canonical JSON (key order does not matter)."""
    before = len(space.changes.list())
    one = space.as_assistant.facts.put(predicate="pref.food.diet", value=first)
    two = space.as_assistant.facts.put(predicate="pref.food.diet", value=second)
    assert (two.status, two.id) == ("duplicate", one.id)
    assert len(space.changes.list()) == before + 1


def test_restating_the_users_value_is_a_duplicate_not_a_conflict(space: Space) -> None:
    """OD-K17: duplicate is checked before conflict."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    assert space.as_assistant.facts.put(predicate="location.home.city", value="Utrecht").status == "duplicate"


def test_facts_about_people_with_objects_and_merged_objects_count_as_the_same(space: Space) -> None:
    """K-CON-10, K-FACT-15, OD-K17: objects compare after merges."""
    zhang = space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    li = space.user.entities.resolve(email="li@acme.nl", name="Li", create=True)
    twin = space.user.entities.resolve(email="zs@home.nl", name="Zhang S.", create=True)
    assert zhang and li and twin
    first = space.user.facts.put(predicate="relation.colleague", subject=li.id, object=zhang.id)
    space.user.entities.merge(keep=zhang.id, merge=twin.id)
    again = space.user.facts.put(predicate="relation.colleague", subject=li.id, object=twin.id)
    assert (again.status, again.id) == ("duplicate", first.id)
    [fact] = space.user.facts.lookup(li.id, "relation")
    assert (fact.object, fact.value) == (zhang.id, None)


def test_a_value_or_an_object_is_required(space: Space) -> None:
    """OD-K18."""
    with pytest.raises(KnowledgeValidationError, match="needs a value"):
        space.user.facts.put(predicate="pref.food.like")


def test_unknown_full_predicate_from_the_user_joins_the_vocabulary(space: Space) -> None:
    """K-CON-14: users add predicates under any first level."""
    space.user.facts.put(predicate="pref.music.like", value="jazz")
    with space.core.store.read() as conn:
        added = space.core.vocabulary.get(conn, "pref.music.like")
    assert added is not None
    assert (added.cardinality, added.declared_by) == ("many", "user")


def test_lookup_matches_whole_levels_only(space: Space) -> None:
    """K-FACT-03, OD-K11: location.home matches location.home.city, not location.homepage."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="x.location_homepage", value="https://example.org")
    space.user.facts.put(predicate="location.homepage.url", value="https://example.org")
    assert [f.predicate for f in space.user.facts.lookup("self", "location.home")] == ["location.home.city"]
    with pytest.raises(KnowledgeValidationError, match="malformed"):
        space.user.facts.lookup("self", "location.home.*")


def test_profile_holds_the_users_pinned_facts_and_pins_can_change(space: Space) -> None:
    """K-FACT-01…03, OD-K15: user facts about self are pinned; assistant facts are not until pinned."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    job = space.as_assistant.facts.put(predicate="work.company", value="Acme")
    assert [f.predicate for f in space.user.facts.profile()] == ["location.home.city"]
    space.user.facts.pin(job.id)
    assert [f.predicate for f in space.user.facts.profile("work")] == ["work.company"]
    space.user.facts.pin(job.id, False)
    assert space.user.facts.profile("work") == []


def test_inferred_facts_are_never_returned_by_lookup(space: Space) -> None:
    """K-FACT-08, OD-K14."""
    space.as_assistant.facts.put(predicate="pref.food.like", value="spicy food", source="inferred")
    space.as_assistant.facts.put(predicate="pref.food.like", value="tea")
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["tea"]
    assert len(space.user.facts.lookup("self", "pref", include_inferred=True)) == 2
    with pytest.raises(KnowledgeValidationError, match="said, not inferred"):
        space.user.facts.put(predicate="pref.food.like", value="x", source="inferred")


def test_retract_expires_once_and_reports_already_retracted(space: Space, clock: FixedClock) -> None:
    """K-FACT-29, K-FACT-30, K-FACT-32."""
    fact = space.user.facts.put(predicate="pref.food.dislike", value="cilantro")
    clock.advance(timedelta(minutes=5))
    assert space.user.facts.retract(fact.id).status == "retracted"
    assert space.user.facts.retract(fact.id).status == "already_retracted"
    kept = space.user.facts.get(fact.id)
    assert kept.valid_to == "2026-09-29T08:05:00.000Z"
    assert space.user.facts.lookup("self", "pref") == []


def test_facts_are_never_physically_deleted(space: Space) -> None:
    """K-CON-11: every row written stays, however it expired."""
    ids = [space.as_assistant.facts.put(predicate="work.title", value=t).id for t in ("a", "b", "c")]
    space.user.facts.retract(ids[-1])
    with space.core.store.read() as conn:
        assert conn.execute(sa.text("select count(*) from facts")).scalar() == 3


def test_size_limit_refuses_a_large_value_and_writes_nothing(space: Space) -> None:
    """K-QUOTA-10, K-QUOTA-14, OD-K23, OD-K25: 64 KB of compact JSON, inclusive."""
    # a JSON string of n characters is n + 2 bytes with its quotes
    ok = space.user.facts.put(predicate="x.notes", value="a" * (65_536 - 2))
    assert ok.status == "applied"
    with pytest.raises(KnowledgeValidationError, match="exceeds limit of 65536 bytes"):
        space.user.facts.put(predicate="x.notes", value="b" * (65_536 - 1))
    assert len(space.user.facts.lookup("self", "x")) == 1


def test_unknown_fact_and_deleted_subject_are_not_found(space: Space) -> None:
    """K-FACT-10, K-FACT-28, K-ENT-13."""
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        space.user.facts.retract(4242)
    person = space.user.entities.resolve(name="Ghost", create=True)
    assert person
    space.user.entities.delete(person.id)
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        space.user.facts.lookup(person.id)
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        space.user.facts.put(predicate="work.title", value="x", subject=person.id)


def test_facts_of_a_merged_entity_are_read_through_the_kept_one(space: Space) -> None:
    """K-ENT-12, K-FACT-10: the merged id keeps working and points to the kept entity."""
    kept = space.user.entities.resolve(email="a@x.nl", name="Anna", create=True)
    merged = space.user.entities.resolve(email="anna@home.nl", name="Anna H", create=True)
    assert kept and merged
    space.user.facts.put(predicate="work.company", value="Acme", subject=merged.id)
    space.user.entities.merge(keep=kept.id, merge=merged.id)
    assert [f.value for f in space.user.facts.lookup(kept.id, "work")] == ["Acme"]
    assert [f.value for f in space.user.facts.lookup(merged.id, "work")] == ["Acme"]
