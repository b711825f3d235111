"""Facts through ``ctx.knowledge``: ``profile.get``, ``facts.lookup``, ``facts.put``, ``facts.retract``.

Covers K-FACT-01…32, K-PERM-05…08, K-PERM-18, K-PERM-21…24, OD-K06, OD-K07, OD-K09…K11, OD-K14…K19.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gem_fixtures import gem_ctx, install_gem, pairs, switch

from notochord import (
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeQuotaError,
    KnowledgeValidationError,
    Space,
)
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import DailyLimits, usage
from notochord.knowledge.writes import Actor

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
HOME = ["facts.read:self:location.home.*", "facts.write:self:location.home.*"]
COLLEAGUES = [
    "entities.read:person",
    "entities.write:person",
    "facts.read:person:relation.colleague",
    "facts.write:person:relation.colleague",
]
TODAY = "2026-09-29"


def _k(space: Space, root: Path, gem_id: str, permissions: list[str]) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions).knowledge
    assert knowledge is not None
    return knowledge


def _writes_today(space: Space, gem_id: str) -> int:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day=TODAY)[0]


# ---------------------------------------------------------------------- profile.get (K-FACT-01…04)


async def test_profile_holds_only_pinned_self_facts_the_gem_may_read(space: Space, gems_root: Path) -> None:
    """K-FACT-01, K-FACT-02, OD-K15."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="location.home.address", value="Oudegracht 1", pin=False)
    space.user.facts.put(predicate="location.work.city", value="Amsterdam")
    space.user.facts.put(predicate="pref.food.like", value="stew")
    knowledge = _k(space, gems_root, "home", ["facts.read:self:location.home.*"])
    assert pairs(await knowledge.profile.get()) == {("location.home.city", "Utrecht")}


async def test_gem_written_self_facts_join_the_profile_only_once_the_user_pins_them(
    space: Space, gems_root: Path
) -> None:
    """OD-K15: a gem's write is in lookup at once, in the profile only after the user pins it."""
    knowledge = _k(space, gems_root, "home", HOME)
    await knowledge.facts.put(predicate_hint="location.home.city", value="Delft")
    assert await knowledge.profile.get() == []
    assert pairs(await knowledge.facts.lookup("self", "location.home")) == {("location.home.city", "Delft")}
    [fact] = space.user.facts.lookup("self", "location.home")
    space.user.facts.pin(fact.id)
    assert pairs(await knowledge.profile.get("location.home")) == {("location.home.city", "Delft")}


async def test_profile_prefix_matches_whole_levels(space: Space, gems_root: Path) -> None:
    """K-FACT-03, OD-K11: ``location.home`` does not match ``location.homepage``; one level is allowed."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="location.homepage", value="https://example.nl")
    knowledge = _k(space, gems_root, "levels", ["facts.read:self:location.home.*", "facts.read:self:location.homepage"])
    assert pairs(await knowledge.profile.get("location.home")) == {("location.home.city", "Utrecht")}
    assert pairs(await knowledge.profile.get("location")) == {
        ("location.home.city", "Utrecht"),
        ("location.homepage", "https://example.nl"),
    }
    assert pairs(await knowledge.profile.get("location.home.city")) == {("location.home.city", "Utrecht")}
    assert await knowledge.profile.get("pref") == []


async def test_profile_with_no_permission_on_is_empty_and_silent(space: Space, gems_root: Path) -> None:
    """K-FACT-04, K-PERM-21, P-KVAL-10."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    install_gem(space, gems_root, "off", HOME)
    knowledge = space.gems.context("off").knowledge
    assert knowledge is not None
    assert await knowledge.profile.get() == []
    assert await knowledge.profile.get("location.home") == []
    assert await knowledge.facts.lookup("self", "location.home") == []


async def test_a_malformed_query_prefix_is_a_validation_error(space: Space, gems_root: Path) -> None:
    knowledge = _k(space, gems_root, "home", HOME)
    for prefix in ("location.", "Location.Home", "location..home", "location.*"):
        with pytest.raises(KnowledgeValidationError, match="prefix"):
            await knowledge.profile.get(prefix)


