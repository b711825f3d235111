"""A gem's private encrypted storage: P-STOR-01…11, K-NS-03, K-UNINST-03/11, P-FILE-05/15."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from notochord.clock import FixedClock
from notochord.errors import ClosedError, FileError, FileNotFoundInWorkspaceError, FilePermissionError
from notochord.files.private import GemStore
from notochord.files.runs import RunFolders

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GemStore]:
    with GemStore(tmp_path / "gems" / "recipes", key=KEY) as opened:
        yield opened


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


# -- kv ----------------------------------------------------------------------------------------


def test_kv_stores_json_values(store: GemStore) -> None:
    """P-STOR-02: ``ctx.storage.kv`` get / set / delete / list."""
    store.kv.set("cursor", {"page": 3, "tags": ["a", "b"], "done": False})
    store.kv.set("cursor", {"page": 4})
    store.kv.set("cache:weather:ams", 17.5)
    store.kv.set("cache:weather:nyc", None)
    assert store.kv.get("cursor") == {"page": 4}
    assert store.kv.get("cache:weather:nyc") is None
    assert store.kv.get("missing", "fallback") == "fallback"
    assert store.kv.list("cache:") == ["cache:weather:ams", "cache:weather:nyc"]
    assert store.kv.list() == ["cache:weather:ams", "cache:weather:nyc", "cursor"]
    assert store.kv.delete("cursor") is True
    assert store.kv.delete("cursor") is False
    assert store.kv.get("cursor") is None


def test_kv_refuses_values_that_are_not_json(store: GemStore) -> None:
    with pytest.raises(FileError, match="the key-value store keeps JSON"):
        store.kv.set("k", {1, 2})
    with pytest.raises(FileError, match="NaN and infinities are not JSON numbers"):
        store.kv.set("k", float("nan"))
    with pytest.raises(FileError, match="kv key"):
        store.kv.set("", 1)


def test_kv_persists_across_reopening(tmp_path: Path) -> None:
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY) as first:
        first.kv.set("k", [1, 2, 3])
    with GemStore(folder, key=KEY) as second:
        assert second.kv.get("k") == [1, 2, 3]


# -- sql --------------------------------------------------------------------------------------


def test_sql_runs_statements_and_returns_rows_as_dicts_or_lists(store: GemStore) -> None:
    """P-STOR-02, P-STOR-03: the gem's private SQL database."""
    store.sql.execute("CREATE TABLE recipe (id INTEGER PRIMARY KEY, name TEXT, rating INTEGER)")
    inserted = store.sql.execute("INSERT INTO recipe (name, rating) VALUES (?, ?)", ("stew", 5))
    assert inserted.rowcount == 1
    assert inserted.last_row_id == 1
    many = store.sql.executemany(
        "INSERT INTO recipe (name, rating) VALUES (:name, :rating)",
        [{"name": "soup", "rating": 3}, {"name": "salad", "rating": 4}],
    )
    assert many.rowcount == 2
    assert store.sql.query("SELECT name, rating FROM recipe WHERE rating >= ? ORDER BY rating DESC", (4,)) == [
        {"name": "stew", "rating": 5},
        {"name": "salad", "rating": 4},
    ]
    assert store.sql.query_rows("SELECT count(*), max(rating) FROM recipe") == [[3, 5]]


def test_executemany_is_all_or_nothing(store: GemStore) -> None:
    store.sql.execute("CREATE TABLE t (v INTEGER UNIQUE)")
    with pytest.raises(FileError):
        store.sql.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (1,)])
    assert store.sql.query_rows("SELECT count(*) FROM t") == [[0]]


def test_sql_errors_are_file_errors(store: GemStore) -> None:
    """No sqlcipher3 exception escapes."""
    with pytest.raises(FileError, match="refused the statement"):
        store.sql.execute("SELEKT nonsense")
    with pytest.raises(FileError):
        store.sql.query("SELECT * FROM no_such_table")


def test_gem_sql_cannot_reach_or_clobber_the_kv_table(store: GemStore) -> None:
    """The kv table lives in its own file: the gem's SQL sees no kv table and may drop its own freely."""
    store.kv.set("k", "v")
    assert store.sql.query_rows("SELECT name FROM sqlite_master WHERE name = 'kv'") == []
    store.sql.execute("CREATE TABLE kv (x)")
    store.sql.execute("DROP TABLE kv")
    assert store.kv.get("k") == "v"


@pytest.mark.parametrize(
    "statement",
    [
        "ATTACH DATABASE '{folder}/kv.db' AS stolen",
        "VACUUM INTO '{folder}/../copy.db'",
        "PRAGMA rekey = 'known'",
        "PRAGMA key = 'other'",
        "PRAGMA cipher_plaintext_header_size = 32",
        "PRAGMA writable_schema = ON",
        "SELECT load_extension('evil')",
    ],
)
def test_gem_sql_cannot_leave_its_own_database_or_change_its_key(store: GemStore, statement: str) -> None:
    """K-NS-03, P-STOR-08, P-STOR-09: no attach of real files, no key pragmas, no extensions."""
    with pytest.raises(FileError):
        store.sql.execute(statement.format(folder=store.folder))
    assert not (store.folder.parent / "copy.db").exists()


