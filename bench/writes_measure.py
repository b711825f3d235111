"""What each side of ``bench/writes.py`` measures, and the few tools every side measures with.

Helpers only; run ``bench/writes.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(width=None if sys.stdout.isatty() else 140)


@dataclass
class Figures:
    writes_timed: int = 0
    write_seconds: float = 0.0
    write_latencies: list[float] = field(default_factory=list)
    bulk_rows: int = 0
    bulk_seconds: float = 0.0
    lookup_latencies: list[float] = field(default_factory=list)
    rows_returned: int = 0
    file_bytes: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    subject_ids: list[int] = field(default_factory=list)
    """The entity id of each subject of the specs (``self`` as 0 until :attr:`self_id` is known)."""
    self_id: int = 0

    @property
    def writes_per_second(self) -> float:
        return self.writes_timed / self.write_seconds if self.write_seconds else float("nan")

    @property
    def bulk_per_second(self) -> float:
        return self.bulk_rows / self.bulk_seconds if self.bulk_seconds else float("nan")


def percentile(samples: Sequence[float], q: int) -> float:
    if not samples:
        return float("nan")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def timed_loop(bar: Progress, label: str, items: Sequence[Any], call: Callable[[Any], None]) -> list[float]:
    """Run ``call`` on each item, one at a time, and return each call's seconds."""
    latencies: list[float] = []
    task = bar.add_task(label, total=len(items))
    for n, item in enumerate(items):
        started = time.perf_counter()
        call(item)
        latencies.append(time.perf_counter() - started)
        if n % 100 == 99:
            bar.update(task, completed=n + 1)
    bar.update(task, completed=len(items))
    return latencies


def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}×" if base else "n/a"
