"""Where a gem's files live: its private folder, file histories, the trash, its working folder.

Layout under the data directory::

    <data_dir>/gems/<space>/<gem id>/     the gem's private folder (mode 0700, P-STOR-08): its
                                          GemStore (sql.db, kv.db, blobs/, documents/) and the
                                          runs/ of its conversation-less runs (P-FILE-05)
    <data_dir>/history/<sha256 of root>/  the file history of one folder a gem changes: a
                                          conversation, a working folder or a gem's own folder
    <data_dir>/trash/                     the trash (a plain folder; none when ``headless``)

``<space>`` is the space's file stem (``personal``, ``org-<id>``), so spaces never share a folder.
The history of a conversation is kept outside it, where no gem's ``workspace:`` reaches (P-FILE-20).

Rules:

- Every path is derived from the gem id of the run and nothing else (K-NS-03): there is no API that
  takes a folder from a gem. Gem ids are checked against the manifest's id pattern first.
- Each gem folder carries ``.installation``, a fingerprint (HMAC) of the installation's storage key.
  A folder whose fingerprint is not the current installation's belongs to an earlier installation
  whose key is gone; it is deleted before first use, so a reinstall always starts empty even when
  the uninstall hook could not run (K-UNINST-11).
- One :class:`~notochord.files.private.GemStore` per gem stays open for its key-value store, blobs
  and documents, which hold nothing between calls (each call is whole), so runs may share them.
- A gem's ``BEGIN`` … ``COMMIT`` spans several ``ctx.storage.sql`` calls, so it lives in a
  connection, and no two runs may share one: B's writes would land in A's transaction and go with
  A's ``ROLLBACK``, and a run that ended mid-transaction would hold the write lock for good. So each
  registered run gets its own :class:`~notochord.gems.run_sql.RunSql`, opened on its first SQL call
  and closed by :meth:`GemFolders.release_run`, which rolls back what the run left open. Runs then
  contend on SQLite's lock (a busy error after its wait), never on one transaction. A call outside
  any registered run uses the gem store's own connection as a caller named by its run id, whose
  ``BEGIN`` holds that connection until it ends, or until it rests past its lease while another
  caller or a run needs the database (:meth:`~notochord.files.private.GemStore.sql_for`,
  :mod:`notochord.files.private_sql`); a call of a run that has ended is refused
  (it would open a transaction there that nobody ends). :meth:`GemFolders.close` and
  :meth:`GemFolders.on_uninstalled` close the stores and the runs' connections alike.
- The working folder (P-FILE-29…31) is stored in ``gem_settings`` under ``working_folder`` and checked
  by :func:`~notochord.files.working_folders.check_working_folder` both when it is chosen and each time it is
  used, so a folder that later becomes a link to the home folder is refused at use.
- Runs register their run folder here (``run id → folder``), so ``ctx.files`` finds its ``run:``
  root whichever of ``start_run`` and ``space.gems.context`` came first, and tools called from a SOP
  share its folder (P-FILE-06).
- Uninstall (:meth:`GemFolders.on_uninstalled`) closes the gem's store and deletes its whole folder,
  with its run folders and their history (P-STOR-11, K-UNINST-03, P-FILE-15). Run folders already
  placed in conversations are the user's files and stay. The ``gem_settings`` rows go with the
  gem's row (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from notochord.clock import Clock
from notochord.db.schema import gem_settings, gems
from notochord.errors import ClosedError, FileError, GemError
from notochord.files.history import HISTORY_MAX_BYTES, FileHistory, FolderTrash
from notochord.files.working_folders import SYSTEM_FOLDERS, check_working_folder
from notochord.knowledge.writes import USER

if TYPE_CHECKING:
    from notochord.files.private import GemStore
    from notochord.files.private_sql import GemSql
    from notochord.files.runs import RunFolder
    from notochord.gems.run_sql import RunSql
    from notochord.knowledge.core import KnowledgeCore

__all__ = [
    "WORKING_FOLDER",
    "GemFolders",
    "RegisteredRun",
    "history_dir",
    "installation_fingerprint",
    "space_folder_name",
    "trash_dir",
]

WORKING_FOLDER = "working_folder"
"""The ``gem_settings`` key of the working folder."""

MARKER = ".installation"
_GEM_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_ORG_SPACE = re.compile(r"^org:([a-z0-9][a-z0-9_-]{0,62})$")
_ENDED_KEPT = 4096  # ended runs remembered, to refuse their late calls; a late call comes within moments


def space_folder_name(space_name: str) -> str:
    """The file stem of a space: ``personal`` → ``personal``, ``org:acme`` → ``org-acme``."""
    if space_name == "personal":
        return space_name
    match = _ORG_SPACE.match(space_name)
    if match is None:
        raise FileError(f"{space_name!r} is not a space name (personal or org:<id>)")
    return f"org-{match.group(1)}"


def history_dir(data_dir: Path, root: Path) -> Path:
    """The file-history folder of ``root`` (resolved first, so every spelling of it agrees)."""
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()
    return Path(os.path.abspath(data_dir)) / "history" / digest


def trash_dir(data_dir: Path) -> Path:
    return Path(os.path.abspath(data_dir)) / "trash"


def installation_fingerprint(key: bytes) -> str:
    """A public fingerprint of one installation's storage key; reveals nothing of the key."""
    return hmac.new(key, b"notochord/gem-folder/installation/v1", hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class RegisteredRun:
    """A run in progress: its folder and whether a schedule or an event started it."""

    folder: RunFolder
    scheduled: bool


class GemFolders:
    """The gem folders of one space. Register one as ``space.gems.services.gem_folders``.

    Args:
        data_dir: notochord's data directory.
        space_name: ``personal`` or ``org:<id>``.
        headless: no trash; deleted files are gone, their history copies can still be rolled back
            (P-FILE-26).
        history_max_bytes: the space the saved versions of one folder's file history take at most.
        home: the user's home folder for the working-folder rules (default: ``Path.home()`` at the
            time of each check).
        system_folders: the operating system's folders, for the working-folder rules.
    """

    def __init__(
        self,
        data_dir: Path,
        space_name: str,
        *,
        headless: bool = False,
        history_max_bytes: int = HISTORY_MAX_BYTES,
        home: Path | None = None,
        system_folders: Sequence[str] = SYSTEM_FOLDERS,
    ) -> None:
        self.data_dir = Path(os.path.abspath(data_dir))
        self.space_name = space_name
        self.root = self.data_dir / "gems" / space_folder_name(space_name)
        self.headless = headless
        self.history_max_bytes = history_max_bytes
        self._home = home
        self._system_folders = tuple(system_folders)
        self._lock = threading.RLock()
        self._stores: dict[str, tuple[str, GemStore]] = {}
        self._runs: dict[tuple[str, str], RegisteredRun] = {}
        self._run_sql: dict[tuple[str, str], tuple[str, RunSql]] = {}
        self._ended: dict[tuple[str, str], None] = {}  # oldest first
        self._closed = False

    # -- the gem's private folder -----------------------------------------------------------

    def folder(self, gem_id: str) -> Path:
        """The gem's private folder (it may not exist yet)."""
        if not isinstance(gem_id, str) or not _GEM_ID.match(gem_id):
            raise GemError(f"{gem_id!r} is not a gem id")
        return self.root / gem_id

    def prepare(self, gem_id: str, *, key: bytes) -> Path:
        """Create the gem's folder for the installation whose storage key is ``key``.

        A folder left by an earlier installation (another fingerprint) is deleted first.
        """
        folder = self.folder(gem_id)
        expected = installation_fingerprint(key)
        with self._lock:
            self._check_open()
            found = _read_marker(folder / MARKER)
            if found is not None and found != expected:
                self._discard(gem_id)
            try:
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
                folder.mkdir(mode=0o700, exist_ok=True)
                if found != expected:
                    _write_marker(folder / MARKER, expected)
            except OSError as exc:
                raise FileError(f"cannot create the folder of gem {gem_id}: {exc.strerror}") from exc
        return folder

    def store(self, gem_id: str, *, key: bytes) -> GemStore:
        """The gem's open private storage for the installation whose storage key is ``key``."""
        from notochord.files.private import GemStore  # loads SQLCipher: only when storage is used

        expected = installation_fingerprint(key)
        with self._lock:
            self._check_open()
            cached = self._stores.get(gem_id)
            if cached is not None and cached[0] == expected:
                return cached[1]
            folder = self.prepare(gem_id, key=key)
            store = GemStore(folder, key=key)
            self._stores[gem_id] = (expected, store)
            return store

    def sql(self, gem_id: str, run_id: str, *, key: bytes) -> GemSql:
        """The gem's SQL database as run ``run_id`` reaches it: the run's own connection while the
        run is registered, else the gem store's.

        Raises:
            ClosedError: the run has ended (a call still on its way when it did), or these folders
                were closed.
        """
        from notochord.gems.run_sql import RunSql  # loads SQLCipher: only when storage is used

        expected = installation_fingerprint(key)
        with self._lock:
            if (gem_id, run_id) in self._ended:
                raise _ended(gem_id, run_id)
            store = self.store(gem_id, key=key)
            if (gem_id, run_id) not in self._runs:
                return store.sql_for(run_id)
            cached = self._run_sql.get((gem_id, run_id))
            if cached is not None and cached[0] == expected:
                return cached[1].sql
        # Opened outside the lock: it may wait for another run's commit, and every gem's storage
        # calls pass through this lock.
        opened = RunSql(store.folder, key=key)
        kept: RunSql | None
        spare: RunSql | None
        with self._lock:
            if self._closed or (gem_id, run_id) not in self._runs:
                kept, spare = None, opened
            else:
                cached = self._run_sql.get((gem_id, run_id))
                if cached is not None and cached[0] == expected:
                    kept, spare = cached[1], opened  # a call of the same run opened one first
                else:
                    self._run_sql[(gem_id, run_id)] = (expected, opened)
                    kept, spare = opened, cached[1] if cached is not None else None
        if spare is not None:
            spare.close()
        if kept is None:
            self._check_open()
            raise _ended(gem_id, run_id)
        return kept.sql

    # -- file history -----------------------------------------------------------------------

    def history(self, root: Path, *, clock: Clock) -> FileHistory:
        """Open the file history of ``root``; the caller closes it."""
        return FileHistory(
            history_dir(self.data_dir, root),
            clock=clock,
            trash=None if self.headless else FolderTrash(trash_dir(self.data_dir)),
            max_bytes=self.history_max_bytes,
        )

    # -- the working folder -----------------------------------------------------------------

    def check_working_folder(self, path: Path) -> Path:
        """``path`` resolved, if it may be a working folder; else the error naming the rule."""
        return check_working_folder(
            path,
            home=self._home if self._home is not None else Path.home(),
            data_dir=self.data_dir,
            system_folders=self._system_folders,
        )

    def set_working_folder(self, gem_id: str, path: Path | None, *, core: KnowledgeCore) -> Path | None:
        """Choose (``None``: clear) the ``workspace:`` of the gem's scheduled SOPs, as the user.

        Returns the folder as stored (resolved).

        Raises:
            FilePermissionError: the folder breaks a rule of P-FILE-31 (the message names it).
            FileNotFoundInWorkspaceError: the folder does not exist.
            GemError: no such gem is installed.
        """
        self.folder(gem_id)
        resolved = None if path is None else self.check_working_folder(path)
        with core.store.write(actor=USER, run_id=None) as tx:
            if tx.conn.execute(sa.select(gems.c.id).where(gems.c.id == gem_id)).first() is None:
                raise GemError(f"no gem {gem_id!r} is installed in this space")
            tx.conn.execute(
                sa.delete(gem_settings).where(gem_settings.c.gem_id == gem_id, gem_settings.c.key == WORKING_FOLDER)
            )
            if resolved is not None:
                tx.conn.execute(
                    sa.insert(gem_settings).values(
                        gem_id=gem_id,
                        key=WORKING_FOLDER,
                        value_json=json.dumps(os.fspath(resolved), ensure_ascii=False),
                        changed_at=tx.now,
                    )
                )
        return resolved

    def working_folder(self, gem_id: str, *, core: KnowledgeCore) -> Path | None:
        """The folder the user chose for the gem, as stored (not checked again here)."""
        with core.store.read() as conn:
            value = conn.execute(
                sa.select(gem_settings.c.value_json).where(
                    gem_settings.c.gem_id == gem_id, gem_settings.c.key == WORKING_FOLDER
                )
            ).scalar_one_or_none()
        if value is None:
            return None
        text = json.loads(value)
        return Path(text) if isinstance(text, str) and text else None

    # -- runs -------------------------------------------------------------------------------

    def register_run(self, gem_id: str, run_id: str, folder: RunFolder, *, scheduled: bool) -> RegisteredRun:
        run = RegisteredRun(folder=folder, scheduled=scheduled)
        with self._lock:
            self._check_open()
            self._runs[(gem_id, run_id)] = run
            self._ended.pop((gem_id, run_id), None)  # a retry under the same run id is a run again
        return run

    def run(self, gem_id: str, run_id: str) -> RegisteredRun | None:
        with self._lock:
            return self._runs.get((gem_id, run_id))

    def release_run(self, gem_id: str, run_id: str) -> None:
        """The run ended (however it ended): forget it and roll back what it left uncommitted."""
        with self._lock:
            if self._runs.pop((gem_id, run_id), None) is not None:
                # A call of the run may still be on its way (queued when the run timed out); on the
                # gem store's shared connection its BEGIN would stay open for good, so it is refused.
                self._ended[(gem_id, run_id)] = None
                while len(self._ended) > _ENDED_KEPT:
                    del self._ended[next(iter(self._ended))]
            cached = self._run_sql.pop((gem_id, run_id), None)
        if cached is not None:
            cached[1].close()

    # -- lifecycle --------------------------------------------------------------------------

    def on_uninstalled(self, gem_id: str) -> None:
        """Delete the gem's whole folder with its history (P-STOR-11, K-UNINST-03, P-FILE-15).

        Registered in ``registry.on_uninstalled``; runs after the uninstall is committed, when the
        installation's key salt is already gone.
        """
        with self._lock:
            self._discard(gem_id)
            for key in [k for k in self._runs if k[0] == gem_id]:
                del self._runs[key]
            for key in [k for k in self._ended if k[0] == gem_id]:
                del self._ended[key]

    def close(self) -> None:
        """Close every open gem storage. Later use raises :class:`~notochord.errors.ClosedError`."""
        with self._lock:
            self._closed = True
            stores: list[GemStore | RunSql] = [run_sql for _fp, run_sql in self._run_sql.values()]
            stores.extend(store for _fp, store in self._stores.values())
            self._run_sql.clear()
            self._stores.clear()
            self._runs.clear()
            self._ended.clear()
        for store in stores:
            store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"the gem folders of space {self.space_name} were closed; open the space again")

    def _discard(self, gem_id: str) -> None:
        for key in [k for k in self._run_sql if k[0] == gem_id]:
            self._run_sql.pop(key)[1].close()
        cached = self._stores.pop(gem_id, None)
        if cached is not None:
            cached[1].close()
        folder = self.folder(gem_id)
        for target in (folder, history_dir(self.data_dir, folder)):
            try:
                shutil.rmtree(target)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise FileError(f"could not delete {target} of gem {gem_id}: {exc.strerror}") from exc


def _ended(gem_id: str, run_id: str) -> ClosedError:
    return ClosedError(
        f"run {run_id} of gem {gem_id} has ended, and its SQL transactions with it (what it left "
        "uncommitted was rolled back); start a new run to use the gem's database"
    )


def _read_marker(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise FileError(f"cannot read {path}: {exc}") from exc


def _write_marker(path: Path, fingerprint: str) -> None:
    tmp = path.parent / f".~{uuid.uuid4().hex}.tmp"
    try:
        tmp.write_text(fingerprint + "\n", encoding="ascii")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
