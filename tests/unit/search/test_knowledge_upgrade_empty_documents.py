"""A store written before every document had a passage is upgraded when it is opened (K-SRCH-01, K-SRCH-08, K-DOC-11).

Earlier versions gave a document whose body is empty, or only whitespace, no chunk at all, so no
search found it. Opening such a store for writing indexes each of those documents once, as one
empty passage carrying its title, in one write transaction, with no entry in the change log; the
store records that it was done, so a later open does not look for such documents again. A store
that cannot be written still opens, untouched. Every test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

import notochord
import notochord.db.engine
from notochord.clock import FixedClock
from notochord.db import postgres
from notochord.db.schema import changes, chunks, space_meta
from notochord.knowledge.check import check
from notochord.knowledge.chunkless import DONE_KEY
from notochord.knowledge.indexing import FTS_TABLE, unindex_document
from notochord.search.inverted_index import build_index, text_index
from notochord.settings import Settings

from .fakes import HashedNgramEmbedder
from .index_contents import index_contents

Opener = Callable[[], notochord.Notochord]


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[Opener]:
    """Opens the same data directory (and, on PostgreSQL, the same databases) each time it is called."""
    data, url = tmp_path / "data", new_database_url()
    opened: list[notochord.Notochord] = []

    def open_vault() -> notochord.Notochord:
        settings = Settings(data_dir=data, index_in_background=False, database_url=url)
        opened.append(notochord.open(data, settings, clock=clock, embedder=HashedNgramEmbedder()))
        return opened[-1]

    yield open_vault
    for nc in opened:
        nc.close()


def _as_written_before(space: notochord.Space, doc_ids: list[int]) -> None:
    """What an earlier version left: these documents without a chunk, and no record of the upgrade."""
    with space.core.store.engine.begin() as conn:
        for doc_id in doc_ids:
            unindex_document(conn, doc_id)
        conn.execute(sa.delete(space_meta).where(space_meta.c.key == DONE_KEY))


def _matched(space: notochord.Space, query: str) -> list[tuple[int, str]]:
    """The document and passage text of each hit a query word matched."""
    return [(h.document_id, h.text) for h in space.user.search(query) if h.text_match]


def _change_ids(space: notochord.Space) -> list[int]:
    with space.core.store.read() as conn:
        return list(conn.execute(sa.select(changes.c.id).order_by(changes.c.id)).scalars())


def _chunk_counts(space: notochord.Space) -> dict[int, int]:
    with space.core.store.read() as conn:
        query = sa.select(chunks.c.document_id, sa.func.count()).group_by(chunks.c.document_id)
        return {int(document_id): int(count) for document_id, count in conn.execute(query)}


def _upgraded(space: notochord.Space) -> bool:
    with space.core.store.read() as conn:
        return conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == DONE_KEY)).first() is not None


def _assert_consistent(space: notochord.Space) -> None:
    """The check finds nothing, and the full-text index searches hold is the one a rebuild reads."""
    assert check(space.core) == []
    with space.core.store.read() as conn:
        held, rebuilt = text_index(conn, FTS_TABLE), build_index(conn, FTS_TABLE)
    assert index_contents(held) == index_contents(rebuilt)


def test_documents_an_earlier_version_left_without_a_passage_are_found_after_the_store_is_opened(
    vault: Opener,
) -> None:
    """K-SRCH-01, K-SRCH-08, K-DOC-11: an empty body, a body of whitespace and an imported document
    without text are each found by their title after the store is opened again; a deleted one is
    not, until a revert restores it; nothing appears in the change log, and the check, the held
    full-text index and one rebuilt from the table agree."""
    space = vault().personal
    docs = space.user.documents
    empty = docs.upsert(collection="keep", title="Meadow survey", body="")
    blank = docs.upsert(collection="keep", title="Kestrel sightings", body=" \n\t\n")
    imported = docs.upsert(collection="keep", title="Quartz listing", text="", source_uri="https://x.example/q")
    gone = docs.upsert(collection="keep", title="Lantern notes", body="")
    deletion = docs.delete(gone.id)
    full = docs.upsert(collection="keep", title="Harbor log", body="The ferry left at dawn.")
    _as_written_before(space, [empty.id, blank.id, imported.id, gone.id])
    assert _matched(space, "meadow") == []
    before = _change_ids(space)

    space = vault().personal
    assert _change_ids(space) == before
    assert _upgraded(space)
    assert _chunk_counts(space) == {empty.id: 1, blank.id: 1, imported.id: 1, gone.id: 1, full.id: 1}
    assert _matched(space, "meadow survey") == [(empty.id, "")]
    assert _matched(space, "kestrel") == [(blank.id, "")]
    assert _matched(space, "quartz") == [(imported.id, "")]
    assert _matched(space, "lantern") == []
    assert _matched(space, "ferry") == [(full.id, "The ferry left at dawn.")]
    space.index.wait()
    assert space.index.pending() == 0
    _assert_consistent(space)

    space.changes.revert(deletion)
    assert _matched(space, "lantern") == [(gone.id, "")]
    _assert_consistent(space)


@pytest.fixture
def chunkless_queries() -> Iterator[Callable[[], int]]:
    """Counts the statements, sent on any engine while the test runs, that look for documents
    without a chunk (the spaces' engines are made by each open, so the listener is on the class)."""
    sent: list[str] = []

    def on_statement(_conn: sa.Connection, _cursor: Any, statement: str, *_rest: Any) -> None:
        if "NOT (EXISTS" in statement and "chunks.document_id = documents.id" in statement:
            sent.append(statement)

    sa.event.listen(sa.Engine, "before_cursor_execute", on_statement)
    try:
        yield lambda: len(sent)
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", on_statement)


def test_only_the_first_open_looks_for_documents_without_a_passage(
    vault: Opener, chunkless_queries: Callable[[], int]
) -> None:
    """K-SRCH-01: the search for documents without a chunk runs once per store (when it is made,
    or the first time an upgraded version opens it); every later open reads the record of it only."""
    nc = vault()
    assert _upgraded(nc.personal)
    assert chunkless_queries() == 1
    empty = nc.personal.user.documents.upsert(collection="keep", title="Meadow survey", body="")
    nc.close()

    nc = vault()
    _as_written_before(nc.personal, [empty.id])
    assert chunkless_queries() == 1
    nc.close()

    nc = vault()
    assert _matched(nc.personal, "meadow") == [(empty.id, "")]
    assert chunkless_queries() == 2
    nc.close()

    nc = vault()
    assert _matched(nc.personal, "meadow") == [(empty.id, "")]
    assert chunkless_queries() == 2


def test_a_search_held_while_another_opener_upgrades_the_store_stays_consistent(vault: Opener) -> None:
    """K-SRCH-01: a process that already holds the full-text index and the candidates of a search
    (here a second open of the same store) finds the upgraded documents at its next search, and
    holds what a rebuild reads."""
    first = vault().personal
    docs = first.user.documents
    docs.upsert(collection="keep", title="Harbor log", body="The meadow by the harbor.")
    empty = docs.upsert(collection="keep", title="Meadow survey", body="")
    _as_written_before(first, [empty.id])
    assert [doc for doc, _ in _matched(first, "meadow")] == [empty.id - 1]

    vault().personal  # noqa: B018 - opening the space is the act under test
    assert sorted(doc for doc, _ in _matched(first, "meadow")) == [empty.id - 1, empty.id]
    _assert_consistent(first)


def _set_read_only(server: str, database: str, on: bool) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = {}").format(
                sql.Identifier(database), sql.SQL("on" if on else "off")
            )
        )


