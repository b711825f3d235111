"""The file history: every change a gem makes to a folder, with the versions it replaced.

Rules (P-FILE-21…26, OD-P07):

- Every change (``create``, ``overwrite``, ``delete``, ``move``, ``mkdir``) is recorded with its run
  id, actor, time (from the injected clock) and path(s). A change is written to the index as
  ``pending`` *before* the file system is touched and marked ``applied`` afterwards; a change that
  fails is dropped again. A crash in between leaves a ``pending`` row, never an unrecorded change.
- Before a file is overwritten or deleted, its old content is saved: in the history when it is at
  most :data:`VERSION_LIMIT` bytes (100 × 1024 × 1024), otherwise in the trash. Without a trash (the
  headless build) every old version is kept in the history, whatever its size: losing the user's
  file would be worse than a large history.
- ``delete`` moves the file to the trash *and* keeps a copy in the history (up to the limit). Without
  a trash the deletion is permanent, but the history copy can still be rolled back.
- ``move`` records only the path change; no content is copied.
- The saved versions of one history take at most ``max_bytes`` together (2 GiB unless the
  ``file_history_max_bytes`` setting says otherwise): saving one drops the versions saved longest
  ago until it fits (:mod:`~notochord.files.versions`). A version larger than the bound goes to the
  trash like one over :data:`VERSION_LIMIT`. A rollback that needs a dropped version leaves that
  path, and every older change of the run to it, alone, and says so.
- :meth:`FileHistory.rollback_run` restores every file a run changed to its state before the run,
  newest change first. Each change stores the state its path had right after it (``sha256:<hex>``,
  ``dir`` for an empty folder, ``dir:sha256:<hex>`` for a folder and everything in it, or
  ``absent``); a change is undone only if the disk still shows exactly that state and no other run
  recorded a later change to the same path, to a path inside it, or to a folder holding it (a later
  move of that folder moved it too). Otherwise the path, and every older change of the run to it,
  is left alone and reported as skipped, with the reason (the later run in the way, by its id and
  the path it changed; a change made outside), as a code with values and English words
  (:mod:`~notochord.files.skips`). Rollback of a change undoes that change only: a
  folder the run moved goes back only while it holds exactly what the move put there, so a file
  another run or the user added to it since is never carried along.
- Rollback never writes through a symlink: a path whose real location differs from the recorded one
  is treated as changed since.
- A file goes back only once its earlier version is in hand: copied out of the history, or taken out
  of the trash. When it cannot be had (the trash was emptied, this installation has no trash, the
  saved copy is missing) the run's version stays where it is and the skip names where the earlier
  version was put.

Storage: ``history.db`` (stdlib ``sqlite3``) holds the index; ``blobs/<aa>/<sha256>`` holds saved
versions, content-addressed, so saving the same content twice costs nothing (see
:mod:`~notochord.files.versions`). Every ``OSError`` and
``sqlite3.Error`` is translated to :class:`~notochord.errors.FileError`. Path states are
:mod:`~notochord.files.states`'s, the trash :mod:`~notochord.files.trash`'s.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal

from notochord.clock import Clock, iso_utc, parse_iso_utc
from notochord.errors import FileError
from notochord.files.full import disk_full
from notochord.files.restoring import put_back_file, remove_folder, restore_folder, undo_move
from notochord.files.skips import NotPutBackError, SkipReason
from notochord.files.states import ABSENT, DIR, hash_bytes, hash_stream, path_state
from notochord.files.trash import FolderTrash, Trash, dispose
from notochord.files.versions import HISTORY_MAX_BYTES, HistoryUsage, Versions, check_max_bytes, dropped_reason

__all__ = [
    "ABSENT",
    "DIR",
    "HISTORY_MAX_BYTES",
    "VERSION_LIMIT",
    "Change",
    "ChangeRecorder",
    "FileHistory",
    "FolderTrash",
    "HistoryUsage",
    "Op",
    "RollbackReport",
    "SkipReason",
    "Trash",
    "hash_bytes",
    "hash_stream",
    "path_state",
]

VERSION_LIMIT = 100 * 1024 * 1024
"""Old versions strictly larger than this go to the trash instead of the history (OD-P07)."""

Op = Literal["create", "overwrite", "delete", "move", "mkdir"]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    op TEXT NOT NULL,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    display TEXT NOT NULL,
    dest_path TEXT,
    dest_display TEXT,
    at TEXT NOT NULL,
    old_kind TEXT NOT NULL DEFAULT 'absent',
    old_blob TEXT,
    old_size INTEGER,
    old_trash TEXT,
    after_state TEXT,
    status TEXT NOT NULL,
    old_mode INTEGER,
    old_dropped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS changes_run ON changes (run_id);
CREATE INDEX IF NOT EXISTS changes_path ON changes (root, path);
CREATE INDEX IF NOT EXISTS changes_dest ON changes (root, dest_path);
"""