def test_gem_sql_keeps_harmless_pragmas_and_temporary_attach(store: GemStore) -> None:
    store.sql.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    assert [row["name"] for row in store.sql.query("PRAGMA table_info(t)")] == ["a", "b"]
    store.sql.execute("PRAGMA user_version = 7")
    assert store.sql.query_rows("PRAGMA user_version") == [[7]]
    store.sql.execute("ATTACH DATABASE ':memory:' AS scratch")
    store.sql.execute("DETACH DATABASE scratch")


# -- encryption and isolation -----------------------------------------------------------------


def test_databases_hold_no_plaintext_of_stored_values(tmp_path: Path) -> None:
    """P-STOR-09: the database files on disk are encrypted."""
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY) as store:
        store.kv.set("secret-key-name", "kv-plaintext-marker")
        store.sql.execute("CREATE TABLE notes (body TEXT)")
        store.sql.execute("INSERT INTO notes VALUES ('sql-plaintext-marker')")
        store.blobs.put("photo.jpg", b"blob-plaintext-marker")
    on_disk = _all_bytes(folder)
    for marker in (
        b"kv-plaintext-marker",
        b"sql-plaintext-marker",
        b"blob-plaintext-marker",
        b"secret-key-name",
    ):
        assert marker not in on_disk
    assert b"SQLite format 3" not in on_disk


def test_another_key_cannot_open_the_databases(tmp_path: Path) -> None:
    """P-STOR-08, K-NS-03: another gem's key reads nothing, and the error is a FileError."""
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY) as store:
        store.kv.set("k", "v")
    with pytest.raises(FileError, match="wrong key"):
        GemStore(folder, key=OTHER_KEY)


def test_another_key_cannot_read_blobs(tmp_path: Path) -> None:
    folder = tmp_path / "gem"
    with GemStore(folder, key=KEY) as store:
        store.blobs.put("a.bin", b"secret")
    (folder / "kv.db").unlink()
    (folder / "sql.db").unlink()
    with GemStore(folder, key=OTHER_KEY) as intruder, pytest.raises(FileError, match="failed authentication"):
        intruder.blobs.get("a.bin")


def test_blobs_round_trip_with_a_fresh_nonce_each_time(store: GemStore) -> None:
    """P-STOR-09: AES-GCM with a random 96-bit nonce per write."""
    store.blobs.put("img/cover.png", b"\x89PNG data")
    first = (store.folder / "blobs" / "img" / "cover.png").read_bytes()
    store.blobs.put("img/cover.png", b"\x89PNG data")
    second = (store.folder / "blobs" / "img" / "cover.png").read_bytes()
    assert first[4:16] != second[4:16]
    assert store.blobs.get("img/cover.png") == b"\x89PNG data"
    assert store.blobs.list() == ["img/cover.png"]
    assert store.blobs.delete("img/cover.png") is True
    with pytest.raises(FileNotFoundInWorkspaceError):
        store.blobs.get("img/cover.png")


def test_tampered_blob_fails_authentication(store: GemStore) -> None:
    store.blobs.put("a.bin", b"original content")
    path = store.folder / "blobs" / "a.bin"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(FileError, match="failed authentication"):
        store.blobs.get("a.bin")


def test_a_blob_renamed_on_disk_fails_authentication(store: GemStore) -> None:
    """The name is the associated data: swapping two blobs' files is detected."""
    store.blobs.put("a.bin", b"A")
    os.replace(store.folder / "blobs" / "a.bin", store.folder / "blobs" / "b.bin")
    with pytest.raises(FileError, match="failed authentication"):
        store.blobs.get("b.bin")


def test_truncated_blob_is_reported_as_damaged(store: GemStore) -> None:
    (store.folder / "blobs" / "short.bin").write_bytes(b"NCB1")
    with pytest.raises(FileError, match="damaged"):
        store.blobs.get("short.bin")


# -- documents ---------------------------------------------------------------------------------


def test_documents_are_plain_text_files(store: GemStore) -> None:
    """P-STOR-10: the gem's ``.md`` documents are stored as plain text."""
    store.documents.write("notes/week-39.md", "# Week 39\nplain")
    assert (store.folder / "documents" / "notes" / "week-39.md").read_text() == "# Week 39\nplain"
    assert store.documents.read("notes/week-39.md") == "# Week 39\nplain"
    store.documents.write("todo.txt", "milk")
    assert store.documents.list() == ["notes/week-39.md", "todo.txt"]
    assert store.documents.delete("todo.txt") is True
    with pytest.raises(FileNotFoundInWorkspaceError):
        store.documents.read("todo.txt")


