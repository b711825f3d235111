"""The cost of one fact write on SQLite, counted (K-FACT, K-CHG).

A host ``facts.put`` is one transaction of five statements between ``BEGIN IMMEDIATE`` and the
commit (the data versions, the slot, the fact, its change, the object it touched), and after the
first write it checks out no pool connection: writes run on the space's writer connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from walk_harness import counted

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings


@contextlib.contextmanager
def pool_checkouts(engine: sa.Engine) -> Iterator[list[int]]:
    """The pool checkouts ``engine`` makes inside the block (one entry each)."""
    checkouts: list[int] = []

    def on_checkout(*_args: Any) -> None:
        checkouts.append(1)

    sa.event.listen(engine, "checkout", on_checkout)
    try:
        yield checkouts
    finally:
        sa.event.remove(engine, "checkout", on_checkout)


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path, index_in_background=False)
    with notochord.open(tmp_path, settings, clock=clock, embedder=None) as opened:
        yield opened.personal


def test_a_fact_put_is_one_transaction_of_five_statements_on_the_writer_connection(space: notochord.Space) -> None:
    """No pool checkout, one ``BEGIN IMMEDIATE``, five statements."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    engine = space.core.store.engine
    with pool_checkouts(engine) as checkouts, counted(engine) as walk:
        result = space.user.facts.put(predicate="pref.food.like", value="coffee")
    assert result.status == "applied"
    assert checkouts == []
    assert walk.transactions == 1
    assert walk.statements[0] == "BEGIN IMMEDIATE"
    assert len(walk.statements) == 6, walk.statements


def test_a_batch_of_puts_is_one_transaction_on_the_writer_connection(space: notochord.Space) -> None:
    """``put_many`` of ten facts is one transaction, no pool checkout."""
    space.user.facts.put(predicate="pref.food.like", value="tea")
    engine = space.core.store.engine
    with pool_checkouts(engine) as checkouts, counted(engine) as walk:
        outcome = space.user.facts.put_many([{"predicate": "pref.food.like", "value": f"dish {n}"} for n in range(10)])
    assert [r.status for r in outcome.results] == ["applied"] * 10
    assert checkouts == []
    assert walk.transactions == 1
    assert walk.count("BEGIN IMMEDIATE") == 1
