"""An injectable clock with the local time zone.

The daily quota counts by *local* date and every date-only input (``timeRange``, ``since``) is read
in the local time zone (OD-K21). The zone is the machine's unless configured; tests inject a
:class:`FixedClock` to make dates deterministic.
"""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Protocol
from zoneinfo import ZoneInfo

__all__ = ["Clock", "FixedClock", "SystemClock", "iso_utc", "local_date", "parse_iso_utc"]


class Clock(Protocol):
    """Source of the current time and of the local time zone."""

    @property
    def tz(self) -> tzinfo: ...

    def now(self) -> datetime:
        """Return the current time as an aware UTC datetime."""
        ...


def _machine_tz() -> tzinfo:
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


class SystemClock:
    """The real clock, in the machine's time zone unless a zone name is given."""

    def __init__(self, tz_name: str | None = None) -> None:
        self._tz: tzinfo = ZoneInfo(tz_name) if tz_name else _machine_tz()

    @property
    def tz(self) -> tzinfo:
        return self._tz

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: datetime, tz_name: str = "UTC") -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._tz: tzinfo = ZoneInfo(tz_name)
        self._lock = threading.Lock()

    @property
    def tz(self) -> tzinfo:
        return self._tz

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment.astimezone(UTC)


def local_date(clock: Clock) -> date:
    """The calendar date in the clock's local time zone."""
    return clock.now().astimezone(clock.tz).date()


def iso_utc(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds, e.g. ``2026-09-29T08:15:00.000Z`` (OD-K20).

    The year always has four digits: the stores compare and order these texts as text, and an
    unpadded ``999-…`` (what ``strftime("%Y")`` writes) would sort after ``2026-…``.
    ``OverflowError`` when the UTC time falls outside the years 1 to 9999.
    """
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso_utc(text: str) -> datetime:
    """Inverse of :func:`iso_utc` (also accepts any aware ISO 8601 string)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