@pytest.mark.parametrize(
    "name", ["../escape.md", "/etc/passwd.md", "notes/../../x.md", ".hidden.md", "a/.git/x.md", "a//b.md"]
)
def test_document_and_blob_names_cannot_escape_or_hide(store: GemStore, name: str) -> None:
    """K-NS-03, P-STOR-08: a name never reaches outside the gem's folder."""
    with pytest.raises(FilePermissionError):
        store.documents.write(name, "x")
    with pytest.raises(FilePermissionError):
        store.blobs.put(name, b"x")


@pytest.mark.parametrize("name", ["", "report.pdf", "a\\b.md", "bad\x00.md", "x" * 300 + ".md"])
def test_malformed_document_names_are_refused(store: GemStore, name: str) -> None:
    with pytest.raises(FileError):
        store.documents.write(name, "x")


@pytest.mark.parametrize("name", ["a\ud800.md", "notes/\udfff.md", "workspace:\ud800"])
def test_a_name_holding_a_lone_surrogate_is_refused_in_words_for_every_call(store: GemStore, name: str) -> None:
    """A JavaScript string may hold half of a UTF-16 pair; no file name can. Every call that takes a
    name says so, instead of letting the encoder's error out."""
    calls: list[Callable[[], object]] = [
        lambda: store.documents.write(name, "x"),
        lambda: store.documents.read(name),
        lambda: store.documents.delete(name),
        lambda: store.blobs.put(name, b"x"),
        lambda: store.blobs.get(name),
        lambda: store.blobs.delete(name),
    ]
    for call in calls:
        with pytest.raises(FileError, match=r"holds a lone surrogate \(U\+D[89A-F][0-9A-F]{2}\); remove it"):
            call()


# -- lifecycle ---------------------------------------------------------------------------------


def test_key_must_be_32_bytes(tmp_path: Path) -> None:
    with pytest.raises(FileError, match="32 bytes"):
        GemStore(tmp_path / "gem", key=b"short")


def test_destroy_deletes_the_whole_folder_and_reinstall_starts_empty(tmp_path: Path) -> None:
    """P-STOR-11, K-UNINST-03, K-UNINST-11: uninstall deletes everything; a reinstall gets nothing back."""
    folder = tmp_path / "gems" / "recipes"
    store = GemStore(folder, key=KEY)
    store.kv.set("k", "v")
    store.sql.execute("CREATE TABLE t (a)")
    store.blobs.put("b", b"x")
    store.documents.write("d.md", "doc")
    store.destroy()
    assert not folder.exists()
    with pytest.raises(ClosedError):
        store.kv.get("k")

    with GemStore(folder, key=bytes(reversed(KEY))) as reinstalled:
        assert reinstalled.kv.list() == []
        assert reinstalled.sql.query_rows("SELECT name FROM sqlite_master") == []
        assert reinstalled.blobs.list() == []
        assert reinstalled.documents.list() == []


def test_scheduled_run_folders_live_in_the_gem_folder_and_go_with_it(tmp_path: Path) -> None:
    """P-FILE-05, P-FILE-15: SOP run folders in the gem's folder are deleted at uninstall, while run
    folders placed in a conversation are the user's and stay."""
    clock = FixedClock(datetime(2026, 9, 29, 6, 0, tzinfo=UTC))
    conversation = tmp_path / "conversation"
    conversation.mkdir()
    store = GemStore(tmp_path / "gems" / "digest", key=KEY)
    scheduled = RunFolders.start(store.run_base, "nightly", clock=clock)
    (scheduled.path / "out.md").write_text("scheduled")
    chat = RunFolders.start(conversation, "nightly", clock=clock)
    (chat.path / "out.md").write_text("chat")
    assert scheduled.path.is_relative_to(store.folder)
    store.destroy()
    assert not scheduled.path.exists()
    assert (chat.path / "out.md").read_text() == "chat"


def test_gem_folder_is_private_to_its_owner(store: GemStore) -> None:
    """P-STOR-08: the folder is created readable by its owner only."""
    assert store.folder.stat().st_mode & 0o077 == 0


def test_a_text_with_a_lone_surrogate_is_refused_with_the_gems_own_error(store: GemStore) -> None:
    """P-STOR-02: half of a UTF-16 pair is no character; storage says so instead of leaking an encoding error."""
    with pytest.raises(FileError, match="lone surrogate \\(U\\+D800\\)"):
        store.kv.set("note", "a\ud800b")
    store.sql.execute("CREATE TABLE t (x TEXT)")
    with pytest.raises(FileError, match="lone surrogate"):
        store.sql.execute("INSERT INTO t VALUES (?)", ["\udfff"])
    assert store.kv.get("note") is None
    assert store.sql.query("SELECT count(*) AS n FROM t") == [{"n": 0}]
    store.kv.set("note", "tea \U0001f375")
    assert store.kv.get("note") == "tea \U0001f375"