@dataclass(frozen=True)
class Change:
    """One recorded change. ``display`` is the address the gem used (``workspace:a.txt``)."""

    id: int
    run_id: str
    actor: str
    op: Op
    display: str
    dest_display: str | None
    at: datetime
    old_kind: Literal["absent", "file", "dir"]
    old_in_history: bool
    old_in_trash: bool
    status: Literal["pending", "applied", "rolled_back"]
    old_dropped: bool = False
    """The old version was saved, then dropped to keep the history within its size."""


@dataclass(frozen=True)
class RollbackReport:
    """What :meth:`FileHistory.rollback_run` did, as display paths in the order first met."""

    run_id: str
    restored: tuple[str, ...]
    skipped: tuple[str, ...]
    skip_reasons: tuple[tuple[str, SkipReason], ...] = ()
    """``(display path, why it was skipped)`` for every skipped path, in the order of ``skipped``."""

    @property
    def reasons(self) -> tuple[tuple[str, str], ...]:
        """``(display path, why it was skipped)`` with the reason in English words."""
        return tuple((shown, why.text) for shown, why in self.skip_reasons)

    def reason(self, display: str) -> str | None:
        """Why ``display`` was skipped, in English words for the user; ``None`` when it was not."""
        return next((why.text for shown, why in self.skip_reasons if shown == display), None)


class ChangeRecorder:
    """Handle on one pending change, given out by :meth:`FileHistory.change`."""

    def __init__(self, history: FileHistory, change_id: int) -> None:
        self._history = history
        self.id = change_id
        self._after: str | None = None
        self.old_blob: str | None = None
        """``sha256:<hex>`` of the old version saved by :meth:`keep_old`, if any."""

    def keep_old(self, source: BinaryIO, *, size: int, mode: int | None = None) -> None:
        """Save the old content of the path in the history. Call before changing the file.

        ``mode`` is the old file's permission bits, restored with it: a private file (``0600``)
        must not come back readable by everyone, nor a script lose its execute bit.
        """
        self.old_blob = self._history._keep_old(self.id, source, size=size, mode=mode)

    def old_is_dir(self) -> None:
        self._history._update(self.id, old_kind="dir")

    def old_in_trash(self, location: str | None, *, size: int | None = None) -> None:
        """Record where the trash put the old version (``None``: deleted permanently)."""
        self._history._update(self.id, old_kind="file", old_trash=location, old_size=size)

    def applied(self, after_state: str | None) -> None:
        """State of the (destination) path right after the change: ``sha256:…``, ``dir`` or
        ``absent``; ``None`` when unknown, which makes the change one rollback will not undo."""
        self._after = after_state

    @property
    def after_state(self) -> str | None:
        return self._after


