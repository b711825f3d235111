"""The gems' switches are reused under their grants version, and never past a change of them.

The switches a call reads are
kept with the grants version they were read under, and every write of a switch replaces that
version in the same transaction. These cases warm that reuse first, then move a switch by every
way there is (the host API, the command line in another process, a second store on the same
data, uninstall and reinstall, a write that rolls back) and require the very next call to act on
it (K-PERM-03, K-PERM-04, K-PERM-05, K-PERM-21, K-PERM-22, K-PERM-25). Each runs on SQLite and on
PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from gem_fixtures import install_gem, packaged_manifest, write_manifest

import notochord
from notochord import GemError, KnowledgeNotFoundError, KnowledgePermissionError, Space
from notochord.db.schema import space_meta
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.gems.grants import GRANTS_VERSION_KEY
from notochord.knowledge.writes import USER
from notochord.settings import Settings

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
READ_FOOD = FOOD[0]


def _version(space: Space) -> str | None:
    with space.core.store.read() as conn:
        found = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == GRANTS_VERSION_KEY)).scalar()
    return None if found is None else str(found)


def _knowledge(space: Space) -> KnowledgeApi:
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    return knowledge


async def _warm(knowledge: KnowledgeApi) -> None:
    """Read and write under the current switches, so that what they are is known and kept."""
    assert [f.value for f in await knowledge.facts.lookup("self", "pref.food")] == ["stew"]
    assert (await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")).status == "applied"
    await knowledge.facts.retract((await knowledge.facts.lookup("self", "pref.food.like"))[-1].ref)


async def _refused(knowledge: KnowledgeApi) -> None:
    """The switches are off: a query leaves the facts out, a write is refused naming what is missing."""
    assert await knowledge.facts.lookup("self", "pref.food") == []
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission facts\.write:self:pref\.food"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")


@pytest.fixture
def recipes(space: Space, gems_root: Path) -> KnowledgeApi:
    install_gem(space, gems_root, "recipes", FOOD, on=FOOD)
    space.user.facts.put(predicate="pref.food.like", value="stew")
    return _knowledge(space)


def test_a_new_space_has_a_grants_version_before_any_gem(space: Space) -> None:
    """Migration 0011 gives every space a version, so switches can be kept from
    the first call."""
    assert _version(space)


def test_every_write_of_a_switch_gives_the_grants_a_new_version(space: Space, gems_root: Path) -> None:
    """K-PERM-04: install, switching on, switching off, upgrade and uninstall
    each replace the version; a refused switch changes nothing, the version neither."""
    seen = [_version(space)]
    install_gem(space, gems_root, "recipes", FOOD)
    seen.append(_version(space))
    space.gems.set_permission("recipes", READ_FOOD, True)
    seen.append(_version(space))
    space.gems.set_permissions("recipes", FOOD, False)
    seen.append(_version(space))
    with pytest.raises(GemError, match="did not request"):
        space.gems.set_permission("recipes", "changes.manage", True)
    assert _version(space) == seen[-1]
    space.gems.uninstall("recipes")
    seen.append(_version(space))
    assert None not in seen
    assert len(set(seen)) == len(seen), seen


def test_an_upgrade_that_drops_or_adds_switches_gives_a_new_version(space: Space, gems_root: Path) -> None:
    """P-GEN-06: an upgrade drops the switches no longer requested and adds new
    ones off; either is a write of the switches."""
    install_gem(space, gems_root, "recipes", FOOD, on=FOOD)
    before = _version(space)
    space.gems.upgrade(write_manifest(gems_root, packaged_manifest("recipes", [READ_FOOD], version="1.1.0")))
    dropped = _version(space)
    assert dropped != before
    space.gems.upgrade(write_manifest(gems_root, packaged_manifest("recipes", FOOD, version="1.2.0")))
    assert _version(space) != dropped
    assert {p.permission: p.on for p in space.gems.permissions("recipes")} == {READ_FOOD: True, FOOD[1]: False}


async def test_a_switch_turned_off_is_refused_at_the_very_next_call(space: Space, recipes: KnowledgeApi) -> None:
    """K-PERM-04, K-PERM-21, K-PERM-22: with the switches known from earlier
    calls, switching them off holds for the next lookup and the next write, and switching them on
    again for the call after."""
    await _warm(recipes)
    space.gems.set_permissions("recipes", FOOD, False)
    await _refused(recipes)
    space.gems.set_permissions("recipes", FOOD, True)
    await _warm(recipes)


async def test_one_switch_off_leaves_the_others_on(space: Space, recipes: KnowledgeApi) -> None:
    """K-PERM-04, K-PERM-08: the write switch off, reading still works and
    writing is refused from the next call."""
    await _warm(recipes)
    space.gems.set_permission("recipes", FOOD[1], False)
    assert [f.value for f in await recipes.facts.lookup("self", "pref.food")] == ["stew"]
    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:pref\.food"):
        await recipes.facts.put(predicate_hint="pref.food.like", value="soup")


async def test_a_switch_turned_off_by_the_command_line_in_another_process_holds_at_the_next_call(
    nc: notochord.Notochord, space: Space, recipes: KnowledgeApi
) -> None:
    """K-PERM-04: ``notochord gem revoke`` runs in its own process with its own
    caches; this process's next call sees the switch off, and ``gem grant`` on again."""
    await _warm(recipes)
    env = {**os.environ, "NOTOCHORD_EMBEDDER": "none"}
    if nc.settings.database_url is not None:
        env["NOTOCHORD_DATABASE_URL"] = nc.settings.database_url

    def cli(verb: str) -> None:
        command = [sys.executable, "-m", "notochord", "gem", verb, "recipes", *FOOD, "--data-dir", str(nc.data_dir)]
        subprocess.run(command, check=True, env=env, timeout=120, capture_output=True)

    cli("revoke")
    await _refused(recipes)
    cli("grant")
    await _warm(recipes)


