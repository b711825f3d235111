"""SPEC §28 acceptance scenarios, written against the gem API.

AS-01…AS-03 run the weather gem of EX-14, AS-08 the recipe gem of EX-15 / EX-01, and AS-09…AS-11,
AS-13…AS-15 the remaining knowledge scenarios about facts, quotas and entities.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from gem_fixtures import (
    RECIPE_PERMISSIONS,
    WEATHER_PERMISSIONS,
    ex01_manifest,
    gem_ctx,
    install_gem,
    switch,
    write_manifest,
)

from notochord import (
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeQuotaError,
    ManifestError,
    Space,
)
from notochord.clock import FixedClock
from notochord.db.schema import facts
from notochord.gems.api.results import ProfileFact
from notochord.gems.context import GemContext

pytestmark = pytest.mark.anyio


async def weather_tool(input: dict[str, Any], ctx: GemContext) -> dict[str, Any]:
    """EX-14 in Python: the read-only weather gem."""
    assert ctx.knowledge is not None
    profile: list[ProfileFact | None] = [*await ctx.knowledge.profile.get("location.home")]
    [home, *_] = profile or [None]
    if not home:
        return {"error": "I do not know where you live"}
    return {"city": home.value}


async def test_as01_weather_gem_reads_the_city_the_user_entered(space: Space, gems_root: Path) -> None:
    """AS-01, K-FACT-01/02, OD-K15: a city the user entered is pinned, so the profile holds it."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    ctx = gem_ctx(space, gems_root, "weather", WEATHER_PERMISSIONS)
    assert await weather_tool({}, ctx) == {"city": "Utrecht"}


async def test_as02_freshly_installed_weather_gem_knows_nothing_and_raises_nothing(
    space: Space, gems_root: Path
) -> None:
    """AS-02, K-PERM-03, K-PERM-21, K-FACT-04: every switch is off, and profile.get returns []."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    install_gem(space, gems_root, "weather", WEATHER_PERMISSIONS)
    assert [s.on for s in space.gems.permissions("weather")] == [False]
    ctx = space.gems.context("weather")
    assert ctx.knowledge is not None
    assert await ctx.knowledge.profile.get("location.home") == []
    assert await weather_tool({}, ctx) == {"error": "I do not know where you live"}


async def test_as03_weather_gem_with_permission_but_no_city_known(space: Space, gems_root: Path) -> None:
    """AS-03, K-FACT-01."""
    ctx = gem_ctx(space, gems_root, "weather", WEATHER_PERMISSIONS)
    assert await weather_tool({}, ctx) == {"error": "I do not know where you live"}


async def test_as03_a_city_not_pinned_is_not_in_the_profile(space: Space, gems_root: Path) -> None:
    """K-FACT-01, OD-K15: only pinned facts form the profile; the unpinned city stays out."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht", pin=False)
    ctx = gem_ctx(space, gems_root, "weather", WEATHER_PERMISSIONS)
    assert await weather_tool({}, ctx) == {"error": "I do not know where you live"}


async def test_as08_recipe_gem_without_write_gets_the_narrowest_permission_error(space: Space, gems_root: Path) -> None:
    """AS-08, K-FACT-19, OD-K06: the error names the resolved predicate, not the granted prefix."""
    space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    switch(space, "recipes", ["facts.read:self:pref.food.*", "collections.create"])
    ctx = space.gems.context("recipes")
    assert ctx.knowledge is not None
    with pytest.raises(
        KnowledgePermissionError, match=r"lacks knowledge permission facts\.write:self:pref\.food\.rated"
    ):
        await ctx.knowledge.facts.put({"predicateHint": "pref.food.rated", "value": "Tomato beef stew"})
    assert space.user.facts.lookup("self", "pref.food") == []


def _ex01_variant(change: str) -> dict[str, Any]:
    data = ex01_manifest()
    knowledge = data["knowledge"]
    if change == "short read prefix":
        knowledge["permissions"][0] = "facts.read:self:pref.*"
    elif change == "read removed":
        knowledge["permissions"].remove("facts.read:self:pref.food.*")
    elif change == "collection ref":
        knowledge["permissions"].append("collections.read:col_AAAAAAAAAAAAAAAAAAAAAA")
    elif change == "201-character description":
        knowledge["predicates"][0]["description"] = "d" * 201
    return data


def test_as09_ex01_installs_as_given(space: Space, gems_root: Path) -> None:
    """AS-09 (first bullet), K-MAN-01, K-MAN-08."""
    installed = space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    assert installed.id == "recipes"
    assert [s.permission for s in space.gems.permissions("recipes")] == list(RECIPE_PERMISSIONS)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("short read prefix", r"knowledge\.permissions\[0\]: .*two levels"),
        ("read removed", r"knowledge\.permissions\[0\]: .*facts\.write:self:pref\.food\.\*.*facts\.read"),
        ("collection ref", r"knowledge\.permissions\[3\]: .*collection"),
        ("201-character description", r"knowledge\.predicates\[0\]\.description: .*200"),
    ],
)
def test_as09_invalid_variants_of_ex01_do_not_install(space: Space, gems_root: Path, change: str, problem: str) -> None:
    """AS-09, P-KVAL-02…06, K-MAN-12: install fails, naming the problem, and leaves nothing behind."""
    with pytest.raises(ManifestError) as failure:
        space.gems.install(write_manifest(gems_root, _ex01_variant(change), form="draft"))
    assert any(re.search(problem, p) for p in failure.value.problems), failure.value.problems
    assert space.gems.list() == []
    with space.core.store.read() as conn:
        assert space.core.vocabulary.get(conn, "pref.food.rated") is None


