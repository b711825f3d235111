"""Changes through ``ctx.knowledge``: ``changes.list`` and ``changes.revert`` (K-CHG-01…10, EX-13).

Also OD-K43…K45: the change record, revert semantics, and runIds scoped per gem.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from gem_fixtures import gem_ctx, install_gem, pairs, switch

from notochord import (
    KnowledgePermissionError,
    KnowledgeValidationError,
    RevertError,
    Space,
)
from notochord.clock import FixedClock
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
HOME = ["facts.read:self:location.home.*", "facts.write:self:location.home.*"]


def _k(space: Space, root: Path, gem_id: str, permissions: list[str], run_id: str | None = None) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions, run_id=run_id).knowledge
    assert knowledge is not None
    return knowledge


async def test_every_write_is_a_change_with_the_documented_shape(space: Space, gems_root: Path) -> None:
    """K-CHG-01, K-CHG-06, OD-K20, OD-K43, EX-13."""
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    assert ctx.knowledge is not None
    put = await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await ctx.knowledge.facts.retract(put.ref)
    [retract, create] = await ctx.knowledge.changes.list()
    assert create.model_dump(by_alias=True) == {
        "ref": create.ref,
        "runId": ctx.run_id,
        "actor": "gem:food",
        "op": "facts.put",
        "summary": create.summary,
        "status": "applied",
        "proposed": None,
        "createdAt": "2026-09-29T08:00:00.000Z",
    }
    assert "pref.food.like" in create.summary
    assert (retract.op, retract.status, retract.actor) == ("facts.retract", "applied", "gem:food")


async def test_duplicates_record_no_change(space: Space, gems_root: Path) -> None:
    """OD-K43: ``duplicate`` and ``already_retracted`` write no change."""
    knowledge = _k(space, gems_root, "food", FOOD)
    put = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await knowledge.facts.retract(put.ref)
    await knowledge.facts.retract(put.ref)
    assert [c.op for c in await knowledge.changes.list()] == ["facts.retract", "facts.put"]


async def test_since_is_an_inclusive_local_date_and_status_filters(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """K-CHG-02, OD-K21, OD-K43, EX-13: dates are local (Amsterdam); the list is newest first."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    knowledge = _k(space, gems_root, "home", HOME)
    await knowledge.facts.put(predicate_hint="location.home.address", value="Markt 1")
    clock.advance(timedelta(hours=14))  # 00:00 on 2026-09-30 in Amsterdam, 22:00 UTC the day before
    await knowledge.facts.put(predicate_hint="location.home.city", value="Amsterdam")
    everything = await knowledge.changes.list()
    assert [c.status for c in everything] == ["conflict", "applied"]
    assert [c.proposed for c in await knowledge.changes.list({"since": "2026-09-30"})] == ["Amsterdam"]
    assert len(await knowledge.changes.list(since="2026-09-29")) == 2
    assert await knowledge.changes.list(since="2026-10-01") == []
    conflicts = await knowledge.changes.list({"since": "2026-09-28", "status": "conflict"})
    assert [(c.op, c.proposed, c.created_at) for c in conflicts] == [
        ("facts.put", "Amsterdam", "2026-09-29T22:00:00.000Z")
    ]


@pytest.mark.parametrize("options", [{"status": "pending"}, {"since": "yesterday"}, {"until": "2026-09-29"}])
async def test_bad_list_options_are_validation_errors(space: Space, gems_root: Path, options: dict[str, str]) -> None:
    knowledge = _k(space, gems_root, "food", FOOD)
    with pytest.raises(KnowledgeValidationError):
        await knowledge.changes.list(options)


async def test_without_changes_manage_a_gem_sees_only_its_own_changes(space: Space, gems_root: Path) -> None:
    """K-CHG-04, K-CHG-10: other writers' changes are silently left out; nothing throws."""
    space.user.facts.put(predicate="pref.food.like", value="by the user")
    other = _k(space, gems_root, "other", FOOD)
    await other.facts.put(predicate_hint="pref.food.like", value="by another gem")
    install_gem(space, gems_root, "mine", FOOD)
    off = space.gems.context("mine").knowledge
    assert off is not None
    assert await off.changes.list() == []
    switch(space, "mine", FOOD)
    await off.facts.put(predicate_hint="pref.food.like", value="mine")
    assert [c.actor for c in await off.changes.list()] == ["gem:mine"]


