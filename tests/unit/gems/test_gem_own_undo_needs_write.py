"""A gem undoes its own changes only within what it may still write (K-CON-03, K-CHG-03, K-CHG-04).

Without ``changes.manage`` a gem sees and undoes only its own changes; undoing is writing, so once
the user switches a write permission off, the gem can no longer take back, through its own change,
what that permission covered. Switched on again, the undo goes through.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gem_fixtures import gem_ctx, switch

from notochord import KnowledgePermissionError, Space
from notochord.knowledge.quotas import usage

pytestmark = pytest.mark.anyio

FOOD_WRITE = "facts.write:self:pref.food.*"
FOOD = ["facts.read:self:pref.food.*", FOOD_WRITE]


def _current_likes(space: Space) -> list[object]:
    return [f.value for f in space.user.facts.lookup("self", "pref.food.like")]


async def test_undoing_its_own_change_is_refused_once_its_write_switch_is_off(space: Space, gems_root: Path) -> None:
    """K-CON-03, K-PERM-04, K-CHG-04: the refusal names the switch, and nothing is undone."""
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    assert ctx.knowledge is not None
    put = await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [change] = await ctx.knowledge.changes.list()
    switch(space, "food", [FOOD_WRITE], on=False)

    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:pref\.food"):
        await ctx.knowledge.changes.revert(change.ref)
    assert _current_likes(space) == ["stew"]

    switch(space, "food", [FOOD_WRITE])
    result = await ctx.knowledge.changes.revert(change.ref)
    assert (result.status, result.count) == ("reverted", 1)
    assert _current_likes(space) == []
    assert put.status == "applied"


async def test_undoing_its_own_run_is_refused_whole_when_one_change_may_no_longer_be_written(
    space: Space, gems_root: Path
) -> None:
    """K-CON-03, K-CHG-03, OD-K44: all or nothing; the run's changes stay applied."""
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    assert ctx.knowledge is not None
    await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="soup")
    switch(space, "food", [FOOD_WRITE], on=False)

    with pytest.raises(KnowledgePermissionError, match=r"facts\.write:self:pref\.food"):
        await ctx.knowledge.changes.revert({"runId": ctx.run_id})
    assert sorted(map(str, _current_likes(space))) == ["soup", "stew"]
    assert {c.status for c in space.changes.list(run_id=ctx.run_id)} == {"applied"}

    switch(space, "food", [FOOD_WRITE])
    result = await ctx.knowledge.changes.revert({"runId": ctx.run_id})
    assert (result.status, result.count) == ("reverted", 2)
    assert _current_likes(space) == []


async def test_a_refused_undo_counts_no_write_against_the_quota(space: Space, gems_root: Path) -> None:
    """OD-K22: only calls that pass the permission check count."""
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    assert ctx.knowledge is not None
    await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [change] = await ctx.knowledge.changes.list()
    switch(space, "food", [FOOD_WRITE], on=False)
    with pytest.raises(KnowledgePermissionError):
        await ctx.knowledge.changes.revert(change.ref)
    with space.core.store.read() as conn:
        assert usage(conn, writer="gem:food", day="2026-09-29")[0] == 1
