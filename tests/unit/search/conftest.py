"""Fixtures for the search unit tests: an in-memory FTS5 table and a fake embedder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, create_engine, text

from notochord.search.textindex import fts_table_ddl
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
    """Tests here that open a space run over both backends (Issue 17): SQLite files and PostgreSQL."""
    return str(request.param)


@pytest.fixture
def fake_embedder() -> HashedNgramEmbedder:
    return HashedNgramEmbedder()
