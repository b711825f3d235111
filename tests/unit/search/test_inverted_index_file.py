"""The full-text index saved beside a space's database and restored by the next process.

A restarted process loads the saved index, checks it against the database and refreshes it with
what was written meanwhile instead of rebuilding it; a file that does not check out — truncated,
corrupted, another format, another space's — is ignored and the index rebuilt. Backups leave the
file out: it is rebuilt from the database.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import stat
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import notochord
from notochord.backup import MANIFEST, backup
from notochord.clock import FixedClock
from notochord.knowledge.indexing import FTS_TABLE
from notochord.search import inverted_index
from notochord.search.inverted_index import InvertedIndex, build_index, text_index
from notochord.search.inverted_index_file import index_file, load
from notochord.settings import Settings

from .index_contents import index_contents

Opener = Callable[[str], notochord.Notochord]


@pytest.fixture
def open_dir(tmp_path: Path, clock: FixedClock) -> Iterator[Opener]:
    """Opens (again) the data directory of the given name: a new engine, as a new process has."""
    opened: list[notochord.Notochord] = []

    def make(name: str) -> notochord.Notochord:
        directory = tmp_path / name
        nc = notochord.open(directory, Settings(data_dir=directory, index_in_background=False), clock=clock)
        opened.append(nc)
        return nc

    yield make
    for nc in opened:
        nc.close()


def fill(nc: notochord.Notochord, prefix: str, count: int) -> None:
    nc.personal.user.documents.upsert_many(
        [
            {
                "collection": "keep",
                "key": f"{prefix}{i}",
                "title": f"{prefix} {i}",
                "body": f"granite river {i} {prefix}",
            }
            for i in range(count)
        ]
    )


def saved_path(nc: notochord.Notochord) -> Path:
    path = index_file(nc.personal.core.store.engine, FTS_TABLE)
    assert path is not None
    return path


def shared_and_rebuilt(nc: notochord.Notochord) -> tuple[InvertedIndex, InvertedIndex]:
    with nc.personal.core.store.read() as conn:
        return text_index(conn, FTS_TABLE), build_index(conn, FTS_TABLE)


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every whole read of a full-text table, by table name."""
    seen: list[str] = []
    read = inverted_index._read_whole

    def counted(conn: object, table: str) -> InvertedIndex:
        seen.append(table)
        return read(conn, table)  # type: ignore[arg-type]

    monkeypatch.setattr(inverted_index, "_read_whole", counted)
    return seen


def test_the_first_search_saves_the_index_readable_by_its_owner_only(open_dir: Opener) -> None:
    """Built once, the index is written beside the database, mode 0600."""
    nc = open_dir("one")
    fill(nc, "a", 20)
    assert len(nc.personal.user.search("granite", limit=100)) == 20
    path = saved_path(nc)
    assert (
        path.name.endswith(".chunks_fts.fulltext")
        and path.parent == Path(str(nc.personal.core.store.engine.url.database)).parent
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load(path) is not None


def test_a_restarted_process_restores_the_saved_index_and_refreshes_it(open_dir: Opener, rebuilds: list[str]) -> None:
    """The next process's first search reads the saved index and applies only
    what was written since — no whole read of the table — and equals a rebuild."""
    first = open_dir("space")
    fill(first, "a", 30)
    first.personal.user.search("granite")
    first.close()
    assert rebuilds == ["chunks_fts"]
    again = open_dir("space")
    fill(again, "b", 3)
    doc = again.personal.user.documents.get_by_key("keep", "a0")
    assert doc is not None
    again.personal.user.documents.delete(doc.id)
    titles = {h.title for h in again.personal.user.search("granite", limit=100)}
    assert rebuilds == ["chunks_fts"]
    assert len(titles) == 32 and "b 2" in titles and "a 0" not in titles
    shared, rebuilt = shared_and_rebuilt(again)
    assert index_contents(shared) == index_contents(rebuilt)


def test_the_index_is_saved_again_at_close_once_enough_changed(open_dir: Opener, rebuilds: list[str]) -> None:
    """Writes after the first save are saved at close, so the process after
    refreshes from there (its restored index already holds them)."""
    nc = open_dir("space")
    fill(nc, "a", 10)
    nc.personal.user.search("granite")
    fill(nc, "b", 10)
    nc.personal.user.search("granite")
    path = saved_path(nc)
    nc.close()
    loaded = load(path)
    assert loaded is not None
    _, arrays = loaded
    assert len(arrays["ids"]) == 20
    assert rebuilds == ["chunks_fts"]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty", "header"])
def test_a_damaged_file_is_ignored_and_the_index_rebuilt(open_dir: Opener, rebuilds: list[str], damage: str) -> None:
    """A truncated or corrupted file, or one of another format, is never trusted:
    the index is rebuilt, searches are right, and the file is replaced by a good one."""
    nc = open_dir("space")
    fill(nc, "a", 12)
    nc.personal.user.search("granite")
    path = saved_path(nc)
    nc.close()
    raw = path.read_bytes()
    damaged = {
        "truncated": raw[: len(raw) - 7],
        "flipped": raw[:-3] + bytes([raw[-3] ^ 0x55]) + raw[-2:],
        "garbage": b"\x00\x01not an index at all" * 10,
        "empty": b"",
        "header": re.sub(rb'"format": \d+', b'"format": 9', raw, count=1),
    }[damage]
    path.write_bytes(damaged)
    again = open_dir("space")
    assert len(again.personal.user.search("granite", limit=100)) == 12
    assert rebuilds == ["chunks_fts", "chunks_fts"]
    shared, rebuilt = shared_and_rebuilt(again)
    assert index_contents(shared) == index_contents(rebuilt)
    assert load(path) is not None


def test_another_spaces_saved_index_is_ignored(open_dir: Opener, rebuilds: list[str]) -> None:
    """A file copied from another space (even one with as many rows and tokens)
    does not match this database's rows and is rebuilt, not refreshed into wrong postings."""
    mine, theirs = open_dir("mine"), open_dir("theirs")
    fill(mine, "a", 8)
    fill(theirs, "z", 8)
    for nc in (mine, theirs):
        nc.personal.user.search("granite")
    mine_path, their_path = saved_path(mine), saved_path(theirs)
    mine.close()
    theirs.close()
    shutil.copyfile(their_path, mine_path)
    again = open_dir("mine")
    assert {h.title for h in again.personal.user.search("granite", limit=100)} == {f"a {i}" for i in range(8)}
    assert rebuilds.count("chunks_fts") == 3
    assert again.personal.user.search("z") == []


def test_a_backup_leaves_the_saved_full_text_index_out(tmp_path: Path) -> None:
    """The saved index (and one half written) is derived data: not in a backup."""
    vault = tmp_path / "vault"
    (vault / "spaces").mkdir(parents=True)
    (vault / "master.key").write_bytes(b"k" * 32)
    with sqlite3.connect(vault / "spaces" / "personal.sqlite") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    (vault / "spaces" / "personal.sqlite.chunks_fts.fulltext").write_bytes(b"index" * 100)
    (vault / "spaces" / "personal.sqlite.chunks_fts.fulltext.4242.partial").write_bytes(b"half")
    summary = backup(vault, tmp_path / "backup.tar.gz")
    with tarfile.open(summary.path) as archive:
        manifest = json.loads(archive.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    assert sorted(f["path"] for f in manifest["files"]) == ["master.key", "spaces/personal.sqlite"]
