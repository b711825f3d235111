"""A read filter holding text the store cannot hold is refused naming the filter, on both backends
(K-CHG-01, K-CHG-03).

No change was ever written with U+0000 or a lone surrogate in its run or its writer (writes refuse
them), so such a filter is the caller's mistake. PostgreSQL cannot even compare a NUL: before, its
driver's error escaped the change log's list and undo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import notochord
from notochord.errors import KnowledgeValidationError

READS: list[tuple[str, Callable[[notochord.Space, str], Any], str]] = [
    ("list by run", lambda s, bad: s.changes.list(run_id=f"run{bad}"), "runId"),
    ("list by writer", lambda s, bad: s.changes.list(actor=f"gem:we{bad}ather"), "actor"),
    ("undo a run", lambda s, bad: s.changes.revert(run_id=f"run{bad}"), "runId"),
]


@pytest.mark.parametrize("bad", ["\x00", "\ud800"], ids=["nul", "surrogate"])
@pytest.mark.parametrize(("what", "read", "field"), READS, ids=[r[0] for r in READS])
def test_a_change_filter_the_store_cannot_hold_is_refused_naming_it_and_changes_nothing(
    space: notochord.Space, bad: str, what: str, read: Callable[[notochord.Space, str], Any], field: str
) -> None:
    space.user.facts.put(predicate="pref.food.like", value="coffee", run_id="run")
    before = space.changes.list()
    with pytest.raises(KnowledgeValidationError) as refused:
        read(space, bad)
    message = str(refused.value)
    assert field in message and "remove it" in message, (what, message)
    assert space.changes.list() == before, what


def test_the_same_filters_without_such_text_read_as_before(space: notochord.Space) -> None:
    space.user.facts.put(predicate="pref.food.like", value="coffee", run_id="run")
    assert [c.run_id for c in space.changes.list(run_id="run")] == ["run"]
    assert space.changes.list(actor="gem:weather") == []
    assert space.changes.revert(run_id="run").count == 1
