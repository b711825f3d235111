"""A gem's two databases appear complete, or not at all, so an empty one is always damage.

SQLite creates a database file empty the moment a connection opens a path that does not exist, and
writes it only at the first write: an ``sql.db`` the gem never wrote stayed at zero bytes. Such a
file cannot be told from one whose contents were lost (a failed copy, a full disk, a program that
truncated it), and opened as it is SQLite takes it for a new database: the loss goes unnoticed and
the gem's next writes pile onto the empty file. So, as the vault's own space files do
(:mod:`notochord.db.creation`):

- A new ``kv.db`` or ``sql.db`` is built aside (:mod:`notochord.built_aside`: under a hidden name
  that every listing of the gem's files skips), keyed, given its first page (and ``kv.db`` its
  table), and only then linked to its name; of two processes creating the same store one places its
  file and the other opens that one. What a killed process left aside is removed at the next
  creation, once that process is gone.
- Opening never creates a file (:func:`~notochord.files.private_sql.open_cipher_db` opens read-write
  only) and refuses a file of no pages with a :class:`~notochord.errors.FileError` that says what
  happened and what to do: restore the file from a backup, or delete it to start that part of the
  gem's store empty. The refusal writes nothing, so the emptied file is still there to restore over.

Installations from earlier versions: their ``kv.db`` was always written at its first open (its table
was created then), so a zero-byte ``kv.db`` is damage whatever version made it. Their ``sql.db``
was not: a gem that never used SQL has one of zero bytes, legitimately. ``kv.db`` tells them apart:
it records (table ``store_facts``, out of the gem's reach: the gem's key-value calls touch the
``kv`` table only and its SQL cannot attach this file) that ``sql.db`` was seen written. The record
is made at every open that lacks it, once ``sql.db`` holds a page. Before it exists, a zero-byte
``sql.db`` beside an existing ``kv.db`` is an earlier version's never-written database: it is given
its first page in place, through SQLite's own locking (another process may have it open), and
recorded. After it, or beside a ``kv.db`` made anew (its record lost with it, so nothing can vouch
for the empty file), a zero-byte ``sql.db`` is refused. The one case this cannot catch is an earlier
version's ``sql.db`` emptied before this version first opens it: nothing on disk tells its loss.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import sqlcipher3

from notochord.built_aside import building_path, place_built, remove_abandoned, remove_building
from notochord.errors import BusyError, FileError
from notochord.files.full import disk_full
from notochord.files.private_sql import SQL_FILE, SQL_WHAT, open_cipher_db

__all__ = ["KV_FILE", "KV_WHAT", "open_gem_databases"]

KV_FILE = "kv.db"
KV_WHAT = "key-value store"
KV_SCHEMA = ("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)",)
_FACTS_SCHEMA = "CREATE TABLE IF NOT EXISTS store_facts (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SQL_WRITTEN = "sql.db written"


def open_gem_databases(
    folder: Path, *, kv_key: bytes, sql_key: bytes
) -> tuple[sqlcipher3.Connection, sqlcipher3.Connection]:
    """The gem's key-value and SQL connections in ``folder``, each database first built complete
    where it is missing.

    Raises:
        FileError: a database is empty, damaged, another gem's, or cannot be created or opened.
        StorageFullError: the disk is full while a database is built or its record written.
        BusyError: another process holds a database while it is made complete.
    """
    kv_path, sql_path = folder / KV_FILE, folder / SQL_FILE
    kv_new = not kv_path.exists()
    if kv_new:
        _place_new(kv_path, kv_key, KV_WHAT, KV_SCHEMA)
    kv = open_cipher_db(kv_path, kv_key, KV_WHAT)
    try:
        with _writing(KV_WHAT, kv_path):
            written = _sql_recorded_written(kv)
        if not sql_path.exists():
            _place_new(sql_path, sql_key, SQL_WHAT, ())
        sql = open_cipher_db(sql_path, sql_key, SQL_WHAT, empty_ok=not (kv_new or written))
        try:
            if not written:
                with _writing(SQL_WHAT, sql_path):
                    if sql.execute("PRAGMA page_count").fetchone()[0] == 0:
                        # an earlier version's never-written database: starting a write transaction
                        # on it writes its first page, and changes nothing if another process did
                        sql.execute("BEGIN IMMEDIATE")
                        sql.execute("COMMIT")
                with _writing(KV_WHAT, kv_path):
                    kv.execute(_FACTS_SCHEMA)
                    kv.execute("INSERT OR IGNORE INTO store_facts (name, value) VALUES (?, 'yes')", (_SQL_WRITTEN,))
        except BaseException:
            sql.close()
            raise
    except BaseException:
        kv.close()
        raise
    return kv, sql


def _sql_recorded_written(kv: sqlcipher3.Connection) -> bool:
    known = kv.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_facts'").fetchone()
    if known is None:
        return False  # a kv.db of an earlier version
    return kv.execute("SELECT 1 FROM store_facts WHERE name = ?", (_SQL_WRITTEN,)).fetchone() is not None


@contextlib.contextmanager
def _writing(what: str, path: Path) -> Iterator[None]:
    """Engine and file errors of notochord's own statements on a database, in words."""
    try:
        yield
    except (sqlcipher3.Error, OSError) as exc:
        full = disk_full(exc, f"the gem's {what}")
        if full is not None:
            raise full from exc
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in (sqlcipher3.SQLITE_BUSY, sqlcipher3.SQLITE_LOCKED):
            raise BusyError(
                f"the gem's {what} is in use by another process of this gem; nothing was changed; try again "
                "in a moment",
                retry_after=5,
            ) from exc
        detail = getattr(exc, "strerror", None) or str(exc)
        raise FileError(f"cannot write the gem's {what} {path}: {detail}") from exc


def _place_new(path: Path, key: bytes, what: str, schema: Sequence[str]) -> None:
    """Build the database of ``path`` aside and link it in, unless another process placed it first."""
    remove_abandoned(path)
    building = building_path(path)
    try:
        conn = open_cipher_db(building, key, what, create=True)
        try:
            with _writing(what, path):
                # a write transaction on an empty file writes its first page, even with no statement
                conn.execute("BEGIN IMMEDIATE")
                for statement in schema:
                    conn.execute(statement)
                conn.execute("COMMIT")
        finally:
            conn.close()
        with _writing(what, path):
            place_built(building, path)
    finally:
        remove_building(building)