@pytest.fixture
def second_store(nc: notochord.Notochord) -> Iterator[Space]:
    """The same data opened a second time: its own engine, registry and caches (another replica)."""
    settings = Settings(data_dir=nc.data_dir, index_in_background=False, database_url=nc.settings.database_url)
    with notochord.open(nc.data_dir, settings, embedder=None) as other:
        yield other.personal


async def test_a_switch_moved_through_another_store_holds_at_the_next_call(
    space: Space, recipes: KnowledgeApi, second_store: Space
) -> None:
    """K-PERM-04: the version lives in the database, so a second store on the
    same data (on PostgreSQL: another replica of the service) moves the switches for this one too,
    back and forth, and each time the very next call here follows."""
    for _ in range(2):
        await _warm(recipes)
        second_store.gems.set_permissions("recipes", FOOD, False)
        await _refused(recipes)
        second_store.gems.set_permissions("recipes", FOOD, True)
    await _warm(recipes)


async def test_uninstall_and_reinstall_start_again_from_every_switch_off(
    space: Space, gems_root: Path, recipes: KnowledgeApi
) -> None:
    """K-PERM-03, K-UNINST: after an uninstall, a ctx still held is refused;
    the reinstalled gem starts with every switch off and new refs, whatever was known before."""
    await _warm(recipes)
    old_ref = (await recipes.facts.lookup("self", "pref.food"))[0].ref
    space.gems.uninstall("recipes")
    await _refused(recipes)
    install_gem(space, gems_root, "recipes", FOOD)
    again = _knowledge(space)
    await _refused(again)
    await _refused(recipes)
    with pytest.raises(KnowledgeNotFoundError):
        await again.facts.retract(old_ref)
    space.gems.set_permissions("recipes", FOOD, True)
    found = await again.facts.lookup("self", "pref.food")
    assert [f.value for f in found] == ["stew"]
    assert found[0].ref != old_ref


async def test_switches_read_inside_a_write_that_rolled_back_are_never_reused(
    space: Space, recipes: KnowledgeApi
) -> None:
    """K-PERM-04: a transaction that switched the gem off and read its switches
    there, then rolled back, leaves them on for the next call; the revoke that commits afterwards
    holds at the call after it."""
    await _warm(recipes)
    registry = space.gems.registry

    class UndoneError(Exception):
        pass

    with pytest.raises(UndoneError), space.core.store.write(actor=USER, run_id=None) as tx:
        registry.grants.switch(tx.conn, "recipes", FOOD, False, now=tx.now)
        assert registry.granted("recipes", tx.conn).strings() == []
        raise UndoneError
    await _warm(recipes)
    space.gems.set_permissions("recipes", FOOD, False)
    await _refused(recipes)


async def test_a_put_refused_after_a_revoke_writes_nothing(space: Space, recipes: KnowledgeApi) -> None:
    """K-PERM-05, P-KVAL-09: the write's own check, inside its transaction, sees
    the revoke even when the switches were known from a moment before."""
    await _warm(recipes)
    space.gems.set_permission("recipes", FOOD[1], False)
    with pytest.raises(KnowledgePermissionError):
        await recipes.facts.put(predicate_hint="pref.food.like", value="pie")
    assert [f.value for f in space.user.facts.lookup("self", "pref.food")] == ["stew"]
