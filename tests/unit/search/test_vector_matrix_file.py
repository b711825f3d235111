"""A large space's vectors are saved beside its database and loaded by the next process.

Reading every vector row out of SQLite is most of a large space's first search after a restart, so
a process closing a space saves the vectors it holds, and the next one loads that file — but only
after checking it (same model, dimension and repair generation, a change log not behind it, sampled
vectors byte-for-byte as stored) and reconciling it with the store: whatever was written, edited,
deleted or embedded while no process held the file is what the restored vectors hold. Anything that
does not check out is ignored and the vectors are read from the store. K-SRCH-03, K-SRCH-05.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.knowledge.check import repair
from notochord.search import vector_file
from notochord.search.vector_file import matrix_file
from notochord.settings import Settings

from .fakes import HashedNgramEmbedder
from .random_writes import Writer

Opener = Callable[[], notochord.Notochord]
WORDS = ["granite", "river", "maple", "copper", "violet", "quartz", "harbor", "lantern", "meadow", "falcon"]


@pytest.fixture
def open_vault(tmp_path: Path, clock: FixedClock) -> Iterator[Opener]:
    """Opens the same data directory again, as a new process would: its own engine and vectors held.

    Every space saves its vectors at close, however few (the default keeps files for large ones only).
    """
    opened: list[notochord.Notochord] = []
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False, vector_saved_matrix_min=1)

    def make() -> notochord.Notochord:
        nc = notochord.open(tmp_path / "d", settings, clock=clock, embedder=HashedNgramEmbedder())
        opened.append(nc)
        return nc

    yield make
    for nc in opened:
        nc.close()


def _text(rnd: random.Random, words: int = 30) -> str:
    return " ".join(rnd.choices(WORDS, k=words))


def _fill(space: notochord.Space, count: int, *, seed: int = 1, collection: str = "keep") -> list[int]:
    rnd = random.Random(seed)
    ids = [
        space.user.documents.upsert(collection=collection, title=f"doc {seed}-{i}", body=_text(rnd)).id
        for i in range(count)
    ]
    space.index.wait()
    return ids


def _search_loads(space: notochord.Space) -> None:
    """A search by meaning: the first one of a process loads the vectors."""
    chunk_ids = _stored_vectors(space)
    space.index.search("granite river", k=5, allowed=sorted(chunk_ids) or [1])


def _stored_vectors(space: notochord.Space) -> dict[int, bytes]:
    """What the vectors held must be, by definition: the model's vectors matching their chunk's text."""
    with space.core.store.read() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT v.chunk_id, v.vector FROM chunk_vectors AS v JOIN chunks AS c ON c.id = v.chunk_id "
                "WHERE v.model_id = :model AND v.text_hash = c.text_hash"
            ),
            {"model": HashedNgramEmbedder().model_id},
        ).all()
    return {int(r[0]): bytes(r[1]) for r in rows}


def _held_vectors(space: notochord.Space) -> dict[int, bytes]:
    memory = space.index.memory
    assert memory is not None
    ids = memory.matrix.ids()
    rows = memory.matrix.get(ids)
    return {int(i): rows[n].astype("<f4").tobytes() for n, i in enumerate(ids.tolist())}


def _the_file(space: notochord.Space) -> Path:
    path = matrix_file(space.core.store.engine, HashedNgramEmbedder().model_id)
    assert path is not None
    return path


def test_a_restarted_process_loads_the_saved_vectors_and_ranks_as_before(open_vault: Opener) -> None:
    first = open_vault()
    space = first.personal
    _fill(space, 40)
    _search_loads(space)
    assert space.index.origin == "read"
    expected = space.index.search("copper violet", k=10, allowed=sorted(_stored_vectors(space)))
    path = _the_file(space)
    first.close()
    assert path.is_file()
    assert path.stat().st_mode & 0o777 == 0o600

    again = open_vault().personal
    assert again.index.search("copper violet", k=10, allowed=sorted(_stored_vectors(again))) == expected
    assert again.index.origin == "restored"
    assert _held_vectors(again) == _stored_vectors(again)


def test_writes_made_while_no_process_held_the_file_are_in_the_restored_vectors(open_vault: Opener) -> None:
    """Documents added and embedded, edited (new chunks), deleted and moved by another process after
    the file was saved: the restored vectors are exactly the store's."""
    first = open_vault()
    space = first.personal
    docs = _fill(space, 30)
    _search_loads(space)
    first.close()

    command = open_vault().personal  # never searches: it saves no file of its own
    other = command.user.collections.create("elsewhere").id
    command.user.documents.delete(docs[0])
    command.user.documents.delete(docs[-1])
    command.user.documents.upsert(collection="keep", title="doc 1-5", body="harbor lantern " * 40)  # a new document
    command.user.documents.move(docs[3], collection=other)
    _fill(command, 5, seed=2)
    before = set(_saved(command).ids.tolist())
    assert command.index.memory is None

    again = open_vault().personal
    _search_loads(again)
    assert again.index.origin == "restored"
    assert _held_vectors(again) == _stored_vectors(again)
    assert set(_stored_vectors(again)) != before, "the store moved on since the file was saved"