# ---------------------------------------------------------------------- facts.lookup (K-FACT-05…10)


async def test_lookup_returns_current_readable_facts_of_self_including_unpinned(space: Space, gems_root: Path) -> None:
    """K-FACT-05, K-FACT-07: unpinned facts are facts too; uncovered predicates are left out."""
    space.user.facts.put(predicate="pref.food.like", value="stew", pin=False)
    space.user.facts.put(predicate="pref.food.dislike", value="cilantro")
    space.user.facts.put(predicate="pref.communication.style", value="brief")
    knowledge = _k(space, gems_root, "food", ["facts.read:self:pref.food.like"])
    assert pairs(await knowledge.facts.lookup("self", "pref")) == {("pref.food.like", "stew")}
    assert pairs(await knowledge.facts.lookup()) == {("pref.food.like", "stew")}


async def test_lookup_never_returns_source_writer_confidence_or_inferred_facts(space: Space, gems_root: Path) -> None:
    """K-FACT-06, K-FACT-08, OD-K14: the shape has no provenance, and inferred facts stay hidden."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    space.as_assistant.facts.put(predicate="pref.food.like", value="guessed soup", source="inferred")
    knowledge = _k(space, gems_root, "food", FOOD)
    [fact] = await knowledge.facts.lookup("self", "pref.food")
    assert fact.value == "stew"
    assert set(fact.model_dump(by_alias=True)) == {"ref", "predicate", "value", "object", "validFrom"}
    assert fact.valid_from == "2026-09-29T08:00:00.000Z"


async def test_lookup_never_returns_expired_facts(space: Space, gems_root: Path) -> None:
    """K-FACT-09, K-CON-11."""
    old = space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="location.home.city", value="Delft")
    space.user.facts.put(predicate="location.home.address", value="Markt 1")
    address = space.user.facts.lookup("self", "location.home.address")[0]
    space.user.facts.retract(address.id)
    knowledge = _k(space, gems_root, "home", HOME)
    assert pairs(await knowledge.facts.lookup("self", "location.home")) == {("location.home.city", "Delft")}
    assert space.user.facts.get(old.id).valid_to is not None


async def test_self_and_person_permissions_are_disjoint(space: Space, gems_root: Path) -> None:
    """K-PERM-24, OD-K30: ``person`` grants never reach the user's facts, nor ``self`` grants a contact's."""
    colleague = space.user.entities.resolve(name="Kim", create=True)
    assert colleague is not None
    space.user.facts.put(predicate="relation.colleague", value="Sam", subject=colleague.id)
    space.user.facts.put(predicate="relation.colleague", value="Alex")
    people = _k(space, gems_root, "people", COLLEAGUES)
    me = _k(space, gems_root, "me", ["facts.read:self:relation.colleague", "entities.read:person"])
    kim_for_people = await people.entities.resolve({"name": "Kim"})
    kim_for_me = await me.entities.resolve({"name": "Kim"})
    assert kim_for_people is not None and kim_for_me is not None
    assert pairs(await people.facts.lookup(kim_for_people.ref, "relation")) == {("relation.colleague", "Sam")}
    assert await people.facts.lookup("self", "relation") == []
    assert pairs(await me.facts.lookup("self", "relation")) == {("relation.colleague", "Alex")}
    assert await me.facts.lookup(kim_for_me.ref, "relation") == []


async def test_lookup_object_is_an_entity_ref_of_the_caller(space: Space, gems_root: Path) -> None:
    """K-FACT-06, K-FACT-15, OD-K20: ``object`` is the caller's ref of the entity, or ``None``."""
    knowledge = _k(
        space,
        gems_root,
        "rel",
        [*COLLEAGUES, "facts.read:self:relation.colleague", "facts.write:self:relation.colleague"],
    )
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    put = await knowledge.facts.put(predicate_hint="relation.colleague", object=kim.ref)
    assert put.status == "applied"
    [fact] = await knowledge.facts.lookup("self", "relation.colleague")
    assert (fact.object, fact.value, fact.ref) == (kim.ref, None, put.ref)


