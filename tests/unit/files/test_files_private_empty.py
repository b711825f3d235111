"""A gem's database emptied to zero bytes is damage, never a new store (P-STOR-02, P-STOR-09).

A failed copy, a full disk or a program that truncated the file can leave ``kv.db`` or ``sql.db``
at zero bytes. Opened as it is, SQLite would take it for a new, empty database: the gem's data
would be gone without a word and its next writes would pile onto the empty file. So:

- a new store's databases are built complete under a hidden name and linked into place, so neither
  is ever zero bytes by being new;
- a zero-byte ``kv.db`` or ``sql.db`` is refused in words that say what happened and what to do
  (restore it, or delete it to start that part of the store empty), and the refusal writes nothing;
- a file emptied while the store is open is refused at the next statement, not written over;
- an installation from an earlier version, whose ``sql.db`` was created at zero bytes and never
  written, keeps working.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlcipher3
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from notochord.errors import FileError
from notochord.files.private import GemStore
from notochord.gems.run_sql import RunSql

KEY = bytes(range(32))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A gem folder whose store holds a kv value and a SQL row, closed again."""
    with GemStore(tmp_path / "gem", key=KEY) as store:
        store.kv.set("kept", "value")
        store.sql.execute("CREATE TABLE t (x)")
        store.sql.execute("INSERT INTO t VALUES (1)")
    return tmp_path / "gem"


def _empty(path: Path) -> None:
    with open(path, "r+b") as file:
        file.truncate(0)


def _refusal(call: object) -> str:
    assert callable(call)
    with pytest.raises(FileError) as caught:
        call()
    return str(caught.value)


def _kv_key(key: bytes) -> bytes:
    """The key-value store's subkey, as the store derives it (the on-disk format)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"notochord/gem-storage/kv/v1").derive(key)


def _earlier_version_store(folder: Path) -> None:
    """The files an earlier version left for a gem that used kv but never wrote its SQL database:
    ``kv.db`` written at its first open, ``sql.db`` created by the connection and left at zero bytes."""
    folder.mkdir(mode=0o700, parents=True)
    for name in ("blobs", "documents"):
        (folder / name).mkdir(mode=0o700)
    for name, key in (("kv.db", _kv_key(KEY)), ("sql.db", KEY)):
        conn = sqlcipher3.connect(os.fspath(folder / name), isolation_level=None)
        conn.execute(f"PRAGMA key = \"x'{key.hex()}'\"")
        if name == "kv.db":
            conn.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("""INSERT INTO kv VALUES ('kept', '"value"')""")
        conn.close()
    assert (folder / "sql.db").stat().st_size == 0


# -- new stores are complete -------------------------------------------------------------------


def test_a_new_store_has_no_zero_byte_database_and_leaves_no_file_aside(tmp_path: Path) -> None:
    """SQLite writes a new database only at its first write: made in place, an unused ``sql.db``
    stayed at zero bytes and could not be told from one that lost its data."""
    with GemStore(tmp_path / "gem", key=KEY) as store:
        for name in ("kv.db", "sql.db"):
            assert (store.folder / name).stat().st_size > 0, name
        assert sorted(p.name for p in store.folder.iterdir()) == ["blobs", "documents", "kv.db", "sql.db"]
    with GemStore(tmp_path / "gem", key=KEY) as again:
        assert again.sql.query("SELECT name FROM sqlite_master") == []
        assert again.kv.list() == []


def test_a_database_left_half_built_by_a_killed_process_is_removed_when_the_next_one_is_built(
    tmp_path: Path,
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "gem"
    folder.mkdir()
    leftover = folder / f".sql.db.creating-{dead.pid}-0123abcd"
    leftover.write_bytes(b"half")
    mine = folder / f".sql.db.creating-{os.getpid()}-4567cdef"  # a creation still under way here
    mine.write_bytes(b"busy")
    with GemStore(folder, key=KEY):
        assert not leftover.exists()
        assert mine.exists()


# -- an emptied file is refused ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "what"), [("kv.db", "key-value store"), ("sql.db", "SQL database")])
def test_an_emptied_database_is_refused_in_words_and_left_as_it_is(folder: Path, name: str, what: str) -> None:
    _empty(folder / name)
    message = _refusal(lambda: GemStore(folder, key=KEY))
    assert f"the gem's {what} {folder / name} is empty (zero bytes)" in message
    assert "restore the file from a backup" in message and "delete that file" in message
    assert (folder / name).stat().st_size == 0, "the refusal wrote over the emptied file"


def test_deleting_an_emptied_sql_database_starts_it_empty_and_keeps_the_kv_values(folder: Path) -> None:
    _empty(folder / "sql.db")
    _refusal(lambda: GemStore(folder, key=KEY))
    (folder / "sql.db").unlink()
    with GemStore(folder, key=KEY) as store:
        assert store.sql.query("SELECT name FROM sqlite_master") == []
        assert store.kv.get("kept") == "value"


def test_deleting_an_emptied_kv_store_starts_it_empty_and_keeps_the_sql_rows(folder: Path) -> None:
    _empty(folder / "kv.db")
    _refusal(lambda: GemStore(folder, key=KEY))
    (folder / "kv.db").unlink()
    with GemStore(folder, key=KEY) as store:
        assert store.kv.list() == []
        assert store.sql.query("SELECT x FROM t") == [{"x": 1}]
    _empty(folder / "sql.db")  # the new kv store knows the SQL database was written
    assert "is empty (zero bytes)" in _refusal(lambda: GemStore(folder, key=KEY))


def test_an_empty_sql_database_beside_a_new_kv_store_is_refused(folder: Path) -> None:
    """With ``kv.db`` gone nothing tells an unused SQL database from an emptied one: refusing costs
    the user one deletion at most, opening could hide lost rows."""
    (folder / "kv.db").unlink()
    _empty(folder / "sql.db")
    assert "is empty (zero bytes)" in _refusal(lambda: GemStore(folder, key=KEY))


def test_a_database_emptied_while_the_store_is_open_is_refused_and_not_written_over(folder: Path) -> None:
    with GemStore(folder, key=KEY) as store:
        assert store.sql.query("SELECT x FROM t") == [{"x": 1}]
        assert store.kv.get("kept") == "value"
        _empty(folder / "sql.db")
        _empty(folder / "kv.db")
        for call in (
            lambda: store.sql.query("SELECT x FROM t"),
            lambda: store.sql.execute("CREATE TABLE fresh (y)"),
            lambda: store.kv.set("new", 1),
        ):
            message = _refusal(call)
            assert "was emptied (zero bytes) while it was open" in message, message
            assert "restore the file from a backup" in message
        assert (folder / "sql.db").stat().st_size == 0
        assert (folder / "kv.db").stat().st_size == 0


def test_a_run_does_not_open_an_emptied_sql_database(folder: Path) -> None:
    """A run's own connection opens the file the store made complete: empty, it can only be damage."""
    _empty(folder / "sql.db")
    assert "is empty (zero bytes)" in _refusal(lambda: RunSql(folder, key=KEY))
    assert (folder / "sql.db").stat().st_size == 0


