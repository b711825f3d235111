"""Uninstall and data ownership (K-UNINST-01…13, K-CON-04, OD-K48).

Documents and collections are counted as 0 here: this layer has facts and entities only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gem_fixtures import ALL, ex01_manifest, gem_ctx, install_gem, pairs, switch, write_manifest

from notochord import GemError, KnowledgeNotFoundError, Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
PEOPLE = ["entities.read:person", "entities.write:person"]


def _k(space: Space, root: Path, gem_id: str, permissions: list[str]) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions).knowledge
    assert knowledge is not None
    return knowledge


async def _contribute(space: Space, root: Path) -> KnowledgeApi:
    """The ``food`` gem: three current facts, one retracted, one replaced; the user wrote one more."""
    space.user.facts.put(predicate="pref.food.diet", value="vegetarian")
    knowledge = _k(space, root, "food", [*FOOD, *PEOPLE])
    for dish in ("stew", "soup", "noodles"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value=dish)
    gone = await knowledge.facts.put(predicate_hint="pref.food.dislike", value="cilantro")
    await knowledge.facts.retract(gone.ref)
    await knowledge.entities.resolve({"name": "Kim"}, create=True)
    return knowledge


async def test_contributions_count_the_gem_current_facts(space: Space, gems_root: Path) -> None:
    """K-UNINST-01, OD-K48: documents and collections are 0 until the documents layer exists."""
    await _contribute(space, gems_root)
    assert space.gems.contributions("food") == {"facts": 3, "documents": 0, "collections": 0}


async def test_keep_is_the_default_and_keeps_knowledge_with_its_origin(space: Space, gems_root: Path) -> None:
    """K-UNINST-02, K-UNINST-05, K-CON-04."""
    await _contribute(space, gems_root)
    report = space.gems.uninstall("food")
    assert (report.gem_id, report.facts, report.documents, report.collections) == ("food", 3, 0, 0)
    assert (report.deleted, report.run_id) == (False, None)
    kept = space.user.facts.lookup("self", "pref.food")
    assert {(f.value, f.origin) for f in kept} == {
        ("vegetarian", "user"),
        ("stew", "gem:food"),
        ("soup", "gem:food"),
        ("noodles", "gem:food"),
    }
    assert [e.display_name for e in space.user.entities.list("person")] == ["Kim"]


async def test_delete_expires_the_gem_facts_as_one_revertible_user_batch(space: Space, gems_root: Path) -> None:
    """K-UNINST-07, K-UNINST-09, OD-K48: expired, not deleted; entities are kept; the user can undo."""
    await _contribute(space, gems_root)
    report = space.gems.uninstall("food", delete_data=True)
    assert (report.facts, report.deleted) == (3, True)
    assert report.run_id is not None and report.run_id.startswith("uninstall:food:")
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.diet", "vegetarian")}
    assert [e.display_name for e in space.user.entities.list("person")] == ["Kim"]
    batch = space.changes.list(run_id=report.run_id)
    assert [(c.actor, c.op, c.target_type) for c in batch] == [("user", "uninstall.delete", "fact")] * 3
    expired = [space.user.facts.get(c.target_id) for c in batch if c.target_id is not None]
    assert all(f.valid_to is not None for f in expired)
    undone = space.changes.revert(run_id=report.run_id)
    assert (undone.status, undone.count) == ("reverted", 3)
    assert pairs(space.user.facts.lookup("self", "pref.food.like")) == {
        ("pref.food.like", "stew"),
        ("pref.food.like", "soup"),
        ("pref.food.like", "noodles"),
    }


async def test_delete_of_a_gem_that_wrote_nothing_offers_no_batch_to_undo(space: Space, gems_root: Path) -> None:
    """K-UNINST-09: with nothing deleted there is no batch, so no run id is handed out for an undo
    that would then answer "not found"."""
    install_gem(space, gems_root, "idle", FOOD, on=FOOD)
    report = space.gems.uninstall("idle", delete_data=True)
    assert (report.facts, report.documents, report.collections, report.deleted) == (0, 0, 0, True)
    assert report.run_id is None


async def test_uninstall_removes_the_gem_and_its_switches(space: Space, gems_root: Path) -> None:
    """K-UNINST-03, K-UNINST-04: the record, the switches and the installation's key are gone."""
    await _contribute(space, gems_root)
    space.gems.uninstall("food")
    assert space.gems.list() == []
    for call in (
        lambda: space.gems.permissions("food"),
        lambda: space.gems.context("food"),
        lambda: space.gems.registry.key("food", "refs"),
        lambda: space.gems.contributions("food"),
        lambda: space.gems.uninstall("food"),
    ):
        with pytest.raises(GemError, match="no gem"):
            call()
    assert space.gems.registry.granted("food").strings() == []