def _host_id(space: Space, name: str) -> int:
    found = space.user.entities.resolve(name=name)
    assert found is not None
    return found.id


def _self_id(space: Space) -> int:
    with space.core.store.read() as conn:
        return space.core.entities.self_id(conn)


async def test_the_user_as_a_facts_object_is_self_both_ways(space: Space, gems_root: Path) -> None:
    """K-FACT-06, OD-K30: the user is addressed only as ``'self'``, as an object too: a fact relating
    someone to the user reads ``object: 'self'`` (never a ref no call accepts), and ``'self'`` is an
    object a put may name."""
    knowledge = _k(space, gems_root, "rel", COLLEAGUES)
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    lee = await knowledge.entities.resolve({"name": "Lee"}, create=True)
    assert kim is not None and lee is not None
    space.user.facts.put(subject=_host_id(space, "Kim"), predicate="relation.colleague", object=_self_id(space))
    [fact] = await knowledge.facts.lookup(kim.ref, "relation.colleague")
    assert fact.object == "self"
    put = await knowledge.facts.put(subject=lee.ref, predicate_hint="relation.colleague", object="self")
    assert put.status == "applied"
    [written] = space.user.facts.lookup(_host_id(space, "Lee"), "relation.colleague")
    assert written.object == _self_id(space)
    [read_back] = await knowledge.facts.lookup(lee.ref, "relation.colleague")
    assert read_back.object == "self"


async def test_lookup_of_a_deleted_entity_is_no_entity_and_of_a_merged_one_reads_the_kept(
    space: Space, gems_root: Path
) -> None:
    """K-FACT-10, K-ENT-12, K-ENT-13."""
    knowledge = _k(space, gems_root, "rel", COLLEAGUES)
    a = await knowledge.entities.resolve({"name": "Anna"}, create=True)
    b = await knowledge.entities.resolve({"name": "Bea"}, create=True)
    c = await knowledge.entities.resolve({"name": "Cas"}, create=True)
    assert a is not None and b is not None and c is not None
    await knowledge.facts.put(subject=a.ref, predicate_hint="relation.colleague", value="via Anna")
    await knowledge.facts.put(subject=b.ref, predicate_hint="relation.colleague", value="via Bea")
    ids = {e.display_name: e.id for e in space.user.entities.list("person")}
    space.user.entities.merge(keep=ids["Bea"], merge=ids["Anna"])
    space.user.entities.delete(ids["Cas"])
    expected = {("relation.colleague", "via Anna"), ("relation.colleague", "via Bea")}
    assert pairs(await knowledge.facts.lookup(a.ref, "relation")) == expected
    assert pairs(await knowledge.facts.lookup(b.ref, "relation")) == expected
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.facts.lookup(c.ref, "relation")


# ---------------------------------------------------------------------- facts.put (K-FACT-11…28)


async def test_put_applies_and_returns_status_ref_and_resolved_predicate(space: Space, gems_root: Path) -> None:
    """K-FACT-11, K-FACT-12, K-FACT-16, K-FACT-25: defaults ``self``, origin ``gem:<id>``, ``extracted``."""
    knowledge = _k(space, gems_root, "food", FOOD)
    result = await knowledge.facts.put(
        {"predicateHint": "pref.food.like", "value": "Tomato beef stew", "sourceRef": "record/123"}
    )
    assert (result.status, result.predicate) == ("applied", "pref.food.like")
    [stored] = space.user.facts.lookup("self", "pref.food")
    assert (stored.value, stored.origin, stored.source, stored.source_ref, stored.writer) == (
        "Tomato beef stew",
        "gem:food",
        "extracted",
        "record/123",
        "gem:food",
    )
    assert stored.pinned is False
    [seen] = await knowledge.facts.lookup("self", "pref.food")
    assert seen.ref == result.ref


