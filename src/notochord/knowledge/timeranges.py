"""Moments and time ranges given by callers (OD-K21, K-SRCH-06).

A moment is epoch milliseconds, an ISO date (``2026-09-29``, read in the local time zone) or an ISO
date-time. In a range, a date-only ``from`` means the start of that local day and a date-only ``to``
the end of it (inclusive): ``{from: '2026-09-22', to: '2026-09-22'}`` is the whole day.

Every moment becomes ISO UTC text with a four-digit year (``0999-05-01T00:00:00.000Z``), because the
stores compare and order these texts as text: an unpadded ``999-…`` would sort after ``2026-…``.
A moment given by a caller must fall inside the years 1 to 9999 once taken to UTC; a document's
``meta.date`` that falls just outside them (``0001-01-01`` east of UTC) is held at that end of the
calendar instead, so it still sorts and filters as the oldest or newest date there is.

Python's parser leaves out three forms ISO 8601 and RFC 3339 allow, which are read here: a lower-case
``t`` or ``z``; a leap second (``23:59:60``), read as the last millisecond of its minute so that it
stays on its own day; and ``24:00``, the end of a day, read as the next day's start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from notochord.clock import iso_utc
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import shown

__all__ = ["TimeRange", "document_date", "parse_moment", "parse_time_range"]


_LAST_MS = time(23, 59, 59, 999_000)
_FIRST_MOMENT = "0001-01-01T00:00:00.000Z"
_LAST_MOMENT = "9999-12-31T23:59:59.999Z"


# "…:60" seconds, with a fraction or not, then a zone or not (the zone's "Z" already spelled +00:00)
_LEAP_SECOND = re.compile(r"(?P<minute>.+[T ]\d{2}:\d{2}:)60(?:[.,]\d+)?(?P<zone>[+-].*)?")
# "24:00", "24:00:00" or "24:00:00.000…", then a zone or not
_END_OF_DAY = re.compile(r"(?P<day>.+)[T ]24:00(?::00(?:[.,]0+)?)?(?P<zone>[+-].*)?")


def _iso_moment(text: str) -> datetime:
    """``text`` (stripped) as ``datetime.fromisoformat`` reads it, and in the forms of the module's
    rules that it does not read.

    Raises:
        ValueError: ``text`` is not an ISO date-time.
        OverflowError: it is ``24:00`` of the calendar's last day, which has no next day.
    """
    text = text.upper().replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        leap = _LEAP_SECOND.fullmatch(text)
        if leap is not None:
            return datetime.fromisoformat(f"{leap['minute']}59.999{leap['zone'] or ''}")
        end = _END_OF_DAY.fullmatch(text)
        if end is not None:
            return datetime.fromisoformat(f"{end['day']}T00:00{end['zone'] or ''}") + timedelta(days=1)
        raise


def _utc(moment: datetime, value: object, what: str) -> str:
    """``moment`` as ISO UTC; refused when its UTC time falls outside the years 1 to 9999."""
    try:
        return iso_utc(moment)
    except OverflowError:
        raise _outside_years(value, what) from None


def _outside_years(value: object, what: str) -> KnowledgeValidationError:
    return KnowledgeValidationError(
        f"{what} {shown(value)} falls outside the years 1 to 9999 once taken to UTC; choose a moment inside them"
    )


def parse_moment(value: object, *, tz: tzinfo, end_of_day: bool = False, what: str = "time") -> str:
    """``value`` as an ISO UTC string with milliseconds (comparable as text)."""
    if isinstance(value, bool):
        raise KnowledgeValidationError(f"{what} {shown(value)} is not a date, an ISO time or epoch milliseconds")
    if isinstance(value, int | float):
        try:
            return iso_utc(datetime.fromtimestamp(value / 1000, tz=tz))
        except (ValueError, OverflowError, OSError) as exc:
            raise KnowledgeValidationError(
                f"{what} {shown(value)} is not epoch milliseconds of a moment between the years 1 and 9999"
            ) from exc
    if isinstance(value, datetime):
        return _utc(value if value.tzinfo else value.replace(tzinfo=tz), value, what)
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                day = date.fromisoformat(text.upper())
                # the last millisecond of the day, not the next day's start minus one: 9999-12-31 has no next day
                return _utc(datetime.combine(day, _LAST_MS if end_of_day else time.min, tzinfo=tz), value, what)
            moment = _iso_moment(text)
            return _utc(moment if moment.tzinfo else moment.replace(tzinfo=tz), value, what)
        except ValueError:
            pass
        except OverflowError:
            raise _outside_years(value, what) from None
    raise KnowledgeValidationError(
        f"{what} {shown(value)} is not a date (YYYY-MM-DD), an ISO time or epoch milliseconds"
    )


@dataclass(frozen=True)
class TimeRange:
    start: str | None
    end: str | None


def parse_time_range(value: object, *, tz: tzinfo) -> TimeRange | None:
    """``{from?, to?}`` → inclusive bounds as ISO UTC strings; ``None`` for no range."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise KnowledgeValidationError("timeRange must be an object such as {'from': '2026-09-22'}")
    unknown = set(value) - {"from", "to"}
    if unknown:
        raise KnowledgeValidationError(f"timeRange accepts from and to, not {', '.join(sorted(map(str, unknown)))}")
    start = parse_moment(value["from"], tz=tz, what="timeRange.from") if value.get("from") is not None else None
    end = (
        parse_moment(value["to"], tz=tz, end_of_day=True, what="timeRange.to") if value.get("to") is not None else None
    )
    if start is not None and end is not None and start > end:
        # an empty answer would read as "nothing happened then"
        raise KnowledgeValidationError(
            f"timeRange.from ({value['from']}) is after timeRange.to ({value['to']}); swap them"
        )
    return TimeRange(start, end)


def document_date(meta: Mapping[str, Any], *, updated_at: str, tz: tzinfo) -> str:
    """The document date of OD-K39: ``meta.date`` when it is an ISO date or time, else ``updated_at``.

    A valid date whose UTC time falls just outside the years 1 to 9999 is held at that end.
    """
    candidate = meta.get("date")
    if isinstance(candidate, str):
        try:
            return parse_moment(candidate, tz=tz)
        except KnowledgeValidationError:
            year = _year_of(candidate)
            if year == 1:
                return _FIRST_MOMENT
            if year == 9999:
                return _LAST_MOMENT
    return updated_at


def _year_of(text: str) -> int | None:
    """The year of an ISO date or date-time, or ``None`` when ``text`` is neither."""
    stripped = text.strip()
    try:
        if len(stripped) == 10:
            return date.fromisoformat(stripped.upper()).year
        return _iso_moment(stripped).year
    except ValueError:
        return None
    except OverflowError:  # 24:00 of the last day of the calendar
        return 9999