def _saved(where: notochord.Space | Path) -> vector_file.Saved:
    embedder = HashedNgramEmbedder()
    path = where if isinstance(where, Path) else _the_file(where)
    saved = vector_file.load(path, model_id=embedder.model_id, dim=embedder.dim, accept=lambda _: True)
    assert saved is not None
    return saved


def test_a_vector_row_that_took_a_deleted_rows_place_is_found(open_vault: Opener) -> None:
    """SQLite gives a new row the highest row id plus one: when the newest vectors' document is
    rewritten, the next vectors stored take their row ids. A restart that looked only for rows past
    the saved mark (and documents changed since) would never load the vectors of a document written
    before the file was saved but embedded after; the ids are compared instead."""
    first = open_vault()
    space = first.personal
    _fill(space, 10)
    space.user.documents.upsert(collection="keep", key="newest", title="newest", body="maple harbor")
    space.index.wait()
    pending = space.user.documents.upsert(collection="keep", title="pending", body="quartz meadow falcon").id
    _search_loads(space)
    first.close()
    top = _saved(space).top

    command = open_vault().personal
    # the newest vectors go with their chunks; "pending" (the oldest waiting) is embedded into their row id
    command.user.documents.upsert(collection="keep", key="newest", title="newest", body="violet lantern")
    command.index.wait()
    with command.core.store.read() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT v.rowid FROM chunk_vectors AS v JOIN chunks AS c ON c.id = v.chunk_id "
                "WHERE c.document_id = :doc"
            ),
            {"doc": pending},
        ).all()
    assert rows and max(int(r[0]) for r in rows) <= top, "the scenario: its rows lie below the saved mark"

    again = open_vault().personal
    _search_loads(again)
    assert again.index.origin == "restored"
    assert _held_vectors(again) == _stored_vectors(again)