def test_a_store_that_cannot_be_written_opens_and_is_left_as_it_is(
    vault: Opener, backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """K-SRCH-01: a read-only SQLite file (a read-only mount), or a PostgreSQL database that accepts
    only reads, opens as before, its documents untouched and no record of an upgrade; opened for
    writing again, it is upgraded."""
    nc = vault()
    empty = nc.personal.user.documents.upsert(collection="keep", title="Meadow survey", body="")
    _as_written_before(nc.personal, [empty.id])
    url = nc.settings.database_url
    nc.close()

    def read_only(on: bool) -> None:
        if backend == "sqlite":
            # root ignores file modes: the check a read-only mount fails is answered as it would
            monkeypatch.setattr(notochord.db.engine, "_writable", lambda _path: not on)
        else:
            assert url is not None
            server: str = request.getfixturevalue("postgres_server_url")
            _set_read_only(server, postgres.database_name(url, "personal"), on)

    read_only(True)
    try:
        held = vault()
        assert _chunk_counts(held.personal) == {}
        assert not _upgraded(held.personal)
        assert held.personal.user.documents.get(empty.id).title == "Meadow survey"
        held.close()
    finally:
        read_only(False)

    space = vault().personal
    assert _chunk_counts(space) == {empty.id: 1}
    assert _matched(space, "meadow") == [(empty.id, "")]