def test_a_run_does_not_create_a_sql_database_that_was_deleted(folder: Path) -> None:
    (folder / "sql.db").unlink()
    message = _refusal(lambda: RunSql(folder, key=KEY))
    assert "is missing" in message
    assert not (folder / "sql.db").exists()


# -- installations from earlier versions ---------------------------------------------------------


def test_an_earlier_versions_never_written_sql_database_keeps_working(tmp_path: Path) -> None:
    folder = tmp_path / "gem"
    _earlier_version_store(folder)
    with GemStore(folder, key=KEY) as store:
        assert store.kv.get("kept") == "value"
        assert store.sql.query("SELECT name FROM sqlite_master") == []
        assert (folder / "sql.db").stat().st_size > 0, "the unused database was not made complete"
        store.sql.execute("CREATE TABLE t (x)")
    with GemStore(folder, key=KEY) as again:
        assert again.sql.query("SELECT name FROM sqlite_master") == [{"name": "t"}]
    _empty(folder / "sql.db")  # from now on the store knows its SQL database was written
    assert "is empty (zero bytes)" in _refusal(lambda: GemStore(folder, key=KEY))


def test_an_earlier_versions_written_sql_database_is_known_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "gem"
    _earlier_version_store(folder)
    conn = sqlcipher3.connect(os.fspath(folder / "sql.db"), isolation_level=None)
    conn.execute(f"PRAGMA key = \"x'{KEY.hex()}'\"")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    GemStore(folder, key=KEY).close()
    _empty(folder / "sql.db")
    assert "is empty (zero bytes)" in _refusal(lambda: GemStore(folder, key=KEY))
