"""Reverting a run by id: an unknown run is not found, a run that wrote nothing undoes nothing
(K-CHG-03, K-CHG-04, OD-K08, OD-K44, OD-K45).

A run id that no change carries used to answer ``already_reverted`` with count 0, as if someone
had undone its changes before: a mistyped run id read as an undo done earlier. Now:

- a run id no change carries, and no run of the space is recorded under, is not found, naming
  the run, and nothing is written;
- a run that exists but recorded no change (a recorded run that only read, or the caller's own
  current run) is undone trivially: ``reverted`` with count 0, nothing written, since there was
  nothing of it to undo and no one undid it before;
- a run whose changes were all undone before still answers ``already_reverted``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import notochord
from knowledge_gem import knowledge_gem
from notochord.errors import KnowledgeNotFoundError

pytestmark = pytest.mark.anyio

FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _log(space: notochord.Space) -> list[tuple[int, str, str]]:
    return [(c.id, c.op, c.status) for c in space.changes.list()]


def test_reverting_a_run_no_change_carries_is_not_found_and_writes_nothing(space: notochord.Space) -> None:
    """K-CHG-03, OD-K08: a mistyped run id is not found, the message names it, and the log is unchanged."""
    space.user.facts.put(predicate="pref.food.like", value="sushi", run_id="nightly-2026-09-29")
    before = _log(space)

    with pytest.raises(KnowledgeNotFoundError) as refused:
        space.changes.revert(run_id="nightly-2026-09-30")

    assert "no run 'nightly-2026-09-30'" in str(refused.value)
    assert refused.value.what == "run"
    assert _log(space) == before
    assert [f.value for f in space.user.facts.lookup("self", "pref.food")] == ["sushi"]


def test_a_run_whose_changes_were_undone_still_answers_already_reverted(space: notochord.Space) -> None:
    """OD-K44: only unknown runs became errors; a known run undone before keeps its answer."""
    space.user.facts.put(predicate="pref.food.like", value="ramen", run_id="batch-1")
    first = space.changes.revert(run_id="batch-1")
    assert (first.status, first.count) == ("reverted", 1)
    again = space.changes.revert(run_id="batch-1")
    assert (again.status, again.count) == ("already_reverted", 0)


def test_a_recorded_run_that_wrote_nothing_is_undone_trivially(space: notochord.Space, tmp_path: Path) -> None:
    """K-CHG-03: a run the space recorded that made no change is reverted with count 0 and nothing
    is written; it never claims that its changes were undone before."""
    knowledge_gem(space, tmp_path / "gems", FOOD)
    space.gems.runner.begin("run-quiet", "recipes", tool="main")
    space.gems.runner.end("run-quiet")
    before = _log(space)

    result = space.changes.revert(run_id="run-quiet")

    assert (result.status, result.count) == ("reverted", 0)
    assert _log(space) == before


async def test_a_gem_reverting_its_own_current_run_before_writing_undoes_nothing(
    space: notochord.Space, tmp_path: Path
) -> None:
    """K-CHG-03, OD-K45: the gem's current run exists, whether or not it wrote yet."""
    knowledge = knowledge_gem(space, tmp_path / "gems", FOOD)
    result = await knowledge.changes.revert({"runId": knowledge.run_id})
    assert (result.status, result.count) == ("reverted", 0)
    assert _log(space) == []


async def test_a_gem_reverting_another_gems_run_finds_no_run(space: notochord.Space, tmp_path: Path) -> None:
    """K-CHG-04, OD-K45: run ids are scoped per gem, so another writer's run reads as unknown, and
    the refusal tells nothing about it; the other writer's change stays applied."""
    knowledge = knowledge_gem(space, tmp_path / "gems", FOOD)
    space.user.facts.put(predicate="pref.food.like", value="stew", run_id="shared-name")
    before = _log(space)

    with pytest.raises(KnowledgeNotFoundError) as refused:
        await knowledge.changes.revert({"runId": "shared-name"})

    assert "no run 'shared-name'" in str(refused.value)
    assert _log(space) == before