async def test_with_changes_manage_a_gem_sees_others_changes_only_within_its_scope(
    space: Space, gems_root: Path
) -> None:
    """K-CHG-05, K-PERM-17: the user's food change is visible, the user's home change is not."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    writer = _k(space, gems_root, "writer", [*FOOD, *HOME])
    await writer.facts.put(predicate_hint="location.home.address", value="Markt 1")
    await writer.facts.put(predicate_hint="pref.food.dislike", value="cilantro")
    manager = _k(space, gems_root, "manager", [*FOOD, "changes.manage"])
    seen = await manager.changes.list()
    assert [(c.actor, c.summary) for c in seen] == [
        ("gem:writer", "pref.food.dislike = cilantro"),
        ("user", "pref.food.like = stew"),
    ]


async def test_reverting_another_writer_change_needs_changes_manage(space: Space, gems_root: Path) -> None:
    """K-CHG-04, K-CHG-05, K-FACT-31: with the switch off again, revert of a known ref throws."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    install_gem(space, gems_root, "manager", [*FOOD, "changes.manage"], on=[*FOOD, "changes.manage"])
    knowledge = space.gems.context("manager").knowledge
    assert knowledge is not None
    [users] = await knowledge.changes.list()
    switch(space, "manager", ["changes.manage"], on=False)
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission changes.manage")):
        await knowledge.changes.revert(users.ref)
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.like", "stew")}
    switch(space, "manager", ["changes.manage"])
    result = await knowledge.changes.revert(users.ref)
    assert result.model_dump(by_alias=True) == {"status": "reverted", "count": 1}
    assert space.user.facts.lookup("self") == []


async def test_reverting_another_writer_change_needs_write_over_its_object(space: Space, gems_root: Path) -> None:
    """K-CHG-05, OD-K06: ``changes.manage`` stays within the scope of the gem's other permissions."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    install_gem(
        space, gems_root, "auditor", [*FOOD, "changes.manage"], on=["facts.read:self:pref.food.*", "changes.manage"]
    )
    knowledge = space.gems.context("auditor").knowledge
    assert knowledge is not None
    [users] = await knowledge.changes.list()
    with pytest.raises(
        KnowledgePermissionError, match=r"lacks knowledge permission facts\.write:self:pref\.food\.like"
    ):
        await knowledge.changes.revert(users.ref)
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.like", "stew")}


async def test_writes_without_run_id_belong_to_the_run_and_revert_together(space: Space, gems_root: Path) -> None:
    """K-CHG-03, K-CHG-07, K-FACT-17, OD-K44, OD-K45: the run's own writes undo as one batch."""
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    assert ctx.knowledge is not None
    for dish in ("stew", "soup", "noodles"):
        await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value=dish)
    later = space.gems.context("food")
    assert later.knowledge is not None
    await later.knowledge.facts.put(predicate_hint="pref.food.like", value="rice")
    assert {c.run_id for c in await ctx.knowledge.changes.list()} == {ctx.run_id, later.run_id}
    result = await later.knowledge.changes.revert({"runId": ctx.run_id})
    assert (result.status, result.count) == ("reverted", 3)
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.like", "rice")}
    again = await later.knowledge.changes.revert(run_id=ctx.run_id)
    assert again.model_dump(by_alias=True) == {"status": "already_reverted", "count": 0}


async def test_bug_a_run_that_reverted_one_of_its_changes_can_still_be_reverted_as_a_batch(
    space: Space, gems_root: Path
) -> None:
    """K-CHG-03, OD-K44: the revert a run made is part of the run (it is a write of the run), but
    undoing the whole batch must still work and leave the state from before the run."""
    space.user.facts.put(predicate="pref.food.like", value="before")
    ctx = gem_ctx(space, gems_root, "food", FOOD)
    knowledge = ctx.knowledge
    assert knowledge is not None
    for dish in ("stew", "soup"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value=dish)
    [soup, _] = await knowledge.changes.list()
    await knowledge.changes.revert(soup.ref)
    result = await knowledge.changes.revert({"runId": ctx.run_id})
    assert result.status == "reverted"
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.like", "before")}


async def test_an_explicit_run_id_groups_a_batch(space: Space, gems_root: Path) -> None:
    """K-CHG-07, K-FACT-17, EX-05, EX-13: ``nightly-2026-09-29`` is undone as a whole."""
    knowledge = _k(space, gems_root, "food", FOOD)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="kept")
    for dish in ("stew", "soup"):
        await knowledge.facts.put({"predicateHint": "pref.food.like", "value": dish, "runId": "nightly-2026-09-29"})
    listed = await knowledge.changes.list()
    assert [c.run_id for c in listed][:2] == ["nightly-2026-09-29", "nightly-2026-09-29"]
    result = await knowledge.changes.revert({"runId": "nightly-2026-09-29"})
    assert (result.status, result.count) == ("reverted", 2)
    assert pairs(await knowledge.facts.lookup("self", "pref.food")) == {("pref.food.like", "kept")}
    assert [c.status for c in await knowledge.changes.list()].count("reverted") == 2


async def test_a_run_id_is_scoped_per_gem(space: Space, gems_root: Path) -> None:
    """OD-K45: gem B reverting runId ``x`` never touches gem A's run ``x``, even with changes.manage."""
    a = _k(space, gems_root, "gem-a", FOOD)
    b = _k(space, gems_root, "gem-b", [*FOOD, "changes.manage"])
    await a.facts.put(predicate_hint="pref.food.like", value="from a", run_id="x")
    await b.facts.put(predicate_hint="pref.food.like", value="from b", run_id="x")
    result = await b.changes.revert({"runId": "x"})
    assert (result.status, result.count) == ("reverted", 1)
    assert pairs(space.user.facts.lookup("self")) == {("pref.food.like", "from a")}
    assert (await b.changes.revert({"runId": "x"})).status == "already_reverted"
    assert [c.status for c in await a.changes.list()] == ["applied"]


