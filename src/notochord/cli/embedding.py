"""How the CLI tells a person about passages waiting to be embedded: counts, ETAs and who embeds them.

A one-shot command never embeds in the background (:func:`notochord.cli.common.opened`). What it
writes is embedded by a long-running process that holds the vault (``notochord serve``), which
notices within seconds, or by ``notochord reindex``. ETAs come from the embedding rate last measured
in the space, so they are known before this process has embedded anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.progress import ProgressColumn, Task
from rich.text import Text

__all__ = ["EtaColumn", "embedding_note", "format_eta", "pending_text"]


def format_eta(seconds: float | None) -> str:
    """``about 2 min``-style text for an ETA; ``unknown`` before any rate was measured."""
    if seconds is None:
        return "unknown"
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {round(seconds)} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def pending_text(row: Mapping[str, Any]) -> str:
    """The status line's tail for one space: its pending passages and their ETA, or nothing."""
    pending = int(row.get("pending") or 0)
    if not pending:
        return ""
    return f"   pending {pending:>6} (ETA {format_eta(row.get('etaSeconds'))})"


def embedding_note(rows: Sequence[Mapping[str, Any]], data_dir: str) -> list[str]:
    """Who embeds the pending passages of these spaces: a running process, or nobody until reindex."""
    if not any(int(r.get("pending") or 0) for r in rows):
        return []
    from notochord.search.vault_indexer import indexer_pid

    pid = indexer_pid(Path(data_dir))
    if pid is not None:
        return [f"pending passages are being embedded by a running notochord process (pid {pid})"]
    return ["pending passages are embedded by a running notochord serve, or now with: notochord reindex"]


class EtaColumn(ProgressColumn):
    """Time left: from this run's speed once measured, before that from the space's stored rate."""

    def render(self, task: Task) -> Text:
        speed = task.speed or task.fields.get("rate")
        if not speed or task.remaining is None:
            return Text("-:--:--", style="progress.remaining")
        return Text(str(timedelta(seconds=round(task.remaining / float(speed)))), style="progress.remaining")
