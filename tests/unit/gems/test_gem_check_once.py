"""A gem's fact writes decide permission once, inside the transaction that writes (P-KVAL-09).

The check and the write share one transaction, so a switch turned off after the
gem's call began but before its write committed refuses the write; nothing is written and no quota
is spent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from gem_fixtures import gem_ctx

from notochord import KnowledgeNotFoundError, KnowledgePermissionError, Space
from notochord.access.permissions import PermissionSet
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
TODAY = "2026-09-29"
T = TypeVar("T")


def _knowledge(space: Space, root: Path, gem_id: str) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, FOOD).knowledge
    assert knowledge is not None
    return knowledge


def _revoke_after_first_read(space: Space, knowledge: KnowledgeApi, gem_id: str) -> None:
    """The user switches facts.write off after the call began, before its write transaction opens."""
    original = knowledge.run

    async def run_then_revoke(work: Callable[[], T], *, short_read: bool = False) -> T:
        def revoked_first() -> T:
            space.gems.set_permission(gem_id, "facts.write:self:pref.food.*", False)
            return work()

        return await original(revoked_first, short_read=short_read)

    # deliberately patched on this one facade: the revoke has to land inside the call
    knowledge.run = run_then_revoke  # type: ignore[method-assign]


async def test_a_revoke_committed_before_the_write_refuses_the_put(space: Space, gems_root: Path) -> None:
    """P-KVAL-09, K-PERM-04."""
    knowledge = _knowledge(space, gems_root, "recipes")
    _revoke_after_first_read(space, knowledge, "recipes")
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    assert raised.value.permission == "facts.write:self:pref.food.like"
    assert space.user.facts.lookup("self", "pref.food") == []
    with space.core.store.read() as conn:
        assert usage(conn, writer="gem:recipes", day=TODAY)[0] == 0


async def test_a_revoke_committed_before_the_write_refuses_the_retract(space: Space, gems_root: Path) -> None:
    """P-KVAL-09."""
    knowledge = _knowledge(space, gems_root, "recipes")
    put = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    _revoke_after_first_read(space, knowledge, "recipes")
    with pytest.raises(KnowledgePermissionError):
        await knowledge.facts.retract(put.ref)
    assert [f.value for f in space.user.facts.lookup("self", "pref.food")] == ["stew"]


async def test_the_put_reads_the_switches_inside_its_write_transaction(space: Space, gems_root: Path) -> None:
    """The permission is decided on the connection that then writes the fact."""
    knowledge = _knowledge(space, gems_root, "recipes")
    original = knowledge.grants_in
    seen: list[tuple[bool, int]] = []

    def watched(conn: sa.Connection) -> PermissionSet:
        # the write lock is held (BEGIN IMMEDIATE) and the fact is not there yet
        facts_now = conn.execute(sa.text("SELECT count(*) FROM facts WHERE predicate = 'pref.food.like'")).scalar_one()
        seen.append((conn.in_transaction(), int(facts_now)))
        return original(conn)

    knowledge.grants_in = watched
    result = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    assert result.status == "applied"
    assert seen == [(True, 0)]


async def test_a_ref_to_the_user_reaches_no_fact_write(space: Space, gems_root: Path) -> None:
    """K-CON-05: with subject and object resolved once inside facts.put, a ref
    that names the user still reads as no entity, as subject and as object; nothing is written."""
    knowledge = _knowledge(space, gems_root, "recipes")
    with space.core.store.read() as conn:
        user_ref = knowledge.refs.encode("ent", space.core.entities.self_id(conn))
    with pytest.raises(KnowledgeNotFoundError):
        await knowledge.facts.put(subject=user_ref, predicate_hint="pref.food.like", value="stew")
    with pytest.raises(KnowledgeNotFoundError):
        await knowledge.facts.put(predicate_hint="pref.food.like", object=user_ref)
    assert space.user.facts.lookup("self", "pref.food") == []


def _revoke_on_first_tree_read(space: Space, gem_id: str, permission: str) -> None:
    """The user switches ``permission`` off right after the call first reads the collection tree
    (before its write transaction opens; once, so the write itself is not held up)."""
    collections = space.core.collections
    original = collections.tree
    done: list[bool] = []

    def tree_then_revoke(conn: sa.Connection) -> Any:
        found = original(conn)
        if not done:
            done.append(True)
            space.gems.set_permission(gem_id, permission, False)
        return found

    collections.tree = tree_then_revoke  # type: ignore[method-assign]


async def test_a_revoke_committed_before_the_write_refuses_a_document_upsert(space: Space, gems_root: Path) -> None:
    """P-KVAL-09: documents are decided inside the write transaction too, by the
    same permit as facts; nothing is written."""
    knowledge = gem_ctx(space, gems_root, "notes", ["collections.write:diary"]).knowledge
    assert knowledge is not None
    _revoke_on_first_tree_read(space, "notes", "collections.write:diary")
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.documents.upsert(collection="diary", key="monday", title="Monday", body="Rain")
    assert raised.value.permission == "collections.write:diary"
    assert space.user.documents.list("diary") == []


async def test_a_revoke_committed_before_the_write_refuses_a_collection_create(space: Space, gems_root: Path) -> None:
    """P-KVAL-09: creating a collection is decided inside its write transaction."""
    knowledge = gem_ctx(space, gems_root, "folders", ["collections.create"]).knowledge
    assert knowledge is not None
    _revoke_on_first_tree_read(space, "folders", "collections.create")
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.collections.create("Recipes")
    assert raised.value.permission == "collections.create"
    with space.core.store.read() as conn:
        assert [r.name for r in space.core.collections.tree(conn).by_id.values() if r.name == "Recipes"] == []
