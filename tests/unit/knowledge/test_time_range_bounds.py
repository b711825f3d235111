"""Time ranges a caller gives (OD-K21, K-SRCH-06): a range that runs backwards, or epoch milliseconds
of no year the calendar holds, is refused with what is wrong, never answered as "nothing then"."""

from __future__ import annotations

from datetime import UTC

import pytest

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.timeranges import TimeRange, parse_time_range


def test_a_range_whose_from_is_after_its_to_is_refused_and_names_both() -> None:
    with pytest.raises(KnowledgeValidationError, match=r"from \(2027-01-01\) is after timeRange.to \(2026-01-01\)"):
        parse_time_range({"from": "2027-01-01", "to": "2026-01-01"}, tz=UTC)


def test_one_day_given_as_both_ends_is_that_whole_day() -> None:
    assert parse_time_range({"from": "2026-09-22", "to": "2026-09-22"}, tz=UTC) == TimeRange(
        "2026-09-22T00:00:00.000Z", "2026-09-22T23:59:59.999Z"
    )


@pytest.mark.parametrize("millis", [1_000_000_000_000_000, -100_000_000_000_000_000, 1e300, float("nan")])
def test_epoch_milliseconds_outside_the_calendar_are_refused(millis: float) -> None:
    with pytest.raises(KnowledgeValidationError, match="between the years 1 and 9999"):
        parse_time_range({"from": millis}, tz=UTC)
