"""The versions a file history keeps, and the bound on the space they take.

Rules:

- A saved version is a file ``blobs/<aa>/<sha256>`` beside ``history.db``, content-addressed, so the
  same content saved twice is stored once. The ``versions`` table lists each one with its size in
  bytes and the order it was last saved in (saving the same content again makes it the newest).
- The versions of one history (one folder's) take at most ``max_bytes`` together
  (:data:`HISTORY_MAX_BYTES` unless the ``file_history_max_bytes`` setting says otherwise). The bound
  is enforced as a version is saved: the versions saved longest ago are dropped first until the
  new one fits. The version just saved is never dropped, even when it alone is larger than the bound
  (only a history without a trash keeps such a version; with a trash it goes there instead).
- Dropping a version removes its file at once, which gives its space back to the disk, and marks
  every change that pointed at it (``old_dropped``), so a rollback can tell "dropped to keep the
  history within its size" from "never kept" or "gone missing".
- Placing a version's file, recording it on its change, and dropping older ones happen inside one
  ``BEGIN IMMEDIATE`` transaction: two writers sharing a history (two runs, the service and the
  command line) can never drop a version the other has just placed but not yet recorded.
- ``history.db`` holds only the index, about 300 bytes a change; dropping a version shortens rows
  but removes none, so the file has no free pages to give back (3,000 overwrites, 2,995 of them
  dropped: ``freelist_count`` 0) and needs neither ``auto_vacuum`` nor ``VACUUM``. The saved bytes
  are all in the blob files, and removing one gives its space back at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from notochord.errors import FileError
from notochord.files.full import disk_full
from notochord.files.skips import SkipReason
from notochord.files.states import CHUNK

__all__ = [
    "HISTORY_MAX_BYTES",
    "MAX_BYTES_SETTING",
    "HistoryUsage",
    "Incoming",
    "Versions",
    "check_max_bytes",
    "dropped_reason",
]

HISTORY_MAX_BYTES: Final = 2 * 1024 * 1024 * 1024
"""The space the saved versions of one folder's history take at most, by default: 2 GiB."""

