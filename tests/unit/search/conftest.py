"""Fixtures for the search unit tests: an in-memory FTS5 table, a fake embedder, spaces on both backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, text

import notochord
from notochord.clock import FixedClock
from notochord.search.embeddings import Embedder
from notochord.search.textindex import fts_table_ddl
from notochord.settings import Settings
from postgres_server import BACKENDS

from .fakes import HashedNgramEmbedder

FTS_TABLE = "chunk_fts"


@pytest.fixture
def fts_conn() -> Iterator[Connection]:
    """A connection to a fresh in-memory SQLite database holding an empty ``chunk_fts`` table
    and a ``chunks(id, collection)`` table that permission filters can refer to."""
    engine = create_engine("sqlite://")
    with engine.connect() as conn:
        conn.execute(text(fts_table_ddl(FTS_TABLE)))
        conn.execute(text("CREATE TABLE chunks (id INTEGER PRIMARY KEY, collection TEXT NOT NULL)"))
        yield conn
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Tests here that open a space run over both backends: SQLite files and PostgreSQL."""
    return str(request.param)


@pytest.fixture
def fake_embedder() -> HashedNgramEmbedder:
    return HashedNgramEmbedder()


SpaceOpener = Callable[[Embedder], notochord.Space]


@pytest.fixture
def spaces_with(
    tmp_path: Path, clock: FixedClock, backend: str, new_database_url: Callable[[], str | None]
) -> Iterator[SpaceOpener]:
    """Opens fresh spaces on the test's backend, each its own data directory, searching with the embedder given."""
    opened: list[notochord.Notochord] = []

    def make(embedder: Embedder) -> notochord.Space:
        directory = tmp_path / f"d{len(opened)}"
        settings = Settings(data_dir=directory, index_in_background=False, database_url=new_database_url())
        nc = notochord.open(directory, settings, clock=clock, embedder=embedder)
        opened.append(nc)
        return nc.personal

    yield make
    for nc in opened:
        nc.close()
