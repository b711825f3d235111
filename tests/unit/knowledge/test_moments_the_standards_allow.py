"""A hostile caller: moments that ISO 8601 and RFC 3339 allow and Python's parser does not.

A leap second (``23:59:60``), the end of a day written ``24:00``, and a lower-case ``t`` or ``z``
are valid timestamps. Before, a diary entry's ``meta.date`` written so was not read as a date at
all: the entry was dated the moment it was written (today), listed and searched as today's; and a
``since`` or ``timeRange`` given so was refused as not a date. A leap second now reads as the last
millisecond of its minute (it stays on its own day), ``24:00`` as the next day's start, and
anything else that is not a moment is still refused.
K-SRCH-06, K-SRCH-07, K-CHG-02, K-DOC-13, K-DOC-21, OD-K20, OD-K21, OD-K39, OD-K42.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from notochord import Space
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.timeranges import document_date, parse_moment

_AMSTERDAM = ZoneInfo("Europe/Amsterdam")
_WRITTEN = "2026-09-29T08:00:00.000Z"


@pytest.mark.parametrize(
    ("given", "moment"),
    [
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999Z"),
        ("2016-12-31T23:59:60.5Z", "2016-12-31T23:59:59.999Z"),
        ("2015-07-01T01:59:60+02:00", "2015-06-30T23:59:59.999Z"),
        ("2016-12-31t23:59:60z", "2016-12-31T23:59:59.999Z"),
        ("2026-09-29t10:00:00z", "2026-09-29T10:00:00.000Z"),
        ("2026-09-29T24:00:00Z", "2026-09-30T00:00:00.000Z"),
        ("2026-09-29T24:00Z", "2026-09-30T00:00:00.000Z"),
        ("2026-03-28T24:00", "2026-03-28T23:00:00.000Z"),  # no zone: a local time
        ("9999-12-31T23:59:60Z", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_a_leap_second_the_end_of_a_day_and_lower_case_letters_are_moments(given: str, moment: str) -> None:
    """OD-K20, OD-K21: each is the moment ISO 8601 means, in UTC with milliseconds."""
    assert parse_moment(given, tz=_AMSTERDAM) == moment
    assert document_date({"date": given}, updated_at=_WRITTEN, tz=_AMSTERDAM) == moment


@pytest.mark.parametrize(
    "given",
    ["2016-12-31T23:59:61Z", "2016-12-31T23:60:00Z", "2026-09-29T24:00:01Z", "2026-09-29T24:30Z", "2026-09-29T25:00Z"],
)
def test_what_is_not_a_moment_is_still_refused_and_dates_nothing(given: str) -> None:
    """OD-K21, OD-K39: a second past 60, a minute of 60, or a time past 24:00 names no moment."""
    with pytest.raises(KnowledgeValidationError, match="is not a date"):
        parse_moment(given, tz=_AMSTERDAM)
    assert document_date({"date": given}, updated_at=_WRITTEN, tz=_AMSTERDAM) == _WRITTEN


def test_the_end_of_the_last_day_of_the_calendar_is_its_last_moment_or_refused() -> None:
    """OD-K21: ``9999-12-31T24:00`` lies past the calendar: refused as a bound, held at the last moment
    as a document's date (as every date just outside it is)."""
    with pytest.raises(KnowledgeValidationError, match="outside the years 1 to 9999"):
        parse_moment("9999-12-31T24:00:00Z", tz=_AMSTERDAM)
    assert document_date({"date": "9999-12-31T24:00Z"}, updated_at=_WRITTEN, tz=_AMSTERDAM) == (
        "9999-12-31T23:59:59.999Z"
    )


def test_a_diary_entry_dated_at_a_leap_second_is_listed_and_searched_on_its_day(space: Space) -> None:
    """K-DOC-13, K-DOC-21, K-SRCH-07, OD-K39: before, the entry was dated today (when it was written)."""
    space.user.documents.upsert(
        collection="diary",
        key="new-year",
        title="Leap",
        body="the longest night",
        meta={"date": "2016-12-31T23:59:60Z"},
    )

    that_day = {"from": "2016-12-31T00:00:00Z", "to": "2016-12-31T23:59:60Z"}
    assert [h.title for h in space.user.search("longest", time_range=that_day)] == ["Leap"]
    assert space.user.search("longest", time_range={"from": "2026-09-29"}) == []
    [entry] = space.user.documents.list("diary")
    assert entry.doc_date == "2016-12-31T23:59:59.999Z"
    assert [c.op for c in space.changes.list(since="2016-12-31T23:59:60z")] == ["documents.create"]