@pytest.mark.parametrize(
    ("hint", "predicate"),
    [
        ("location.home.city", "location.home.city"),
        ("  City   of Residence ", "location.home.city"),
        ("居住城市", "location.home.city"),
        ("city", "location.home.city"),
        ("home address", "location.home.address"),
    ],
)
async def test_put_resolves_name_alias_then_description(
    space: Space, gems_root: Path, hint: str, predicate: str
) -> None:
    """K-FACT-13, K-FACT-18, OD-K09: full predicate → alias (display names) → description words."""
    knowledge = _k(space, gems_root, "home", HOME)
    result = await knowledge.facts.put(predicate_hint=hint, value="Utrecht")
    assert (result.status, result.predicate) == ("applied", predicate)


async def test_a_vague_hint_outside_the_write_scope_is_refused_naming_the_resolved_predicate(
    space: Space, gems_root: Path
) -> None:
    """K-FACT-18, K-FACT-19, OD-K06, OD-K07: ``city`` lands on ``location.home.city``, which this
    food gem may not write; the refusal writes nothing and uses no quota."""
    knowledge = _k(space, gems_root, "food", FOOD)
    with pytest.raises(KnowledgePermissionError) as refused:
        await knowledge.facts.put(predicate_hint="city", value="Utrecht")
    assert refused.value.permission == "facts.write:self:location.home.city"
    assert "lacks knowledge permission facts.write:self:location.home.city" in str(refused.value)
    assert _writes_today(space, "food") == 0
    assert space.user.facts.lookup("self") == []
    assert space.changes.list(actor="gem:food") == []


async def test_an_unmatched_hint_lands_under_x_and_needs_write_there(space: Space, gems_root: Path) -> None:
    """K-FACT-14, K-FACT-20, OD-K10: ``x.<slug>`` with the call's description, added with ``many``."""
    knowledge = _k(
        space, gems_root, "music", [*FOOD, "facts.read:self:x.music_taste", "facts.write:self:x.music_taste"]
    )
    result = await knowledge.facts.put(predicate_hint="Music Taste", value="jazz", description="Music the user enjoys")
    assert (result.status, result.predicate) == ("applied", "x.music_taste")
    with space.core.store.read() as conn:
        added = space.core.vocabulary.get(conn, "x.music_taste")
    assert added is not None
    assert (added.cardinality, added.description) == ("many", "Music the user enjoys")


async def test_an_unmatched_hint_without_write_is_refused_and_adds_nothing(space: Space, gems_root: Path) -> None:
    """K-FACT-20, OD-K10: a well-formed unknown predicate goes under ``x.`` and needs write there."""
    knowledge = _k(space, gems_root, "food", FOOD)
    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:x\.pref\.music\.like"):
        await knowledge.facts.put(predicate_hint="pref.music.like", value="jazz")
    with space.core.store.read() as conn:
        assert space.core.vocabulary.get(conn, "x.pref.music.like") is None


async def test_put_of_an_identical_current_value_is_a_duplicate_with_the_existing_ref(
    space: Space, gems_root: Path
) -> None:
    """K-FACT-21, OD-K16, OD-K17: nothing new is written; even the user's value is just a duplicate."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    knowledge = _k(space, gems_root, "home", HOME)
    [users] = await knowledge.facts.lookup("self", "location.home")
    same = await knowledge.facts.put(predicate_hint="location.home.city", value="Utrecht")
    assert (same.status, same.ref) == ("duplicate", users.ref)
    first = await knowledge.facts.put(predicate_hint="location.home.address", value={"a": 1, "b": [2]})
    again = await knowledge.facts.put(predicate_hint="location.home.address", value={"b": [2], "a": 1})
    assert (again.status, again.ref) == ("duplicate", first.ref)
    assert len(space.user.facts.lookup("self", "location.home")) == 2


async def test_many_predicates_accumulate_values(space: Space, gems_root: Path) -> None:
    """K-FACT-24."""
    knowledge = _k(space, gems_root, "food", FOOD)
    for dish in ("stew", "noodles"):
        assert (await knowledge.facts.put(predicate_hint="pref.food.like", value=dish)).status == "applied"
    assert pairs(await knowledge.facts.lookup("self", "pref.food")) == {
        ("pref.food.like", "stew"),
        ("pref.food.like", "noodles"),
    }


async def test_put_about_a_person_needs_the_person_write_permission(space: Space, gems_root: Path) -> None:
    """K-FACT-12, K-PERM-24, OD-K06: the error names the entity's kind, not ``self``."""
    knowledge = _k(space, gems_root, "rel", ["entities.write:person", "facts.read:person:relation.colleague"])
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    with pytest.raises(
        KnowledgePermissionError, match=r"lacks knowledge permission facts\.write:person:relation\.colleague"
    ):
        await knowledge.facts.put(subject=kim.ref, predicate_hint="relation.colleague", value="Sam")


