"""Hand the passages a command leaves pending to a background worker (see :mod:`notochord.cli.embed_worker`).

Light on purpose: every command that opens the vault imports it, and it imports nothing of the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from notochord.search.vault_indexer import SpaceStore

__all__ = ["LOG_NAME", "any_pending", "hand_off"]

LOG_NAME = "embedding.log"
"""The worker's output, in ``<data_dir>/logs/``."""


def any_pending(spaces: list[tuple[str, SpaceStore]], model_id: str) -> bool:
    """Whether any of ``spaces`` (``(name, store)``: SQLite files or PostgreSQL databases' URLs) holds
    a passage without a vector of ``model_id`` for its current text."""
    from notochord.search.vault_indexer import has_pending

    return any(has_pending(store, model_id) for _, store in spaces)


def hand_off(data_dir: Path, spaces: list[tuple[str, SpaceStore]], model_id: str) -> bool:
    """Start a background worker when passages are pending and nobody embeds them; ``True`` if started."""
    from notochord.search.vault_indexer import indexer_pid

    if indexer_pid(data_dir) is not None or not any_pending(spaces, model_id):
        return False
    logs = data_dir / "logs"
    try:
        logs.mkdir(exist_ok=True)
        log = (logs / LOG_NAME).open("ab")
    except OSError:  # a read-only vault: it cannot store vectors either
        return False
    argv = [sys.executable, "-m", "notochord", "--data-dir", str(data_dir), "embed-worker"]
    with log, open(os.devnull, "rb") as nothing:
        if hasattr(os, "posix_spawn"):
            # No Popen object: the worker outlives this command and is never waited for. Its own
            # session, so a Ctrl-C in the terminal that ran the command does not stop it.
            os.posix_spawn(
                sys.executable,
                argv,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, nothing.fileno(), 0),
                    (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                    (os.POSIX_SPAWN_DUP2, log.fileno(), 2),
                ],
                setsid=True,
            )
        else:
            subprocess.Popen(argv, stdin=nothing, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    return True