async def test_as10_gem_cannot_overwrite_a_city_the_user_entered(space: Space, gems_root: Path) -> None:
    """AS-10, K-FACT-22, K-CHG-09."""
    user_fact = space.user.facts.put(predicate="location.home.city", value="Utrecht")
    ctx = gem_ctx(space, gems_root, "mover", ["facts.read:self:location.home.*", "facts.write:self:location.home.*"])
    assert ctx.knowledge is not None
    result = await ctx.knowledge.facts.put(predicate_hint="location.home.city", value="Amsterdam")
    assert result.status == "conflict"
    assert result.predicate == "location.home.city"
    looked_up = await ctx.knowledge.facts.lookup("self", "location.home")
    assert [(f.predicate, f.value) for f in looked_up] == [("location.home.city", "Utrecht")]
    assert result.ref == looked_up[0].ref  # OD-K16: the ref of the user's fact that blocked the write
    assert space.user.facts.get(user_fact.id).valid_to is None
    conflicts = await ctx.knowledge.changes.list({"status": "conflict"})
    assert [c.proposed for c in conflicts] == ["Amsterdam"]
    assert conflicts[0].status == "conflict"


async def test_as11_replacing_a_one_value_not_said_by_the_user(space: Space, gems_root: Path) -> None:
    """AS-11, K-FACT-23, K-CON-11: A then B; lookup shows only B; A is expired, not deleted."""
    ctx = gem_ctx(space, gems_root, "jobs", ["facts.read:self:work.company", "facts.write:self:work.company"])
    assert ctx.knowledge is not None
    a = await ctx.knowledge.facts.put(predicate_hint="work.company", value="A")
    b = await ctx.knowledge.facts.put(predicate_hint="work.company", value="B")
    assert (a.status, b.status) == ("applied", "applied")
    assert [f.value for f in await ctx.knowledge.facts.lookup("self", "work")] == ["B"]
    expired = [f for f in _all_fact_rows(space) if f["value_json"] == '"A"']
    assert len(expired) == 1
    assert expired[0]["valid_to"] is not None


def _all_fact_rows(space: Space) -> list[dict[str, Any]]:
    with space.core.store.read() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(facts))]


async def test_as13_500_writes_a_day_then_quota_then_writes_again_the_next_local_day(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """AS-13, K-QUOTA-01/05/06, OD-K21/K22: the 501st write throws ``quota`` and writes nothing."""
    ctx = gem_ctx(space, gems_root, "busy", ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"])
    assert ctx.knowledge is not None
    for n in range(500):
        await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value=f"dish {n}")
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="one too many")
    assert len(await ctx.knowledge.facts.lookup("self", "pref.food")) == 500
    # 08:00 UTC is 10:00 in Amsterdam; 14 hours later it is the next local date there (00:00).
    clock.advance(timedelta(hours=14))
    result = await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="one too many")
    assert result.status == "applied"


async def test_as14_deleted_entity_is_gone_and_merged_entity_reads_as_the_kept_one(
    space: Space, gems_root: Path
) -> None:
    """AS-14, K-ENT-12/13."""
    ctx = gem_ctx(space, gems_root, "contacts", ["entities.read:person", "entities.write:person"])
    assert ctx.knowledge is not None
    gone = await ctx.knowledge.entities.resolve({"email": "gone@example.nl"}, {"create": True})
    a = await ctx.knowledge.entities.resolve({"email": "a@example.nl", "name": "Anna"}, create=True)
    b = await ctx.knowledge.entities.resolve({"email": "b@example.nl", "name": "Bea"}, create=True)
    assert gone is not None and a is not None and b is not None
    hosted = {e.display_name: e.id for e in space.user.entities.list("person")}
    space.user.entities.delete(hosted["gone@example.nl"])
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await ctx.knowledge.entities.get(gone.ref)
    space.user.entities.merge(keep=hosted["Bea"], merge=hosted["Anna"])
    via_a = await ctx.knowledge.entities.get(a.ref)
    via_b = await ctx.knowledge.entities.get(b.ref)
    assert via_a == via_b
    assert via_a.display_name == "Bea"
    assert {i.value for i in via_a.identifiers} >= {"a@example.nl", "b@example.nl"}


async def test_as15_two_gems_see_one_entity_under_different_refs(space: Space, gems_root: Path) -> None:
    """AS-15, K-CON-06: and gem 2 presenting gem 1's ref gets not-found."""
    space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    one = gem_ctx(space, gems_root, "gem-one", ["entities.read:person"])
    two = gem_ctx(space, gems_root, "gem-two", ["entities.read:person"])
    assert one.knowledge is not None and two.knowledge is not None
    seen_by_one = await one.knowledge.entities.resolve({"email": "zhangsan@acme.nl"})
    seen_by_two = await two.knowledge.entities.resolve({"email": "zhangsan@acme.nl"})
    assert seen_by_one is not None and seen_by_two is not None
    assert seen_by_one.ref != seen_by_two.ref
    assert seen_by_one.display_name == seen_by_two.display_name == "Zhang San"
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await two.knowledge.entities.get(seen_by_one.ref)
