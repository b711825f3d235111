"""A stand-in for one of the Markdown reader's compiled patterns that counts the matches it hands
out: how a test shows a scan visits each token once (work counted, never timed)."""

from __future__ import annotations

import re
from collections.abc import Iterator


class CountingPattern:
    """Stands for ``pattern`` wherever the reader calls ``finditer``, and counts what it yields."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.tokens = 0

    def finditer(self, text: str, pos: int = 0, endpos: int = 2**63 - 1) -> Iterator[re.Match[str]]:
        for token in self.pattern.finditer(text, pos, endpos):
            self.tokens += 1
            yield token