async def test_a_reinstalled_gem_starts_with_every_switch_off(space: Space, gems_root: Path) -> None:
    """K-UNINST-13, K-PERM-03."""
    await _contribute(space, gems_root)
    space.gems.uninstall("food")
    install_gem(space, gems_root, "food", [*FOOD, *PEOPLE])
    assert [s.on for s in space.gems.permissions("food")] == [False] * 4
    knowledge = space.gems.context("food").knowledge
    assert knowledge is not None
    assert await knowledge.facts.lookup("self", "pref.food") == []


async def test_a_reinstalled_gem_reads_kept_knowledge_under_new_refs(space: Space, gems_root: Path) -> None:
    """K-UNINST-11, K-UNINST-12: the old refs are gone for good; the kept facts read again once on."""
    before = await _contribute(space, gems_root)
    old_facts = {f.value: f.ref for f in await before.facts.lookup("self", "pref.food")}
    [old_kim] = await before.entities.list("person")
    [old_change, *_] = await before.changes.list()
    space.gems.uninstall("food")
    install_gem(space, gems_root, "food", [*FOOD, *PEOPLE], on=ALL)
    after = space.gems.context("food").knowledge
    assert after is not None
    new_facts = {f.value: f.ref for f in await after.facts.lookup("self", "pref.food")}
    assert set(new_facts) == set(old_facts) == {"vegetarian", "stew", "soup", "noodles"}
    assert not set(new_facts.values()) & set(old_facts.values())
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        await after.facts.retract(old_facts["stew"])
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await after.entities.get(old_kim.ref)
    with pytest.raises(KnowledgeNotFoundError, match="no change"):
        await after.changes.revert(old_change.ref)
    [new_kim] = await after.entities.list("person")
    assert (new_kim.display_name, new_kim.ref != old_kim.ref) == ("Kim", True)


async def test_a_reinstalled_gem_is_still_the_writer_of_its_kept_facts(space: Space, gems_root: Path) -> None:
    """K-UNINST-05, K-UNINST-12, OD-K14: kept facts still name ``gem:<id>`` as writer, so the gem
    installed again under that id may retract them without ``changes.manage``."""
    before = await _contribute(space, gems_root)
    assert len(await before.changes.list()) > 0
    space.gems.uninstall("food")
    install_gem(space, gems_root, "food", [*FOOD, *PEOPLE], on=ALL)
    after = space.gems.context("food").knowledge
    assert after is not None
    stew = next(f for f in await after.facts.lookup("self", "pref.food") if f.value == "stew")
    assert (await after.facts.retract(stew.ref)).status == "retracted"


async def test_declared_predicates_stay_in_the_vocabulary_after_uninstall(space: Space, gems_root: Path) -> None:
    """K-UNINST-10, K-MAN-08: ``pref.food.rated`` outlives the recipe gem, with or without its data."""
    space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    switch(space, "recipes", ALL)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    await knowledge.facts.put(predicate_hint="top-rated dishes", value="Tomato beef stew")
    space.gems.uninstall("recipes", delete_data=True)
    with space.core.store.read() as conn:
        rated = space.core.vocabulary.get(conn, "pref.food.rated")
    assert rated is not None and rated.cardinality == "many"
    assert space.user.facts.put(predicate="pref.food.rated", value="Braised pork").status == "applied"


async def test_delete_data_touches_only_the_uninstalled_gem_facts(space: Space, gems_root: Path) -> None:
    """K-UNINST-07: other writers' facts on the same predicates stay current."""
    space.user.facts.put(predicate="pref.food.like", value="by the user")
    other = _k(space, gems_root, "other", FOOD)
    await other.facts.put(predicate_hint="pref.food.like", value="by other")
    leaving = _k(space, gems_root, "leaving", FOOD)
    await leaving.facts.put(predicate_hint="pref.food.like", value="by leaving")
    assert space.gems.contributions("leaving")["facts"] == 1
    space.gems.uninstall("leaving", delete_data=True)
    assert pairs(space.user.facts.lookup("self")) == {
        ("pref.food.like", "by the user"),
        ("pref.food.like", "by other"),
    }
    assert space.gems.contributions("other")["facts"] == 1


async def test_a_kept_fact_reverted_later_by_the_user_is_still_the_user_choice(space: Space, gems_root: Path) -> None:
    """K-UNINST-05, K-CHG-08: after "Keep", the user can still undo the gem's writes one by one."""
    knowledge = _k(space, gems_root, "food", FOOD)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    space.gems.uninstall("food")
    [change] = space.changes.list(actor="gem:food")
    assert space.changes.revert(change.id).status == "reverted"
    assert space.user.facts.lookup("self") == []
