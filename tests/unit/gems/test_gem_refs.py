"""Per-gem refs (K-CON-05/06, OD-K03 as overridden by DESIGN §4, OD-K08).

A ref is ``<type>_`` + base64url(AES-SIV(key of the gem installation, internal id, type)). The same
object has one stable ref per gem, a different ref for every other gem, and anything else a gem
presents (forged, truncated, of the wrong type, of another gem) reads as "not found".
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from gem_fixtures import gem_ctx

from notochord import KnowledgeNotFoundError, Space
from notochord.gems.context import GemContext
from notochord.gems.refs import RefCodec

pytestmark = pytest.mark.anyio

REF = re.compile(r"^(ent|fact|chg)_[A-Za-z0-9_-]+$")
CONTACTS = [
    "entities.read:person",
    "entities.write:person",
    "facts.read:person:relation.colleague",
    "facts.write:person:relation.colleague",
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
]


def _contacts(space: Space, root: Path, gem_id: str) -> GemContext:
    return gem_ctx(space, root, gem_id, CONTACTS)


# ---------------------------------------------------------------------- the codec itself


def test_codec_round_trips_and_is_deterministic() -> None:
    codec = RefCodec(bytes(range(32)))
    ref = codec.encode("ent", 12345)
    assert ref == codec.encode("ent", 12345)
    assert REF.match(ref)
    assert codec.decode("ent", ref) == 12345


def test_codec_refs_of_one_id_differ_by_type_and_key() -> None:
    one, two = RefCodec(b"\x01" * 32), RefCodec(b"\x02" * 32)
    assert one.encode("ent", 7) != one.encode("fact", 7).replace("fact_", "ent_")
    assert one.encode("ent", 7) != two.encode("ent", 7)


@pytest.mark.parametrize(
    "presented",
    [
        "ent_",
        "ent_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "ent_!!!!",
        "nonsense",
        "",
        "ent_" + "A" * 200,
    ],
)
def test_codec_refuses_forgeries_as_not_found(presented: str) -> None:
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        RefCodec(b"\x03" * 32).decode("ent", presented)


@pytest.mark.parametrize("presented", [None, 42, b"ent_x", ["ent_x"]])
def test_codec_refuses_non_strings_as_not_found(presented: object) -> None:
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        RefCodec(b"\x03" * 32).decode("fact", presented)


def test_codec_refuses_a_truncated_or_retyped_ref() -> None:
    codec = RefCodec(b"\x04" * 32)
    ref = codec.encode("fact", 99)
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        codec.decode("fact", ref[:-2])
    with pytest.raises(KnowledgeNotFoundError, match="no change"):
        codec.decode("chg", "chg_" + ref.removeprefix("fact_"))


# ---------------------------------------------------------------------- refs through ctx


async def test_the_same_entity_has_a_stable_ref_for_one_gem(space: Space, gems_root: Path) -> None:
    """OD-K03: the same object gives the same ref, across calls and across runs of the gem."""
    ctx = _contacts(space, gems_root, "stable")
    assert ctx.knowledge is not None
    made = await ctx.knowledge.entities.resolve({"email": "kim@example.nl"}, create=True)
    again = await ctx.knowledge.entities.resolve({"email": "kim@example.nl"})
    listed = await ctx.knowledge.entities.list("person")
    later_run = space.gems.context("stable")
    assert later_run.knowledge is not None
    in_later_run = await later_run.knowledge.entities.resolve({"email": "KIM@example.nl"})
    assert made is not None and again is not None and in_later_run is not None
    assert made.ref == again.ref == listed[0].ref == in_later_run.ref
    assert REF.match(made.ref)


async def test_refs_are_opaque_and_never_the_internal_id(space: Space, gems_root: Path) -> None:
    """K-CON-05: a ref carries no readable id."""
    ctx = _contacts(space, gems_root, "opaque")
    assert ctx.knowledge is not None
    made = await ctx.knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert made is not None
    [hosted] = space.user.entities.list("person")
    plain = base64.urlsafe_b64encode(hosted.id.to_bytes(8, "big")).rstrip(b"=").decode()
    token = made.ref.removeprefix("ent_")
    assert plain not in token
    assert len(token) >= 22
    assert RefCodec(space.gems.registry.key("opaque", "refs")).decode("ent", made.ref) == hosted.id


async def test_facts_and_changes_have_different_refs_for_each_gem(space: Space, gems_root: Path) -> None:
    """K-CON-06: one fact and one change, read by two gems, under two refs each."""
    one = _contacts(space, gems_root, "one")
    two = gem_ctx(space, gems_root, "two", [*CONTACTS, "changes.manage"])
    assert one.knowledge is not None and two.knowledge is not None
    put = await one.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [seen_by_two] = await two.knowledge.facts.lookup("self", "pref.food")
    assert (seen_by_two.value, seen_by_two.predicate) == ("stew", "pref.food.like")
    assert seen_by_two.ref != put.ref
    [change_for_one] = await one.knowledge.changes.list()
    [change_for_two] = await two.knowledge.changes.list()
    assert change_for_one.summary == change_for_two.summary
    assert change_for_one.ref != change_for_two.ref


@pytest.mark.parametrize("kind", ["forged", "truncated", "wrong type", "other gem"])
async def test_a_bad_entity_ref_reads_as_no_entity_everywhere(space: Space, gems_root: Path, kind: str) -> None:
    """OD-K08, K-FACT-10, K-FACT-28: every method taking an entity ref answers ``no entity``."""
    mine = _contacts(space, gems_root, "mine")
    other = _contacts(space, gems_root, "other")
    assert mine.knowledge is not None and other.knowledge is not None
    made = await mine.knowledge.entities.resolve({"email": "kim@example.nl"}, create=True)
    foreign = await other.knowledge.entities.resolve({"email": "kim@example.nl"})
    fact = await mine.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    assert made is not None and foreign is not None
    bad = {
        "forged": "ent_" + "A" * 22,
        "truncated": made.ref[:-3],
        "wrong type": fact.ref,
        "other gem": foreign.ref,
    }[kind]
    k = mine.knowledge
    calls = [
        k.entities.get(bad),
        k.entities.add_identifier(bad, "phone", "+31 6 1234 5678"),
        k.facts.lookup(bad, "relation"),
        k.facts.put(subject=bad, predicate_hint="relation.colleague", value="x"),
        k.facts.put(predicate_hint="pref.food.like", object=bad),
    ]
    for call in calls:
        with pytest.raises(KnowledgeNotFoundError, match="no entity"):
            await call


@pytest.mark.parametrize("kind", ["forged", "truncated", "wrong type", "other gem"])
async def test_a_bad_fact_ref_reads_as_no_fact(space: Space, gems_root: Path, kind: str) -> None:
    """OD-K08: ``facts.retract`` of anything but this gem's fact ref is ``no fact``."""
    mine = _contacts(space, gems_root, "mine")
    other = _contacts(space, gems_root, "other")
    assert mine.knowledge is not None and other.knowledge is not None
    own = await mine.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    foreign = await other.knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    made = await mine.knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert made is not None
    bad = {
        "forged": "fact_" + "B" * 22,
        "truncated": own.ref[:-3],
        "wrong type": made.ref,
        "other gem": foreign.ref,
    }[kind]
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        await mine.knowledge.facts.retract(bad)
    assert {f.value for f in space.user.facts.lookup("self", "pref.food")} == {"stew", "soup"}