async def test_revert_of_a_put_restores_the_value_it_replaced(space: Space, gems_root: Path) -> None:
    """OD-K44: a put expires the new fact and makes the replaced one current again."""
    knowledge = _k(space, gems_root, "home", HOME)
    await knowledge.facts.put(predicate_hint="location.home.city", value="Utrecht")
    await knowledge.facts.put(predicate_hint="location.home.city", value="Delft")
    [latest, _] = await knowledge.changes.list()
    await knowledge.changes.revert(latest.ref)
    assert pairs(await knowledge.facts.lookup("self", "location.home")) == {("location.home.city", "Utrecht")}


async def test_revert_of_a_retract_makes_the_fact_current_again(space: Space, gems_root: Path) -> None:
    """OD-K44."""
    knowledge = _k(space, gems_root, "food", FOOD)
    put = await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    await knowledge.facts.retract(put.ref)
    [retract, _] = await knowledge.changes.list()
    await knowledge.changes.revert(retract.ref)
    [back] = await knowledge.facts.lookup("self", "pref.food")
    assert (back.ref, back.value) == (put.ref, "stew")


async def test_reverting_a_conflict_only_dismisses_it(space: Space, gems_root: Path) -> None:
    """K-CHG-09, OD-K44: the user's value stays; the conflict is marked reverted."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    knowledge = _k(space, gems_root, "home", HOME)
    await knowledge.facts.put(predicate_hint="location.home.city", value="Amsterdam")
    [conflict] = await knowledge.changes.list(status="conflict")
    assert (await knowledge.changes.revert(conflict.ref)).status == "reverted"
    assert await knowledge.changes.list(status="conflict") == []
    assert pairs(space.user.facts.lookup("self")) == {("location.home.city", "Utrecht")}


async def test_a_revert_superseded_by_the_user_is_refused(space: Space, gems_root: Path) -> None:
    """OD-K44: undo never overwrites a later edit by another writer."""
    knowledge = _k(space, gems_root, "home", HOME)
    await knowledge.facts.put(predicate_hint="location.home.city", value="Delft")
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    [own] = await knowledge.changes.list()
    with pytest.raises(RevertError, match="superseded"):
        await knowledge.changes.revert(own.ref)
    assert pairs(space.user.facts.lookup("self")) == {("location.home.city", "Utrecht")}


async def test_reverting_twice_is_already_reverted_and_a_revert_cannot_be_reverted(
    space: Space, gems_root: Path
) -> None:
    """OD-K44."""
    knowledge = _k(space, gems_root, "food", FOOD)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [put] = await knowledge.changes.list()
    assert (await knowledge.changes.revert(put.ref)).status == "reverted"
    assert (await knowledge.changes.revert(put.ref)).model_dump(by_alias=True) == {
        "status": "already_reverted",
        "count": 0,
    }
    [revert, _] = await knowledge.changes.list()
    assert revert.op == "changes.revert"
    with pytest.raises(KnowledgeValidationError, match="cannot itself be reverted"):
        await knowledge.changes.revert(revert.ref)


@pytest.mark.parametrize("target", [None, {}, {"runId": ""}, {"runId": 5}])
async def test_revert_needs_a_change_ref_or_a_run_id(space: Space, gems_root: Path, target: object) -> None:
    knowledge = _k(space, gems_root, "food", FOOD)
    with pytest.raises(KnowledgeValidationError):
        await knowledge.changes.revert(target)  # type: ignore[arg-type]


async def test_a_revert_counts_as_a_write(space: Space, gems_root: Path) -> None:
    """OD-K22: ``changes.revert`` is one write of the daily quota."""
    knowledge = _k(space, gems_root, "food", FOOD)
    await knowledge.facts.put(predicate_hint="pref.food.like", value="stew")
    [put] = await knowledge.changes.list()
    await knowledge.changes.revert(put.ref)
    with space.core.store.read() as conn:
        assert usage(conn, writer="gem:food", day="2026-09-29")[0] == 2


async def test_the_user_can_undo_a_gem_batch(space: Space, gems_root: Path) -> None:
    """K-CHG-08: the user reverts a gem's run from "View changes"."""
    knowledge = _k(space, gems_root, "food", FOOD, run_id="batch-1")
    for dish in ("stew", "soup"):
        await knowledge.facts.put(predicate_hint="pref.food.like", value=dish)
    result = space.changes.revert(run_id="batch-1")
    assert (result.status, result.count) == ("reverted", 2)
    assert space.user.facts.lookup("self") == []
    assert {c.status for c in await knowledge.changes.list()} == {"reverted"}
