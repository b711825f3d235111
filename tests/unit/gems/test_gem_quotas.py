"""Write quotas and size limits through ``ctx.knowledge`` (K-QUOTA-01…06, 10…12, 14; OD-K21…K25).

The daily counters are filled either by real writes or, where a real fill would take millions of
characters, by charging the gem's counter through the store's one write path, as a write would.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from gem_fixtures import gem_ctx, install_gem, switch

from notochord import (
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeQuotaError,
    KnowledgeValidationError,
    Space,
)
from notochord.clock import FixedClock
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import DAILY_CHARS, DAILY_CHARS_BULK, DailyLimits, usage
from notochord.knowledge.writes import Actor

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
PEOPLE = ["entities.read:person", "entities.write:person"]


def _k(space: Space, root: Path, gem_id: str, permissions: list[str]) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions).knowledge
    assert knowledge is not None
    return knowledge


def _used(space: Space, gem_id: str, day: str = "2026-09-29") -> tuple[int, int]:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day=day)


def _charge(space: Space, gem_id: str, *, writes: int = 1, chars: int = 0) -> None:
    """Spend ``writes`` writes (the first carrying ``chars`` characters) of the gem's day."""
    for n in range(writes):
        with space.core.store.write(
            actor=Actor.gem(gem_id),
            run_id=None,
            chars=chars if n == 0 else 0,
            limits=DailyLimits.for_writer(bulk=True),
        ):
            pass


async def test_every_counted_call_is_one_write_whatever_its_status(space: Space, gems_root: Path) -> None:
    """OD-K22: duplicate and conflict puts count, and so do ``exists`` and reverts; characters are
    the compact JSON of the value, the name of an entity and the value of an identifier (OD-K23)."""
    space.user.facts.put(predicate="pref.food.diet", value="vegetarian")
    knowledge = _k(space, gems_root, "counted", [*FOOD, *PEOPLE])
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")  # "stew" → 6 chars
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")  # duplicate
    await knowledge.facts.put(predicate_hint="pref.food.diet", value="vegetarian")  # duplicate of user
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)  # 3 + 3 chars
    assert kim is not None
    await knowledge.entities.resolve({"name": "Kim"}, create=True)  # found: not a write
    await knowledge.entities.resolve({"name": "Kim"})  # not a write
    await knowledge.entities.add_identifier(kim.ref, "email", "k@x.nl")  # 6 chars
    await knowledge.entities.add_identifier(kim.ref, "email", "k@x.nl")  # exists, still 6 chars
    writes, chars = _used(space, "counted")
    assert writes == 6
    assert chars == 6 + 6 + 12 + 6 + 6 + 6


async def test_refused_and_failed_calls_use_no_quota(space: Space, gems_root: Path) -> None:
    """OD-K07, K-QUOTA-14: validation, not-found and permission refusals charge nothing."""
    knowledge = _k(space, gems_root, "careful", ["facts.read:self:pref.food.*", *FOOD[1:], "entities.read:person"])
    attempts = [
        knowledge.facts.put(predicate_hint="pref.food.like", value="x" * 70_000),
        knowledge.facts.put(subject="ent_" + "A" * 22, predicate_hint="pref.food.like", value="x"),
        knowledge.facts.put(predicate_hint="location.home.city", value="Utrecht"),
        knowledge.facts.retract("fact_" + "A" * 22),
        knowledge.entities.resolve({"name": "Kim"}, create=True),
        knowledge.changes.revert("chg_" + "A" * 22),
    ]
    for attempt in attempts:
        with pytest.raises((KnowledgeValidationError, KnowledgeNotFoundError, KnowledgePermissionError)):
            await attempt
    assert _used(space, "careful") == (0, 0)


async def test_the_501st_write_throws_quota_whatever_the_method(space: Space, gems_root: Path) -> None:
    """K-QUOTA-01, K-QUOTA-05: entity creation and identifiers hit the same limit as facts."""
    knowledge = _k(space, gems_root, "busy", [*FOOD, *PEOPLE])
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    _charge(space, "busy", writes=499)
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.entities.resolve({"name": "Lee"}, create=True)
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.entities.add_identifier(kim.ref, "email", "kim@example.nl")
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    assert [e.display_name for e in space.user.entities.list("person")] == ["Kim"]
    assert (await knowledge.entities.get(kim.ref)).identifiers[0].value == "Kim"
    assert space.user.facts.lookup("self") == []
    assert _used(space, "busy")[0] == 500


