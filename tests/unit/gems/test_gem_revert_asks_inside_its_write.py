"""A gem's revert decides its permission once, inside the transaction that undoes (P-KVAL-09).

Undoing is writing, so ``changes.revert`` asks the same question as other gem writes, at the same
place: on the connection of its write transaction. A switch turned off after the call began but
before the undo is written refuses the undo; nothing is undone and no quota is spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from gem_fixtures import gem_ctx, install_gem

from notochord import KnowledgePermissionError, Space
from notochord.access.permissions import PermissionSet
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage
from notochord.knowledge.records import RevertResult

pytestmark = pytest.mark.anyio

FOOD_WRITE = "facts.write:self:pref.food.*"
FOOD = ["facts.read:self:pref.food.*", FOOD_WRITE]
TODAY = "2026-09-29"


def _knowledge(space: Space, root: Path, gem_id: str, permissions: Sequence[str] = FOOD) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions).knowledge
    assert knowledge is not None
    return knowledge


def _revoke_as_the_undo_begins(space: Space, gem_id: str, permission: str) -> None:
    """The user switches ``permission`` off at the last moment before the change log opens the
    revert's write transaction: after anything the call may have looked up first."""
    log = space.core.changes
    original = log.revert

    def revoke_then_revert(**arguments: Any) -> RevertResult:
        space.gems.set_permission(gem_id, permission, False)
        return original(**arguments)

    # deliberately patched on the space's change log: the revoke has to land inside the call
    log.revert = revoke_then_revert  # type: ignore[method-assign]


def _likes(space: Space) -> list[str]:
    return sorted(str(f.value) for f in space.user.facts.lookup("self", "pref.food.like"))


def _writes_today(space: Space, gem_id: str) -> int:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day=TODAY)[0]


async def test_a_revoke_just_before_the_undo_refuses_reverting_an_own_change(space: Space, gems_root: Path) -> None:
    """P-KVAL-09, K-CON-03, OD-K22: refused, the fact stays, the quota counts only the put."""
    knowledge = _knowledge(space, gems_root, "food")
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [change] = await knowledge.changes.list()
    _revoke_as_the_undo_begins(space, "food", FOOD_WRITE)

    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.changes.revert(change.ref)
    assert raised.value.permission.startswith("facts.write:self:pref.food")
    assert _likes(space) == ["stew"]
    assert [c.status for c in space.changes.list()] == ["applied"]
    assert _writes_today(space, "food") == 1


async def test_a_revoke_just_before_the_undo_refuses_reverting_an_own_run_whole(space: Space, gems_root: Path) -> None:
    """P-KVAL-09, K-CON-03, OD-K44: all or nothing; every change of the run stays applied."""
    knowledge = _knowledge(space, gems_root, "food")
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    _revoke_as_the_undo_begins(space, "food", FOOD_WRITE)

    with pytest.raises(KnowledgePermissionError):
        await knowledge.changes.revert({"runId": knowledge.run_id})
    assert _likes(space) == ["soup", "stew"]
    assert {c.status for c in space.changes.list(run_id=knowledge.run_id)} == {"applied"}
    assert _writes_today(space, "food") == 2


async def test_a_revoke_of_changes_manage_just_before_the_undo_refuses_reverting_another_writers_change(
    space: Space, gems_root: Path
) -> None:
    """P-KVAL-09, K-CHG-04, K-PERM-17: the refusal names changes.manage; the user's fact stays."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    install_gem(space, gems_root, "manager", [*FOOD, "changes.manage"], on=[*FOOD, "changes.manage"])
    knowledge = space.gems.context("manager").knowledge
    assert knowledge is not None
    [users] = await knowledge.changes.list()
    _revoke_as_the_undo_begins(space, "manager", "changes.manage")

    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.changes.revert(users.ref)
    assert raised.value.permission == "changes.manage"
    assert _likes(space) == ["stew"]
    assert _writes_today(space, "manager") == 0


async def test_the_revert_reads_the_switches_once_inside_its_write_transaction(space: Space, gems_root: Path) -> None:
    """P-KVAL-09: the switches are read on the connection that then undoes the change, before it
    is marked reverted, and only once for the permission and the quota together."""
    knowledge = _knowledge(space, gems_root, "food")
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [change] = await knowledge.changes.list()
    original = knowledge.grants_in
    seen: list[tuple[bool, list[str]]] = []

    def watched(conn: sa.Connection) -> PermissionSet:
        statuses = conn.execute(sa.text("SELECT status FROM changes ORDER BY id")).scalars().all()
        seen.append((conn.in_transaction(), list(statuses)))
        return original(conn)

    knowledge.grants_in = watched
    result = await knowledge.changes.revert(change.ref)
    assert (result.status, result.count) == ("reverted", 1)
    assert seen == [(True, ["applied"])]
    assert _likes(space) == []
