"""A gem's private storage meets odd keys and values, damaged or foreign files, and files deleted
under it, and answers in words with a way forward (P-STOR-02, P-STOR-08, P-STOR-09, K-NS-03).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notochord.errors import FileError, StorageFullError
from notochord.files.private import MAX_QUERY_BYTES, GemStore

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
FOREIGN_WORDING = ("file is not a database", "malformed", "readonly database", "unable to open", "database file")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GemStore]:
    with GemStore(tmp_path / "gem", key=KEY) as opened:
        yield opened


def _refusal(call: Any, kind: type[Exception] = FileError) -> str:
    with pytest.raises(kind) as caught:
        call()
    message = str(caught.value)
    assert not any(words in message for words in FOREIGN_WORDING), message
    return message


# -- key-value keys and values ----------------------------------------------------------------


def test_kv_keys_with_slashes_and_dots_are_plain_keys(store: GemStore) -> None:
    """A kv key names no file: ``/`` and ``..`` are ordinary characters in it."""
    store.kv.set("../x", 1)
    store.kv.set("a/b", 2)
    assert store.kv.get("../x") == 1
    assert store.kv.list("a/") == ["a/b"]
    assert sorted(p.name for p in store.folder.iterdir()) == ["blobs", "documents", "kv.db", "sql.db"]


def test_a_kv_key_or_prefix_holding_nul_is_refused(store: GemStore) -> None:
    """A key with NUL was stored, yet ``list`` with its own prefix did not find it."""
    assert "NUL" in _refusal(lambda: store.kv.set("a\x00b", 1))
    assert "NUL" in _refusal(lambda: store.kv.get("a\x00b"))
    assert "NUL" in _refusal(lambda: store.kv.list("a\x00"))
    assert store.kv.list() == []


def test_a_kv_prefix_that_is_not_text_is_refused(store: GemStore) -> None:
    assert "prefix" in _refusal(lambda: store.kv.list(5))  # type: ignore[arg-type]


def test_a_kv_value_too_large_to_read_back_is_refused_when_set(store: GemStore) -> None:
    """A 40 MB value was kept, though no answer may carry it back to the gem."""
    store.kv.set("big", "kept")
    message = _refusal(lambda: store.kv.set("big", "x" * (MAX_QUERY_BYTES + 1)))
    assert "32 MB" in message and "blob" in message
    assert store.kv.get("big") == "kept"


def test_listing_more_keys_than_one_answer_may_carry_is_refused_in_words(store: GemStore) -> None:
    """P-STOR-02: ``kv.list`` built every key in memory, however many; now it stops at the answer's
    bound and says how to list them instead, while a narrower prefix still lists."""
    key_chars = 1000
    needed = MAX_QUERY_BYTES // key_chars + 1
    with store._kv_db.cursor() as cur:  # written in one statement: a put per key would take minutes
        cur.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
            "INSERT INTO kv (key, value) SELECT printf('bulk:%08d:', i) || substr(hex(zeroblob(?)), 1, ?), '1' FROM n",
            (needed, key_chars, key_chars - 14),
        )
    store.kv.set("other", 1)

    message = _refusal(lambda: store.kv.list("bulk:"))
    assert "32 MB" in message and "longer prefix" in message
    assert len(store.kv.list("bulk:00000001")) == 1
    assert store.kv.list("other") == ["other"]


def test_a_value_nested_ten_thousand_deep_is_refused_and_changes_nothing(store: GemStore) -> None:
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    assert "nested too deeply" in _refusal(lambda: store.kv.set("deep", deep))
    assert store.kv.list() == []


# -- blobs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [5, "text", None, [1, 2]])
def test_a_blob_must_be_bytes(store: GemStore, data: Any) -> None:
    """``put(name, 5)`` used to store five zero bytes; text escaped as a TypeError."""
    assert "bytes" in _refusal(lambda: store.blobs.put("b.bin", data))
    assert store.blobs.list() == []


# -- damaged, foreign and vanished files --------------------------------------------------------


def test_a_database_copied_from_another_gem_is_refused_in_words_with_a_way_forward(tmp_path: Path) -> None:
    """K-NS-03, P-STOR-09: another gem's file does not open under this gem's key."""
    with GemStore(tmp_path / "a", key=KEY) as a:
        a.sql.execute("CREATE TABLE secret (x)")
    GemStore(tmp_path / "b", key=OTHER_KEY).close()
    shutil.copy(tmp_path / "a" / "sql.db", tmp_path / "b" / "sql.db")
    message = _refusal(lambda: GemStore(tmp_path / "b", key=OTHER_KEY))
    assert "cannot be read with this gem's key" in message and "another gem's" in message
    assert str(tmp_path / "b" / "sql.db") in message
    assert "delete that file" in message


def test_a_truncated_database_is_refused_in_words_and_deleting_it_starts_afresh(tmp_path: Path) -> None:
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY) as first:
        first.sql.execute("CREATE TABLE t (x)")
        first.sql.executemany("INSERT INTO t VALUES (?)", [[os.urandom(200)] for _ in range(500)])
        first.kv.set("k", 1)
    with open(folder / "sql.db", "r+b") as file:
        file.truncate(5000)
    message = _refusal(lambda: GemStore(folder, key=KEY))
    assert "delete that file" in message
    (folder / "sql.db").unlink()
    with GemStore(folder, key=KEY) as again:
        assert again.sql.query("SELECT name FROM sqlite_master") == []
        assert again.kv.get("k") == 1


def test_a_database_deleted_while_open_is_reported_in_words(store: GemStore) -> None:
    store.sql.execute("CREATE TABLE t (x)")
    store.kv.set("k", 1)
    (store.folder / "sql.db").unlink()
    (store.folder / "kv.db").unlink()
    sql = _refusal(lambda: store.sql.execute("INSERT INTO t VALUES (1)"))
    kv = _refusal(lambda: store.kv.set("k", 2))
    for message in (sql, kv):
        assert "was deleted or moved while it was open" in message and "reopen" in message


def test_a_full_database_keeps_the_earlier_value_whole(store: GemStore) -> None:
    """Disk full while writing: the error says so and nothing half-written is kept. The page limit
    stands in for a full disk: SQLite reports both the same way."""
    store.kv.set("k", "before")
    store.sql.execute("CREATE TABLE t (x)")
    for guarded in (store._kv_db, store._sql_db):  # a full disk cannot be made in a test
        conn = guarded._conn  # past the gem's fence, which refuses these pragmas
        assert conn is not None
        conn.set_authorizer(None)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 1}")
    _refusal(lambda: store.kv.set("k", "x" * 100_000), StorageFullError)
    _refusal(lambda: store.sql.execute("INSERT INTO t VALUES (zeroblob(100000))"), StorageFullError)
    assert store.kv.get("k") == "before"
    assert store.sql.query("SELECT count(*) AS n FROM t") == [{"n": 0}]
