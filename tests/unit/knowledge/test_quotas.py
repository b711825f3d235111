"""Daily quotas and single-write limits (K-QUOTA, OD-K22…K25), as the assistant writes."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa

from notochord import KnowledgeQuotaError, KnowledgeValidationError, Space
from notochord.clock import FixedClock
from notochord.knowledge.quotas import DailyLimits, usage


def _count_facts(space: Space) -> int:
    with space.core.store.read() as conn:
        return int(conn.execute(sa.text("select count(*) from facts")).scalar_one())


def test_500_writes_pass_the_501st_is_refused_and_the_next_local_day_is_fresh(space: Space, clock: FixedClock) -> None:
    """AS-13, K-QUOTA-01, K-QUOTA-05, K-QUOTA-06."""
    for i in range(500):
        space.as_assistant.facts.put(predicate="pref.food.like", value=f"dish {i}")
    changes_before = len(space.changes.list())
    with pytest.raises(KnowledgeQuotaError, match="quota"):
        space.as_assistant.facts.put(predicate="pref.food.like", value="one too many")
    assert _count_facts(space) == 500
    assert len(space.changes.list()) == changes_before
    # 2026-09-29 08:00 UTC is 10:00 in Amsterdam: local midnight comes 14 hours later
    clock.advance(timedelta(hours=13, minutes=59))
    with pytest.raises(KnowledgeQuotaError):
        space.as_assistant.facts.put(predicate="pref.food.like", value="still today")
    clock.advance(timedelta(minutes=1))
    assert space.as_assistant.facts.put(predicate="pref.food.like", value="tomorrow").status == "applied"


def test_no_op_writes_count_too(space: Space) -> None:
    """OD-K22: duplicates count, so a loop spinning on the same write still stops."""
    space.as_assistant.facts.put(predicate="pref.food.like", value="tea")
    for _ in range(499):
        assert space.as_assistant.facts.put(predicate="pref.food.like", value="tea").status == "duplicate"
    with pytest.raises(KnowledgeQuotaError):
        space.as_assistant.facts.put(predicate="pref.food.like", value="tea")


def test_the_users_own_writes_are_not_throttled(space: Space) -> None:
    """K-QUOTA-04: the limits are a safeguard against automation, not against the owner."""
    for i in range(520):
        space.user.facts.put(predicate="pref.food.like", value=f"dish {i}")
    assert _count_facts(space) == 520


def test_eight_threads_as_one_writer_reach_exactly_500(space: Space) -> None:
    """K-QUOTA-01 under concurrency: counted in the write's own transaction, exactly."""
    applied: list[int] = []
    refused: list[int] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(80):
            try:
                space.as_assistant.facts.put(predicate="pref.food.like", value=f"t{n}-{i}")
                with lock:
                    applied.append(1)
            except KnowledgeQuotaError:
                with lock:
                    refused.append(1)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(applied), len(refused)) == (500, 140)
    assert _count_facts(space) == 500
    with space.core.store.read() as conn:
        stored_chars = sum(len(v) for v in conn.execute(sa.text("select value_json from facts")).scalars())
        assert usage(conn, writer="assistant", day="2026-09-29") == (500, stored_chars)


def test_daily_text_quota_refuses_the_write_that_would_pass_it(space: Space) -> None:
    """K-QUOTA-02, OD-K23: the write that would push the total past the limit throws quota."""
    limits = DailyLimits(writes=500, chars=100)
    core = space.core
    core.facts.put(actor=space.as_assistant.actor, predicate="x.note", value="a" * 48, limits=limits)  # 50 chars
    core.facts.put(actor=space.as_assistant.actor, predicate="x.note", value="b" * 48, limits=limits)  # 100
    with pytest.raises(KnowledgeQuotaError, match="text quota of 100 characters"):
        core.facts.put(actor=space.as_assistant.actor, predicate="x.note", value="c", limits=limits)


def test_bulk_raises_only_the_text_limit() -> None:
    """K-QUOTA-03, OD-K24."""
    assert DailyLimits.for_writer(bulk=True) == DailyLimits(writes=500, chars=200_000_000)
    assert DailyLimits.for_writer(bulk=False) == DailyLimits(writes=500, chars=50_000_000)


def test_size_limit_errors_never_mention_quota_and_use_no_quota(space: Space) -> None:
    """K-QUOTA-14, OD-K07, OD-K25: validation comes before the quota."""
    with pytest.raises(KnowledgeValidationError) as error:
        space.as_assistant.facts.put(predicate="x.note", value="v" * 70_000)
    assert "exceeds limit" in str(error.value)
    assert "quota" not in str(error.value)
    with space.core.store.read() as conn:
        assert usage(conn, writer="assistant", day="2026-09-29") == (0, 0)