MAX_BYTES_SETTING: Final = "file_history_max_bytes"
"""The setting that changes :data:`HISTORY_MAX_BYTES` (``NOTOCHORD_FILE_HISTORY_MAX_BYTES``)."""

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS versions (
    blob TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    saved INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS versions_saved ON versions (saved);
CREATE INDEX IF NOT EXISTS changes_old_blob ON changes (old_blob);
"""


def check_max_bytes(max_bytes: int) -> int:
    """``max_bytes`` when it is a usable bound (at least one byte); else the error saying so."""
    if max_bytes < 1:
        raise FileError(
            f"the file history needs room for at least one byte, not {max_bytes}; "
            f"set {MAX_BYTES_SETTING} to a positive number of bytes"
        )
    return max_bytes


def dropped_reason() -> SkipReason:
    """Why a path whose earlier version was dropped is left alone by a rollback."""
    return SkipReason.of(
        "version_dropped",
        "its earlier version was dropped to keep the file history within its size (the "
        f"{MAX_BYTES_SETTING} setting), so it stays as it is; raise that setting to keep more versions",
        setting=MAX_BYTES_SETTING,
    )


@dataclass(frozen=True)
class HistoryUsage:
    """How much space one history's saved versions take, against their bound."""

    used_bytes: int
    """Bytes the saved versions take together (each content counted once)."""
    max_bytes: int
    """The bound on ``used_bytes``; it may be exceeded only by a single version larger than it."""
    versions: int
    """Saved versions (distinct contents) in the history."""
    dropped: int
    """Recorded changes whose earlier version was dropped to stay within the bound."""


@dataclass(frozen=True)
class Incoming:
    """A version written beside the store under a temporary name, not yet placed or recorded."""

    temp: Path
    hexd: str
    size: int


class Versions:
    """The saved versions of one history: ``blobs`` under ``store_dir``, listed in ``db``.

    ``db`` is the history's connection (autocommit); the caller serialises its use.
    """

    def __init__(self, store_dir: Path, db: sqlite3.Connection, *, max_bytes: int) -> None:
        self.max_bytes = check_max_bytes(max_bytes)
        self.dir = store_dir / "blobs"
        self._db = db

    def open(self) -> None:
        """Create the table; a history saved before versions were listed gets them listed now."""
        listed = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'versions'").fetchone()
        self._db.executescript(SCHEMA)
        if listed is None:
            self._list_existing()

    def _list_existing(self) -> None:
        """List the blob files already there, in the order their changes saved them.

        A file no change points at (its change failed) counts as saved before any other, so it is
        the first to be dropped.
        """
        last: dict[str, int] = {
            blob.removeprefix("sha256:"): int(cid)
            for blob, cid in self._db.execute(
                "SELECT old_blob, MAX(id) FROM changes WHERE old_blob IS NOT NULL GROUP BY old_blob"
            )
        }
        found: list[tuple[str, int, int]] = []
        for path in self.dir.glob("??/*"):
            with contextlib.suppress(OSError):
                if len(path.name) == 64 and path.is_file():
                    found.append((path.name, path.stat().st_size, last.get(path.name, 0)))
        self._db.executemany("INSERT OR IGNORE INTO versions (blob, size, saved) VALUES (?, ?, ?)", found)

    def path(self, hexd: str) -> Path:
        return self.dir / hexd[:2] / hexd

    def write(self, source: BinaryIO) -> Incoming:
        """Copy ``source`` to a temporary file in the store and hash it; nothing is recorded yet."""
        digest = hashlib.sha256()
        tmp = self.dir / f".incoming-{uuid.uuid4().hex}"
        size = 0
        try:
            with open(tmp, "xb") as out:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            full = disk_full(exc, "the old version into the file history")
            raise full or FileError(f"could not save the old version in the file history: {exc.strerror}") from exc
        return Incoming(temp=tmp, hexd=digest.hexdigest(), size=size)

    @contextlib.contextmanager
    def placing(self, incoming: Incoming) -> Iterator[str]:
        """Place ``incoming`` as the newest version and drop the oldest ones until it fits.

        Yields ``sha256:<hex>`` inside the transaction, for the caller to record on its change; all
        of it commits together, or none of it (the temporary file is removed either way).
        """
        try:
            self._db.execute("BEGIN IMMEDIATE")
            listed: object = ()
            try:
                final = self.path(incoming.hexd)
                listed = self._db.execute("SELECT 1 FROM versions WHERE blob = ?", (incoming.hexd,)).fetchone()
                final.parent.mkdir(exist_ok=True)
                os.replace(incoming.temp, final)
                self._db.execute(
                    "INSERT INTO versions (blob, size, saved)"
                    " VALUES (?, ?, (SELECT COALESCE(MAX(saved), 0) + 1 FROM versions))"
                    " ON CONFLICT (blob) DO UPDATE SET size = excluded.size, saved = excluded.saved",
                    (incoming.hexd, incoming.size),
                )
                yield f"sha256:{incoming.hexd}"
                self._drop_oldest(keep=incoming.hexd)
                self._db.execute("COMMIT")
            except BaseException:
                if listed is None:  # still holding the write lock: no one else placed it meanwhile
                    with contextlib.suppress(OSError):
                        final.unlink()
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
        except OSError as exc:
            full = disk_full(exc, "the old version into the file history")
            raise full or FileError(f"could not save the old version in the file history: {exc.strerror}") from exc
        except sqlite3.Error as exc:
            full = disk_full(exc, "a change into the file history")
            raise full or FileError(f"the file history could not record a change: {exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                incoming.temp.unlink()

    def _drop_oldest(self, *, keep: str) -> None:
        """Drop versions, oldest saved first, until all of them fit in ``max_bytes`` (never ``keep``)."""
        (used,) = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM versions").fetchone()
        if used <= self.max_bytes:
            return
        oldest = self._db.execute("SELECT blob, size FROM versions WHERE blob != ? ORDER BY saved", (keep,)).fetchall()
        for hexd, size in oldest:
            if used <= self.max_bytes:
                break
            self._db.execute("DELETE FROM versions WHERE blob = ?", (hexd,))
            self._db.execute(
                "UPDATE changes SET old_blob = NULL, old_dropped = 1 WHERE old_blob = ?", (f"sha256:{hexd}",)
            )
            # removed inside the transaction: a writer placing the same content waits for it, so
            # its file is never removed after it was placed
            with contextlib.suppress(FileNotFoundError):
                self.path(hexd).unlink()
            used -= size

    def usage(self) -> HistoryUsage:
        """How much the saved versions take now, against the bound."""
        used, count = self._db.execute("SELECT COALESCE(SUM(size), 0), COUNT(*) FROM versions").fetchone()
        (dropped,) = self._db.execute("SELECT COUNT(*) FROM changes WHERE old_dropped = 1").fetchone()
        return HistoryUsage(used_bytes=used, max_bytes=self.max_bytes, versions=count, dropped=dropped)