async def test_put_with_a_deleted_subject_or_object_is_no_entity(space: Space, gems_root: Path) -> None:
    """K-FACT-28."""
    knowledge = _k(
        space,
        gems_root,
        "rel",
        [*COLLEAGUES, "facts.read:self:relation.colleague", "facts.write:self:relation.colleague"],
    )
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    [hosted] = space.user.entities.list("person")
    space.user.entities.delete(hosted.id)
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.facts.put(subject=kim.ref, predicate_hint="relation.colleague", value="Sam")
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.facts.put(predicate_hint="relation.colleague", object=kim.ref)


async def test_put_with_a_merged_subject_writes_on_the_kept_entity(space: Space, gems_root: Path) -> None:
    """K-FACT-28, K-ENT-12."""
    knowledge = _k(space, gems_root, "rel", COLLEAGUES)
    a = await knowledge.entities.resolve({"name": "Anna"}, create=True)
    b = await knowledge.entities.resolve({"name": "Bea"}, create=True)
    assert a is not None and b is not None
    ids = {e.display_name: e.id for e in space.user.entities.list("person")}
    space.user.entities.merge(keep=ids["Bea"], merge=ids["Anna"])
    await knowledge.facts.put(subject=a.ref, predicate_hint="relation.colleague", value="Sam")
    assert [f.value for f in space.user.facts.lookup(ids["Bea"], "relation")] == ["Sam"]
    [seen] = await knowledge.facts.lookup(b.ref, "relation")
    assert seen.value == "Sam"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"predicateHint": "pref.food.like"}, "value"),
        ({"value": "stew"}, "predicateHint"),
        ({"predicateHint": "pref.food.like", "value": "stew", "colour": "red"}, "unknown option"),
        ({"predicateHint": "pref.food.like", "value": "x" * 70_000}, "exceeds limit"),
        ({"predicateHint": "pref.food.like", "value": "stew", "runId": ""}, "runId"),
        ({"predicateHint": "pref.food.like", "value": "stew", "runId": "r" * 201}, "exceeds limit"),
        ({"predicateHint": "pref.food.like", "value": "stew", "sourceRef": "s" * 1001}, "exceeds limit"),
        ({"predicateHint": "pref.food.like", "value": float("nan")}, "JSON"),
    ],
)
async def test_put_validates_arguments_before_anything_else(
    space: Space, gems_root: Path, arguments: dict[str, object], message: str
) -> None:
    """K-QUOTA-10, K-QUOTA-14, OD-K07 (1), OD-K18, OD-K25: refused, nothing written, no quota used."""
    knowledge = _k(space, gems_root, "food", FOOD)
    with pytest.raises(KnowledgeValidationError, match=message):
        await knowledge.facts.put(arguments)
    assert _writes_today(space, "food") == 0
    assert space.user.facts.lookup("self") == []


async def test_bug_validation_comes_before_resolving_refs(space: Space, gems_root: Path) -> None:
    """OD-K07 (1 before 2): an oversize value or a missing value is a validation error even when the
    subject or object ref is forged; nothing about the ref may be reported first."""
    knowledge = _k(space, gems_root, "food", FOOD)
    forged = "ent_" + "A" * 22
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await knowledge.facts.put(subject=forged, predicate_hint="pref.food.like", value="x" * 70_000)
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="x" * 70_000, object=forged)