@pytest.mark.parametrize("kind", ["forged", "truncated", "wrong type", "other gem"])
async def test_a_bad_change_ref_reads_as_no_change(space: Space, gems_root: Path, kind: str) -> None:
    """OD-K08: ``changes.revert`` of anything but this gem's change ref is ``no change``."""
    mine = _contacts(space, gems_root, "mine")
    other = _contacts(space, gems_root, "other")
    assert mine.knowledge is not None and other.knowledge is not None
    own = await mine.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await other.knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    [own_change] = await mine.knowledge.changes.list()
    [foreign_change] = await other.knowledge.changes.list()
    bad = {
        "forged": "chg_" + "C" * 22,
        "truncated": own_change.ref[:-3],
        "wrong type": own.ref,
        "other gem": foreign_change.ref,
    }[kind]
    with pytest.raises(KnowledgeNotFoundError, match="no change"):
        await mine.knowledge.changes.revert(bad)
    assert {f.value for f in space.user.facts.lookup("self", "pref.food")} == {"stew", "soup"}


async def test_the_user_entity_has_no_ref_and_self_is_the_only_way_to_name_it(space: Space, gems_root: Path) -> None:
    """OD-K30: ``self`` is never resolved or listed, so no gem ever holds a ref to it."""
    space.user.facts.put(predicate="identity.name", value="Sam")
    ctx = _contacts(space, gems_root, "selfless")
    assert ctx.knowledge is not None
    assert await ctx.knowledge.entities.resolve({"name": "self"}) is None
    assert await ctx.knowledge.entities.resolve({"name": "Sam"}) is None
    assert await ctx.knowledge.entities.list("person") == []
