"""Passages written by one-shot commands become searchable by meaning without a manual ``reindex``.

Rules:

- A command that leaves passages without vectors (``docs import``, ``gem run``, …) *hands them
  off* as it exits: when no process embeds this vault yet (nobody holds ``indexer.lock``), it starts
  ``notochord embed-worker`` detached from itself and returns at once; the command never waits for
  the model.
- The worker embeds every space's pending passages (and whatever other commands write meanwhile),
  then exits by itself once nothing has been pending for :data:`IDLE_ROUNDS` polls. Its output goes
  to ``<data_dir>/logs/embedding.log``.
- A long-running process (``serve``) holds the lock and embeds itself, so commands started while it
  runs hand nothing off. With ``index_in_background = false`` or the embedder ``none`` nothing is
  started: ``notochord reindex`` embeds in the foreground.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from notochord.cli.common import DataDir, reporting, resolve_data_dir

__all__ = ["IDLE_ROUNDS", "POLL_SECONDS", "embed_worker", "hand_off"]

POLL_SECONDS = 2.0
"""How often the worker looks for pending passages once its spaces' own workers are running."""
IDLE_ROUNDS = 3
"""Polls in a row with nothing pending before the worker exits."""
LOG_NAME = "embedding.log"


def _any_pending(spaces: list[tuple[str, Path]], model_id: str) -> bool:
    from notochord.search.vector_index import has_pending

    return any(has_pending(path, model_id) for _, path in spaces)


def hand_off(data_dir: Path, spaces: list[tuple[str, Path]], model_id: str) -> bool:
    """Start a background worker when passages are pending and nobody embeds them; ``True`` if started."""
    from notochord.search.vector_index import indexer_pid

    if indexer_pid(data_dir) is not None or not _any_pending(spaces, model_id):
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


def embed_worker(data_dir: DataDir = None) -> None:
    """Embed every pending passage in the background, then exit (started by commands that write)."""
    import notochord
    from notochord.search.vector_index import indexer_pid
    from notochord.settings import Settings

    with reporting():
        settings = Settings.load(index_in_background=True)
        with notochord.open(resolve_data_dir(data_dir), settings, create=False) as nc:
            model_id = nc.embedding_model_id
            if model_id is None or indexer_pid(nc.data_dir) is not None or not nc.keep_indexed():
                return
            idle = 0
            while idle < IDLE_ROUNDS:
                time.sleep(POLL_SECONDS)
                idle = 0 if _any_pending(nc.space_files(), model_id) else idle + 1