async def test_refs_are_resolved_before_permission(space: Space, gems_root: Path) -> None:
    """OD-K07 (2 before 4): a forged subject without any write permission is ``no entity``."""
    knowledge = _k(space, gems_root, "reader", ["facts.read:self:pref.food.*"])
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.facts.put(subject="ent_" + "A" * 22, predicate_hint="pref.food.like", value="x")
    with pytest.raises(KnowledgePermissionError, match=re.escape("facts.write:self:pref.food.like")):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="x")


async def test_permission_is_checked_before_the_quota(space: Space, gems_root: Path) -> None:
    """OD-K07 (4 before 5): with the quota spent, an unpermitted write still reads as a permission error."""
    knowledge = _k(space, gems_root, "food", FOOD)
    for _ in range(500):  # each opening of the write path charges one write of the gem's quota
        with space.core.store.write(actor=Actor.gem("food"), run_id=None, limits=DailyLimits()):
            pass
    with pytest.raises(KnowledgePermissionError):
        await knowledge.facts.put(predicate_hint="location.home.city", value="Utrecht")
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")


# ---------------------------------------------------------------------- origin.override (K-FACT-26)


async def test_origin_and_source_need_origin_override(space: Space, gems_root: Path) -> None:
    """K-FACT-26, K-PERM-18, OD-K06."""
    knowledge = _k(space, gems_root, "organizer", FOOD)
    for extra in ({"origin": "gem:mail"}, {"source": "imported"}, {"origin": "gem:mail", "source": "imported"}):
        with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission origin.override")):
            await knowledge.facts.put({"predicateHint": "pref.food.like", "value": "stew", **extra})
    assert space.user.facts.lookup("self") == []
    assert _writes_today(space, "organizer") == 0


async def test_with_origin_override_the_gem_sets_origin_and_source_but_stays_the_writer(
    space: Space, gems_root: Path
) -> None:
    """K-FACT-26, OD-K14: the stored origin/source are the gem's choice; actor and writer stay the gem."""
    knowledge = _k(space, gems_root, "organizer", [*FOOD, "origin.override"])
    result = await knowledge.facts.put(
        predicate_hint="pref.food.like", value="stew", origin="gem:mail", source="imported"
    )
    [stored] = space.user.facts.lookup("self", "pref.food")
    assert (stored.origin, stored.source, stored.writer) == ("gem:mail", "imported", "gem:organizer")
    [change] = await knowledge.changes.list()
    assert change.actor == "gem:organizer"
    assert (await knowledge.facts.retract(result.ref)).status == "retracted"


@pytest.mark.parametrize(
    "extra",
    [{"origin": "user"}, {"origin": "assistant"}, {"source": "user"}, {"source": "inferred"}, {"origin": ""}],
)
async def test_reserved_origins_and_sources_are_refused_even_with_origin_override(
    space: Space, gems_root: Path, extra: dict[str, str]
) -> None:
    """OD-K14: a gem can never forge what the user said or what was inferred."""
    knowledge = _k(space, gems_root, "organizer", [*FOOD, "origin.override"])
    with pytest.raises(KnowledgeValidationError):
        await knowledge.facts.put({"predicateHint": "pref.food.like", "value": "stew", **extra})
    assert space.user.facts.lookup("self") == []


