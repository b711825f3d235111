"""Every space of a vault with pending passages gets opened, so that its own embedding worker runs.

Rules:

- A long-running process (serve, the console, MCP over HTTP) runs one :class:`VaultIndexer`:
  it opens every space that has pending passages, at start-up and whenever another process writes
  to a space this process has not opened yet, so that the space's own worker embeds them. It holds
  ``<data_dir>/indexer.lock`` while it runs, so one-shot commands can tell whether someone will
  embed what they wrote (:func:`indexer_pid`). One-shot commands never embed themselves: what they
  write waits for that worker, or, when nobody holds the lock, for the background worker the
  command line starts as it exits (``notochord.cli.embed_worker``).
- A space is named by its *store*: its SQLite file (a :class:`~pathlib.Path`) or, on PostgreSQL, the
  URL of its database (a ``str``). :func:`has_pending` reads either the same way, so the hand-off and
  this indexer behave alike on both backends; on PostgreSQL the spaces are the databases under the
  ``database_url`` prefix, listed afresh every round, so a space another process (or another replica)
  creates is found like a new file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from notochord.db.migrate import head_revision
from notochord.search.vector_index import POLL_SECONDS

__all__ = ["LOCK_NAME", "SpaceStore", "VaultIndexer", "has_pending", "indexer_pid"]

log = logging.getLogger(__name__)

LOCK_NAME = "indexer.lock"

SpaceStore = Path | str
"""Where a space is stored: its SQLite file, or the (libpq) URL of its database on PostgreSQL."""

_PENDING_SQL = (
    "SELECT 1 FROM chunks AS c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors AS v "
    "WHERE v.chunk_id = c.id AND v.model_id = ? AND v.text_hash = c.text_hash) LIMIT 1"
)


def has_pending(store: SpaceStore, model_id: str) -> bool:
    """Whether the space stored at ``store`` holds a passage without a current ``model_id`` vector.

    ``store`` is a SQLite file, or a PostgreSQL database's URL. Reads without opening the space (no
    migration, no engine). A space another process is still creating (no committed schema yet) or
    holding locked reads as ``False``: the next round asks again, and opening it now would only race
    its creator's migration. A space at an older schema reads as ``True``: opening it migrates it,
    and its passages then need vectors tied to their text.
    """
    if isinstance(store, str):
        return _postgresql_has_pending(store, model_id)
    try:
        conn = sqlite3.connect(store.resolve().as_uri() + "?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        try:
            version = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.Error:
            return False
        if version is None:
            return False
        if version[0] != head_revision():
            return True
        return conn.execute(_PENDING_SQL, (model_id,)).fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _postgresql_has_pending(url: str, model_id: str) -> bool:
    import psycopg

    try:
        # a migration holds its locks until it commits: give up quickly and ask again next round
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5, options="-c lock_timeout=1000")
    except psycopg.Error:
        return False
    try:
        try:
            version = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except psycopg.Error:
            return False
        if version is None:
            return False
        if version[0] != head_revision():
            return True
        return conn.execute(_PENDING_SQL.replace("?", "%s"), (model_id,)).fetchone() is not None
    except psycopg.Error:
        return False
    finally:
        conn.close()


def _flock(handle: IO[str], *, exclusive: bool) -> bool:
    """Take an advisory lock without waiting; ``True`` when taken (always, where there is no flock)."""
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: nothing to coordinate with
        return True
    try:
        fcntl.flock(handle.fileno(), (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def indexer_pid(data_dir: Path) -> int | None:
    """The process id of a running process that embeds this vault's passages, or ``None``."""
    path = data_dir / LOCK_NAME
    try:
        with path.open("r", encoding="ascii") as handle:
            if _flock(handle, exclusive=False):
                return None
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else 0


class VaultIndexer:
    """Opens every space with pending passages, now and whenever one appears, while this process runs.

    Args:
        data_dir: the vault; the lock file lives there.
        spaces: the spaces that exist, as ``(name, store)``: their files, or their databases' URLs.
        is_open: whether this process has the named space open (its own worker then polls it).
        open_space: opens the named space, which starts its worker.
        model_id: the model whose vectors count.
    """

    def __init__(
        self,
        *,
        data_dir: Path,
        spaces: Callable[[], list[tuple[str, SpaceStore]]],
        is_open: Callable[[str], bool],
        open_space: Callable[[str], object],
        model_id: str,
        poll_seconds: float | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._spaces = spaces
        self._is_open = is_open
        self._open_space = open_space
        self._model_id = model_id
        self._poll = POLL_SECONDS if poll_seconds is None else poll_seconds
        self._stop = threading.Event()
        self._lock: IO[str] | None = None
        self._failed: set[str] = set()
        self._thread = threading.Thread(target=self._loop, name="notochord-vault-indexer", daemon=True)

    def start(self) -> None:
        self._take_lock()
        self._thread.start()

    def _take_lock(self) -> None:
        try:
            handle = (self._data_dir / LOCK_NAME).open("a+", encoding="ascii")
        except OSError as exc:  # a read-only vault: nothing will be embedded here anyway
            log.warning("cannot create %s: %s", self._data_dir / LOCK_NAME, exc)
            return
        if _flock(handle, exclusive=True):
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            self._lock = handle
        else:  # another long-running process holds it; both embed, the store keeps that correct
            handle.close()

    def run_once(self) -> list[str]:
        """Open the spaces not open yet that have pending passages; returns their names."""
        opened = []
        for name, store in self._spaces():
            if self._stop.is_set():
                break
            if self._is_open(name) or not has_pending(store, self._model_id):
                continue
            try:
                self._open_space(name)
            except Exception as exc:  # one broken space must not stop the others being embedded
                if name not in self._failed:
                    self._failed.add(name)
                    log.warning("cannot open space %s to embed its passages: %s", name, exc)
                continue
            opened.append(name)
        return opened

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # keep watching; the next round retries
                log.exception("looking for spaces with pending passages failed")
            self._stop.wait(timeout=self._poll)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None