class FileHistory:
    """Index of changes plus saved versions, kept in ``store_dir`` (created if missing).

    ``max_bytes`` bounds the space the saved versions take together (the ``file_history_max_bytes``
    setting); ``version_limit`` the size of one version kept here rather than in the trash.
    """

    def __init__(
        self,
        store_dir: Path,
        *,
        clock: Clock,
        trash: Trash | None,
        version_limit: int = VERSION_LIMIT,
        max_bytes: int = HISTORY_MAX_BYTES,
    ) -> None:
        check_max_bytes(max_bytes)  # before anything is opened, so a refusal leaves nothing open
        self._dir = store_dir
        self._clock = clock
        self.trash = trash
        self.version_limit = version_limit
        self._lock = threading.RLock()
        try:
            (store_dir / "blobs").mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                os.fspath(store_dir / "history.db"), isolation_level=None, check_same_thread=False
            )
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(changes)")}
            if "old_mode" not in columns:  # a history recorded before modes were kept
                self._db.execute("ALTER TABLE changes ADD COLUMN old_mode INTEGER")
            if "old_dropped" not in columns:  # a history recorded before it had a bound
                self._db.execute("ALTER TABLE changes ADD COLUMN old_dropped INTEGER NOT NULL DEFAULT 0")
            self._versions = Versions(store_dir, self._db, max_bytes=max_bytes)
            self._versions.open()
        except OSError as exc:
            raise _unopenable(store_dir, str(exc.strerror)) from exc
        except sqlite3.Error as exc:
            raise _unopenable(store_dir, str(exc)) from exc

    @property
    def max_bytes(self) -> int:
        """The bound on the space the saved versions take together."""
        return self._versions.max_bytes

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- recording ---------------------------------------------------------------------------

    def keeps_in_history(self, size: int) -> bool:
        """Whether an old version of ``size`` bytes is saved in the history (else: the trash)."""
        return self.trash is None or size <= min(self.version_limit, self.max_bytes)

    @contextlib.contextmanager
    def change(
        self,
        *,
        op: Op,
        run_id: str,
        actor: str,
        root: Path,
        path: str,
        display: str,
        dest_path: str | None = None,
        dest_display: str | None = None,
    ) -> Iterator[ChangeRecorder]:
        """Record one change around the block that performs it.

        The row is inserted as ``pending`` before the block runs. If the block raises, the row is
        removed and the exception propagates; otherwise the row becomes ``applied`` with the after
        state the block reported through :meth:`ChangeRecorder.applied`.
        """
        change_id = self._exec(
            "INSERT INTO changes (run_id, actor, op, root, path, display, dest_path, dest_display,"
            " at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
            (
                run_id,
                actor,
                op,
                os.fspath(root),
                path,
                display,
                dest_path,
                dest_display,
                iso_utc(self._clock.now()),
            ),
        )
        recorder = ChangeRecorder(self, change_id)
        try:
            yield recorder
        except BaseException:
            self._exec("DELETE FROM changes WHERE id = ?", (change_id,))
            raise
        self._exec(
            "UPDATE changes SET status = 'applied', after_state = ? WHERE id = ?",
            (recorder.after_state, change_id),
        )

    def dispose(self, path: Path) -> str | None:
        """Remove a file for good from its place: into the trash when there is one (returns its
        location), else unlinked (returns ``None``)."""
        return dispose(path, self.trash)

    def save_blob(self, source: BinaryIO) -> str:
        """Copy ``source`` into the content-addressed store as its newest version, dropping the
        oldest ones until it fits; return its ``sha256:<hex>``."""
        incoming = self._versions.write(source)
        with self._lock, self._versions.placing(incoming) as blob:
            return blob

    def _keep_old(self, change_id: int, source: BinaryIO, *, size: int, mode: int | None) -> str:
        """Save ``source`` and record it as change ``change_id``'s old version, in one transaction."""
        incoming = self._versions.write(source)
        with self._lock, self._versions.placing(incoming) as blob:
            self._update(change_id, old_kind="file", old_blob=blob, old_size=size, old_mode=mode)
            return blob

    def _blob_path(self, hexd: str) -> Path:
        return self._versions.path(hexd)

    def usage(self) -> HistoryUsage:
        """How much space the saved versions take, against :attr:`max_bytes`."""
        with self._lock:
            try:
                return self._versions.usage()
            except sqlite3.Error as exc:
                raise _unreadable(exc) from exc

    # -- reading -----------------------------------------------------------------------------

    def changes(self, run_id: str | None = None) -> list[Change]:
        """Recorded changes, oldest first, optionally of one run only."""
        query = (
            "SELECT id, run_id, actor, op, display, dest_display, at, old_kind, old_blob, old_trash,"
            " status, old_dropped FROM changes"
        )
        params: tuple[str, ...] = ()
        if run_id is not None:
            query += " WHERE run_id = ?"
            params = (run_id,)
        rows = self._query(query + " ORDER BY id", params)
        return [
            Change(
                id=r[0],
                run_id=r[1],
                actor=r[2],
                op=r[3],
                display=r[4],
                dest_display=r[5],
                at=parse_iso_utc(r[6]),
                old_kind=r[7],
                old_in_history=r[8] is not None,
                old_in_trash=r[9] is not None,
                status=r[10],
                old_dropped=bool(r[11]),
            )
            for r in rows
        ]

    def old_version(self, change_id: int) -> bytes:
        """The content a change replaced, when it is saved in the history."""
        rows = self._query("SELECT old_blob, old_dropped FROM changes WHERE id = ?", (change_id,))
        if rows and rows[0][1]:
            raise FileError(
                f"the old version of change {change_id} was dropped to keep the file history within its size; "
                "raise the file_history_max_bytes setting to keep more versions"
            )
        if not rows or rows[0][0] is None:
            raise FileError(f"change {change_id} has no old version in the file history")
        return self._read_blob(rows[0][0])

    def _read_blob(self, blob: str) -> bytes:
        try:
            return self._blob_path(blob.removeprefix("sha256:")).read_bytes()
        except OSError as exc:
            raise FileError(f"the saved version {blob} is missing from the file history") from exc

    # -- rollback ----------------------------------------------------------------------------

    def rollback_run(self, run_id: str) -> RollbackReport:
        """Restore every file ``run_id`` changed to its state before the run (P-FILE-25).

        Files changed since by another run or outside notochord are left alone and reported as
        skipped, each with the reason. Undone changes are marked ``rolled_back`` and are not undone
        twice.
        """
        with self._lock:
            rows = self._query(
                "SELECT id, op, root, path, display, dest_path, dest_display, old_kind, old_blob,"
                " old_trash, after_state, old_mode, old_dropped FROM changes WHERE run_id = ? AND"
                " status = 'applied' ORDER BY id DESC",
                (run_id,),
            )
            restored: list[str] = []
            skipped: dict[str, SkipReason] = {}
            # A path whose earlier version was dropped cannot go back to before the run, so none of
            # the run's changes to it is undone: undoing only the newer ones would leave a version
            # from the middle of the run, which neither the user nor the run ever settled on.
            blocked: dict[tuple[str, str], SkipReason] = {(row[2], row[3]): dropped_reason() for row in rows if row[12]}
            for row in rows:
                cid, op, root, path, display, dest, dest_display = row[:7]
                touched = [(root, path)] + ([(root, dest)] if dest is not None else [])
                shown = [display] + ([dest_display] if dest_display is not None else [])
                why = next((blocked[t] for t in touched if t in blocked), None)
                if why is None:
                    why = self._undo_refused(cid, run_id, row)
                if why is None:
                    try:
                        self._undo(
                            Path(root),
                            op,
                            path,
                            dest,
                            old_kind=row[7],
                            old_blob=row[8],
                            old_trash=row[9],
                            old_mode=row[11],
                        )
                    except NotPutBackError as exc:
                        why = exc.skip
                    except FileError as exc:
                        why = SkipReason.of("other", exc.message, detail=exc.message)
                if why is not None:
                    for t in touched:
                        blocked.setdefault(t, why)
                    for s in shown:
                        skipped.setdefault(s, why)
                    continue
                self._exec("UPDATE changes SET status = 'rolled_back' WHERE id = ?", (cid,))
                restored.extend(s for s in shown if s not in restored)
            return RollbackReport(
                run_id=run_id,
                restored=tuple(p for p in restored if p not in skipped),
                skipped=tuple(skipped),
                skip_reasons=tuple(skipped.items()),
            )

    def _undo_refused(self, cid: int, run_id: str, row: tuple[Any, ...]) -> SkipReason | None:
        """Why change ``cid`` may not be undone now; ``None`` when it may."""
        _, op, root, path, display, dest, dest_display = row[:7]
        after: str | None = row[10]
        if after is None:
            return SkipReason.of(
                "state_unknown",
                "what it held right after the change is not known, so it cannot be told whether it changed since",
            )
        later = self._superseded(cid, run_id, root, [path] if dest is None else [path, dest])
        if later is not None:
            return later
        if dest is None:
            if path_state(Path(root), path) != after:
                return SkipReason.of(
                    "changed_since", "it changed since (by the user or another program), so it stays as it is"
                )
            return None
        if path_state(Path(root), path) != ABSENT:
            said = f"{display} is taken again since the move, so {dest_display} stays where it is"
            return SkipReason.of("move_origin_taken", said, path=display, to=dest_display)
        if path_state(Path(root), dest) != after:
            folder = op == "move" and after.startswith(DIR)
            what = "it or something in it" if folder else "it"
            said = f"{what} changed since the move (by the user or another program), so it stays where it is"
            return SkipReason.of("moved_folder_changed_since" if folder else "moved_changed_since", said)
        return None

    def _superseded(self, cid: int, run_id: str, root: str, paths: list[str]) -> SkipReason | None:
        """The earliest change another run recorded after ``cid`` to one of ``paths``, inside one, or to
        a folder holding one, as the reason to roll that run back first; else ``None``.

        Paths are compared whole (root and relative path joined), since a change in the run folder
        is recorded against the run folder and a move out of it against the conversation.
        """
        conditions: list[str] = []
        params: list[object] = [cid, run_id]
        for rel in paths:
            mine = f"{root}/{rel}"
            for column in ("path", "dest_path"):
                theirs = f"(root || '/' || {column})"
                same, inside = f"{theirs} = ?", f"substr({theirs}, 1, ?) = ?"
                holding = f"substr(?, 1, length({theirs}) + 1) = {theirs} || '/'"
                conditions.append(f"({same} OR {inside} OR {holding})")
                params += [mine, len(mine) + 1, mine + "/", mine]
        later = self._query(
            "SELECT run_id, op, display, dest_display FROM changes WHERE id > ? AND run_id != ? AND"
            " status = 'applied' AND (" + " OR ".join(conditions) + ") ORDER BY id LIMIT 1",
            tuple(params),
        )
        if not later:
            return None
        other, op, display, dest_display = later[0]
        if op == "move":
            said = f"run {other} later moved {display} to {dest_display}; roll that run back first"
            return SkipReason.of("later_run_moved", said, run=other, path=display, to=dest_display)
        said = f"run {other} later changed {display}; roll that run back first"
        return SkipReason.of("later_run_changed", said, run=other, path=display)

    def _undo(
        self,
        root: Path,
        op: str,
        path: str,
        dest: str | None,
        *,
        old_kind: str,
        old_blob: str | None,
        old_trash: str | None,
        old_mode: int | None = None,
    ) -> None:
        try:
            if op == "move" and dest is not None:
                undo_move(root, path, dest)
            elif op == "mkdir":
                remove_folder(root, path)
            elif op == "delete" and old_kind == "dir":
                restore_folder(root, path)
            else:
                put_back_file(
                    root,
                    path,
                    created=op == "create",
                    blob=None if old_blob is None else self._blob_path(old_blob.removeprefix("sha256:")),
                    old_trash=old_trash,
                    mode=old_mode,
                    trash=self.trash,
                )
        except OSError as exc:
            said = f"it could not be put back: {exc.strerror}"
            full = disk_full(exc, path)
            raise full or NotPutBackError(SkipReason.of("not_put_back", said, detail=str(exc.strerror))) from exc

    # -- sqlite plumbing ---------------------------------------------------------------------

    def _exec(self, sql: str, params: tuple[object, ...]) -> int:
        with self._lock:
            try:
                cur = self._db.execute(sql, params)
            except sqlite3.Error as exc:
                full = disk_full(exc, "a change into the file history")
                raise full or FileError(
                    f"the file history could not record a change: {exc}",
                    reason="history_unrecorded",
                    values={"detail": str(exc)},
                ) from exc
            except UnicodeEncodeError as exc:
                raise _not_text() from exc
            return cur.lastrowid or 0

    def _update(self, change_id: int, **columns: object) -> None:
        assignments = ", ".join(f"{name} = ?" for name in columns)
        self._exec(f"UPDATE changes SET {assignments} WHERE id = ?", (*columns.values(), change_id))

    def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _unreadable(exc) from exc
            except UnicodeEncodeError as exc:
                raise _not_text() from exc


def _unopenable(store_dir: Path, detail: str) -> FileError:
    return FileError(
        f"cannot open the file history in {store_dir}: {detail}",
        reason="history_unopenable",
        values={"place": str(store_dir), "detail": detail},
    )


def _unreadable(exc: sqlite3.Error) -> FileError:
    return FileError(
        f"the file history could not be read: {exc}", reason="history_unreadable", values={"detail": str(exc)}
    )


def _not_text() -> FileError:
    """A path holding a name in another encoding than UTF-8 (lone surrogates): SQLite cannot take it.

    The path is not quoted: it may be where the user keeps the folder, which a gem is not told.
    """
    return FileError(
        "the file history cannot record a path holding a name that is not UTF-8 text; rename that file or folder first",
        reason="history_name_not_text",
    )