async def test_an_overridden_user_origin_cannot_beat_a_conflict(space: Space, gems_root: Path) -> None:
    """OD-K14: the user's value still wins against a gem that writes on behalf of another app."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    knowledge = _k(space, gems_root, "organizer", [*HOME, "origin.override"])
    result = await knowledge.facts.put(predicate_hint="location.home.city", value="Delft", origin="gem:mail")
    assert result.status == "conflict"
    assert [f.value for f in space.user.facts.lookup("self", "location.home")] == ["Utrecht"]


# ---------------------------------------------------------------------- facts.retract (K-FACT-29…32)


async def test_retract_expires_the_gem_own_fact_without_deleting_it(space: Space, gems_root: Path) -> None:
    """K-FACT-29, K-FACT-30, K-FACT-32, OD-K19: ``retracted``, then ``already_retracted``."""
    knowledge = _k(space, gems_root, "food", FOOD)
    put = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    assert (await knowledge.facts.retract(put.ref)).model_dump(by_alias=True) == {"status": "retracted"}
    assert (await knowledge.facts.retract(put.ref)).status == "already_retracted"
    assert await knowledge.facts.lookup("self", "pref.food") == []
    [change_of_retract, _] = await knowledge.changes.list()
    assert change_of_retract.op == "facts.retract"
    assert space.user.facts.get(put_id(space, "pref.food.like")).valid_to is not None


def put_id(space: Space, predicate: str) -> int:
    """The internal id of the one fact ever written under ``predicate`` (host side only)."""
    [fact_id] = [c.target_id for c in space.changes.list(run_id=None) if c.op == "facts.put" and predicate in c.summary]
    assert fact_id is not None
    return fact_id


async def test_retracting_a_replaced_fact_is_already_retracted(space: Space, gems_root: Path) -> None:
    """K-FACT-32, OD-K19: a fact replaced on a ``one`` predicate is no longer current."""
    knowledge = _k(space, gems_root, "home", HOME)
    first = await knowledge.facts.put(predicate_hint="location.home.city", value="Utrecht")
    await knowledge.facts.put(predicate_hint="location.home.city", value="Delft")
    assert (await knowledge.facts.retract(first.ref)).status == "already_retracted"


async def test_retracting_another_writer_fact_needs_changes_manage(space: Space, gems_root: Path) -> None:
    """K-FACT-31, OD-K19."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    install_gem(space, gems_root, "tidy", [*FOOD, "changes.manage"], on=FOOD)
    knowledge = space.gems.context("tidy").knowledge
    assert knowledge is not None
    [users] = await knowledge.facts.lookup("self", "pref.food")
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission changes.manage")):
        await knowledge.facts.retract(users.ref)
    assert _writes_today(space, "tidy") == 0
    switch(space, "tidy", ["changes.manage"])
    assert (await knowledge.facts.retract(users.ref)).status == "retracted"
    assert space.user.facts.lookup("self") == []


async def test_retract_needs_write_covering_the_fact(space: Space, gems_root: Path) -> None:
    """OD-K19: even one's own fact needs a ``facts.write`` over it at retract time."""
    install_gem(space, gems_root, "food", FOOD, on=FOOD)
    knowledge = space.gems.context("food").knowledge
    assert knowledge is not None
    put = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    space.gems.set_permission("food", "facts.write:self:pref.food.*", False)
    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:pref\.food\.like"):
        await knowledge.facts.retract(put.ref)
    assert len(space.user.facts.lookup("self")) == 1


async def test_a_read_only_grant_writes_nothing_and_a_write_only_grant_reads_nothing(
    space: Space, gems_root: Path
) -> None:
    """K-PERM-05, K-PERM-06, K-PERM-22, K-PERM-23: reads and writes are separate switches."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    install_gem(space, gems_root, "split", FOOD, on=["facts.write:self:pref.food.*"])
    knowledge = space.gems.context("split").knowledge
    assert knowledge is not None
    assert await knowledge.facts.lookup("self", "pref.food") == []
    assert (await knowledge.facts.put(predicate_hint="pref.food.dislike", value="cilantro")).status == "applied"
    switch(space, "split", FOOD, on=False)
    switch(space, "split", ["facts.read:self:pref.food.*"])
    assert len(await knowledge.facts.lookup("self", "pref.food")) == 2
    with pytest.raises(KnowledgePermissionError, match=re.escape("facts.write:self:pref.food.like")):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")


async def test_a_full_predicate_grant_covers_only_that_predicate(space: Space, gems_root: Path) -> None:
    """K-PERM-06, OD-K11: ``location.home.city`` does not cover ``location.home.address``."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    space.user.facts.put(predicate="location.home.address", value="Markt 1")
    knowledge = _k(
        space, gems_root, "city", ["facts.read:self:location.home.city", "facts.write:self:location.home.city"]
    )
    assert pairs(await knowledge.profile.get()) == {("location.home.city", "Utrecht")}
    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:location\.home\.address"):
        await knowledge.facts.put(predicate_hint="location.home.address", value="Dom 2")