def test_a_file_that_does_not_check_out_is_ignored(open_vault: Opener, tmp_path: Path) -> None:
    first = open_vault()
    space = first.personal
    _fill(space, 20)
    _search_loads(space)
    path = _the_file(space)
    first.close()
    saved = path.read_bytes()

    for damaged in (saved[: len(saved) // 2], saved[:-7] + b"\x00" * 7, b"not a matrix"):
        path.write_bytes(damaged)
        nc = open_vault()
        _search_loads(nc.personal)
        assert nc.personal.index.origin == "read"
        assert _held_vectors(nc.personal) == _stored_vectors(nc.personal)
        nc.close()


def test_another_spaces_file_is_not_taken_for_this_ones(open_vault: Opener, tmp_path: Path, clock: FixedClock) -> None:
    """A file copied from another vault (same model, other data) fails the sampled vectors."""
    first = open_vault()
    _fill(first.personal, 20)
    _search_loads(first.personal)
    ours = _the_file(first.personal)
    first.close()

    other_dir = tmp_path / "other"
    settings = Settings(data_dir=other_dir, index_in_background=False, vector_saved_matrix_min=1)
    with notochord.open(other_dir, settings, clock=clock, embedder=HashedNgramEmbedder()) as other:
        _fill(other.personal, 20, seed=9)
        _search_loads(other.personal)
        theirs = _the_file(other.personal)
    shutil.copyfile(theirs, ours)

    again = open_vault().personal
    _search_loads(again)
    assert again.index.origin == "read"
    assert _held_vectors(again) == _stored_vectors(again)


def test_a_store_put_back_to_an_earlier_copy_is_read_again(open_vault: Opener) -> None:
    """The file was saved after changes the store no longer has (a copy from before put back by hand)."""
    first = open_vault()
    space = first.personal
    _fill(space, 10)
    database = Path(str(space.core.store.engine.url.database))
    earlier = database.with_name("earlier.db")
    with closing(sqlite3.connect(database)) as source, closing(sqlite3.connect(earlier)) as copy:
        source.backup(copy)
    _fill(space, 10, seed=3)
    _search_loads(space)
    path = _the_file(space)
    first.close()
    assert not database.with_name(database.name + "-wal").exists()
    shutil.copyfile(earlier, database)
    assert _saved(path).feed > _newest_change(database)

    again = open_vault().personal
    _search_loads(again)
    assert again.index.origin == "read"
    assert _held_vectors(again) == _stored_vectors(again)


def test_after_a_repair_the_vectors_are_read_again(open_vault: Opener) -> None:
    """A repair rewrites rows outside the change log and draws a new generation: the file is not trusted."""
    first = open_vault()
    _fill(first.personal, 10)
    _search_loads(first.personal)
    first.close()

    fixer = open_vault().personal
    with fixer.core.store.engine.begin() as conn:  # a vector damaged behind the store's back
        conn.execute(
            sa.text(
                "UPDATE chunk_vectors SET vector = x'00' WHERE chunk_id = (SELECT min(chunk_id) FROM chunk_vectors)"
            )
        )
    assert repair(fixer.core)
    fixer.index.wait()

    again = open_vault().personal
    _search_loads(again)
    assert again.index.origin == "read"
    assert _held_vectors(again) == _stored_vectors(again)


def test_a_small_space_keeps_no_file(tmp_path: Path, clock: FixedClock) -> None:
    """Below the size from which it pays (20,000 vectors by default), the vectors are read from the store."""
    with notochord.open(
        tmp_path / "d",
        Settings(data_dir=tmp_path / "d", index_in_background=False),
        clock=clock,
        embedder=HashedNgramEmbedder(),
    ) as nc:
        _fill(nc.personal, 10)
        _search_loads(nc.personal)
        path = _the_file(nc.personal)
    assert not path.exists()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_restored_vectors_equal_the_store_after_random_writes_between_restarts(open_vault: Opener, seed: int) -> None:
    """Random writes (new, edited, deleted, moved, re-dated documents, reverts), some embedded and some
    not, between four restarts: every restart's vectors are exactly the store's."""
    nc = open_vault()
    writer = Writer(nc.personal, seed)
    rnd = random.Random(seed)
    origins: list[str | None] = []
    for _ in range(4):
        for _ in range(12):
            writer.step()
            if rnd.random() < 0.3:
                writer.space.index.wait()
        if rnd.random() < 0.5:
            _search_loads(writer.space)  # this process holds the vectors and saves them at close
        nc.close()
        nc = open_vault()
        writer.space = nc.personal
        _search_loads(writer.space)
        origins.append(writer.space.index.origin)
        assert _held_vectors(writer.space) == _stored_vectors(writer.space)
    assert "restored" in origins


def _newest_change(database: Path) -> int:
    with closing(sqlite3.connect(database)) as conn:
        return int(conn.execute("SELECT max(id) FROM changes").fetchone()[0])


def test_a_large_spaces_graph_comes_back_with_its_restored_vectors(tmp_path: Path, clock: FixedClock) -> None:
    """Above the HNSW threshold, the restored vectors get the graph saved beside them (restored, not
    built) once it is reconciled, and rank as the first process ranked."""
    settings = Settings(
        data_dir=tmp_path / "d", index_in_background=False, vector_saved_matrix_min=1, vector_hnsw_threshold=40
    )

    def opened() -> notochord.Notochord:
        return notochord.open(tmp_path / "d", settings, clock=clock, embedder=HashedNgramEmbedder())

    with opened() as first:
        space = first.personal
        _fill(space, 60)
        _search_loads(space)
        assert space.index.wait_for_graph(timeout=120)
        allowed = sorted(_stored_vectors(space))
        expected = space.index.search("maple quartz", k=5, allowed=allowed)
    with opened() as again:
        space = again.personal
        assert space.index.search("maple quartz", k=5, allowed=allowed) == expected
        assert space.index.origin == "restored"
        assert space.index.wait_for_graph(timeout=120)
        memory = space.index.memory
        assert memory is not None and memory.graph_origin == "restored"
        assert sorted(memory.graph_keys().tolist()) == allowed
        assert space.index.search("maple quartz", k=5, allowed=allowed) == expected
