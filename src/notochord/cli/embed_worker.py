"""Passages written by one-shot commands become searchable by meaning without a manual ``reindex``.

Rules:

- A command that leaves passages without vectors (``docs import``, ``gem run``, …) *hands them
  off* as it exits: when no process embeds this vault yet (nobody holds ``indexer.lock``), it starts
  ``notochord embed-worker`` detached from itself and returns at once; the command never waits for
  the model.
- The worker embeds every space's pending passages (and whatever other commands write meanwhile),
  then exits by itself once nothing has been pending for :data:`IDLE_ROUNDS` polls. Its output goes
  to ``<data_dir>/logs/embedding.log``.
- Two commands that exit at the same moment may both start a worker (each saw nobody holding the
  lock). Only the one that takes the lock embeds: the other leaves at once rather than embed the
  same passages again beside it.
- A long-running process (``serve``) holds the lock and embeds itself, so commands started while it
  runs hand nothing off. With ``index_in_background = false`` or the embedder ``none`` nothing is
  started: ``notochord reindex`` embeds in the foreground.
"""

from __future__ import annotations

import os
import time

from notochord.cli.common import DataDir, reporting, resolve_data_dir
from notochord.cli.handoff import any_pending

__all__ = ["IDLE_ROUNDS", "POLL_SECONDS", "embed_worker"]

POLL_SECONDS = 2.0
"""How often the worker looks for pending passages once its spaces' own workers are running."""
IDLE_ROUNDS = 3
"""Polls in a row with nothing pending before the worker exits."""


def embed_worker(data_dir: DataDir = None) -> None:
    """Embed every pending passage in the background, then exit (started by commands that write)."""
    import notochord
    from notochord.search.vault_indexer import indexer_pid
    from notochord.settings import Settings

    with reporting():
        settings = Settings.load(index_in_background=True)
        with notochord.open(resolve_data_dir(data_dir), settings, create=False) as nc:
            model_id = nc.embedding_model_id
            if model_id is None or indexer_pid(nc.data_dir) is not None or not nc.keep_indexed():
                return
            holder = indexer_pid(nc.data_dir)
            if holder is not None and holder != os.getpid():
                return  # another process took the lock first: it embeds
            idle = 0
            while idle < IDLE_ROUNDS:
                time.sleep(POLL_SECONDS)
                idle = 0 if any_pending(nc.space_stores(), model_id) else idle + 1