async def test_quotas_are_per_gem(space: Space, gems_root: Path) -> None:
    """K-QUOTA-06: one gem at its limit does not hold back another, nor the user."""
    spent = _k(space, gems_root, "spent", FOOD)
    fresh = _k(space, gems_root, "fresh", FOOD)
    _charge(space, "spent", writes=500)
    with pytest.raises(KnowledgeQuotaError):
        await spent.facts.put(predicate_hint="pref.food.like", value="stew")
    assert (await fresh.facts.put(predicate_hint="pref.food.like", value="stew")).status == "applied"
    assert space.user.facts.put(predicate="pref.food.like", value="soup").status == "applied"


async def test_the_day_is_the_local_date_not_the_utc_date(space: Space, gems_root: Path, clock: FixedClock) -> None:
    """K-QUOTA-01, K-QUOTA-06, OD-K21: at 22:30 UTC it is already the next day in Amsterdam."""
    knowledge = _k(space, gems_root, "night", FOOD)
    _charge(space, "night", writes=500)
    clock.advance(timedelta(hours=13, minutes=59))  # 21:59 UTC, 23:59 in Amsterdam: same local day
    with pytest.raises(KnowledgeQuotaError):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    clock.advance(timedelta(minutes=31))  # 22:30 UTC on the 29th, 00:30 on the 30th in Amsterdam
    assert (await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")).status == "applied"
    assert _used(space, "night", day="2026-09-30") == (1, len('"stew"'))


async def test_the_daily_text_limit_is_50_million_characters(space: Space, gems_root: Path) -> None:
    """K-QUOTA-02, K-QUOTA-05, OD-K23: a write that would pass the limit throws ``quota``; one that
    reaches it exactly is allowed."""
    knowledge = _k(space, gems_root, "wordy", FOOD)
    _charge(space, "wordy", chars=DAILY_CHARS - len('"stew"'))
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stews")
    assert (await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")).status == "applied"
    assert _used(space, "wordy")[1] == DAILY_CHARS


async def test_collections_bulk_raises_the_text_limit_but_not_the_write_limit(space: Space, gems_root: Path) -> None:
    """K-QUOTA-03, K-PERM-19, OD-K24: the switch decides, on the very next call."""
    install_gem(space, gems_root, "bulky", [*FOOD, "collections.bulk"], on=FOOD)
    knowledge = space.gems.context("bulky").knowledge
    assert knowledge is not None
    _charge(space, "bulky", chars=DAILY_CHARS)
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    switch(space, "bulky", ["collections.bulk"])
    assert (await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")).status == "applied"
    _charge(space, "bulky", chars=DAILY_CHARS_BULK - DAILY_CHARS - len('"stew"'))
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    _charge(space, "bulky", writes=500 - _used(space, "bulky")[0])
    switch(space, "bulky", ["collections.bulk"], on=False)
    with pytest.raises(KnowledgeQuotaError, match="500 writes"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="x")


@pytest.mark.parametrize(("size", "accepted"), [(65_536, True), (65_537, False)])
async def test_a_fact_value_is_at_most_64_kb_of_compact_json(
    space: Space, gems_root: Path, size: int, accepted: bool
) -> None:
    """K-QUOTA-10, K-QUOTA-14, OD-K23, OD-K25: UTF-8 bytes of the compact JSON, limit inclusive."""
    knowledge = _k(space, gems_root, "big", FOOD)
    value = "é" * ((size - 2) // 2) + "x" * ((size - 2) % 2)  # 2 quote bytes + 2 bytes per é
    if accepted:
        assert (await knowledge.facts.put(predicate_hint="pref.food.like", value=value)).status == "applied"
        return
    with pytest.raises(KnowledgeValidationError, match="exceeds limit") as refused:
        await knowledge.facts.put(predicate_hint="pref.food.like", value=value)
    assert "quota" not in str(refused.value)
    assert space.user.facts.lookup("self") == []
    assert _used(space, "big") == (0, 0)
