"""The progress bar of the commands that take long: importing files, embedding, backup, restore."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn

from notochord.cli.common import console

__all__ = ["progress_bar"]


def progress_bar(
    *, hidden: bool, remaining: ProgressColumn | None = None, amount: ProgressColumn | None = None
) -> Progress:
    """The progress bar of long commands, on stderr so that stdout stays parseable.

    It is drawn on a terminal only, and cleared when it stops, leaving the terminal as it was. Off
    a terminal (stderr sent to a file or a pipe, a dumb terminal) there is nothing to draw, and
    rich would still write an empty line when the bar stops: the bar is switched off there.

    Args:
        hidden: no bar at all (``--json``, or nothing to do).
        remaining: the column of time left (default: from this run's speed).
        amount: the column of how much is done (default: items done of all, ``3/10``).
    """
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        amount or MofNCompleteColumn(),
        remaining or TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=hidden or not console.is_interactive,
    )
