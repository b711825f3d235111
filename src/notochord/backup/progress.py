"""How far a backup or a restore is, told to the caller in bytes of the vault as the work goes on."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress", "Told"]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: the stage under way and how many of its bytes are done."""

# often enough for a bar to move smoothly, rarely enough to cost nothing beside the work
_TELL_EVERY = 4 << 20


class Told:
    """Counts the bytes of the stage under way and passes them on to ``progress`` now and then."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._stage = ""
        self._done = self._told = self._total = 0

    def start(self, stage: str, total: int) -> None:
        self._stage, self._done, self._told, self._total = stage, 0, 0, total
        if self._progress is not None:
            self._progress(stage, 0, total)

    def advance(self, amount: int) -> None:
        self._done += amount
        if self._progress is not None and (self._done - self._told >= _TELL_EVERY or self._done >= self._total):
            self._told = self._done
            self._progress(self._stage, min(self._done, self._total), self._total)
