"""Pending passages are found through the store on both backends, and a long-running process embeds them.

K-SRCH, K-STORE: the hand-off of one-shot commands and the vault-wide indexer of
``serve`` ask each space's store whether passages wait for vectors: a SQLite file, or the space's
database on PostgreSQL. A space another process creates while ``serve`` runs is found and embedded on
both backends. Real components: the default embedder, real PostgreSQL, the server ``notochord serve``
builds, and a separate Python process writing as the CLI does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.cli.handoff import any_pending
from notochord.cli.serve_cmd import build_server
from notochord.db import postgres
from notochord.db.schema import chunks
from notochord.search import vault_indexer, vector_index
from notochord.search.vault_indexer import has_pending
from notochord.settings import Settings
from postgres_server import BACKENDS

SECRET = "test-secret-for-the-pending-spaces-test-0123456789abcdef"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(new_database_url: Callable[[], str | None]) -> str | None:
    return new_database_url()


def _open(data: Path, url: str | None, *, background: bool = False) -> notochord.Notochord:
    settings = Settings(data_dir=data, index_in_background=background, database_url=url, jwt_secret=SECRET)
    return notochord.open(data, settings)


def _write_as_a_command(data: Path, url: str | None, org: str, key: str, body: str) -> None:
    """Write a document from another process, opened the way every CLI command opens the vault."""
    script = textwrap.dedent(
        f"""
        import notochord
        from notochord.settings import Settings
        settings = Settings.load(index_in_background=False)
        with notochord.open({str(data)!r}, settings) as nc:
            space = nc.org({org!r}, create=True)
            space.user.documents.upsert(collection="keep", key={key!r}, title={key!r}, body={body!r})
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTOCHORD_")}
    if url:
        env["NOTOCHORD_DATABASE_URL"] = url
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env=env)


def test_a_written_space_reads_as_pending_until_its_passages_are_embedded(tmp_path: Path, url: str | None) -> None:
    """The same question about a SQLite file and about a PostgreSQL database."""
    with _open(tmp_path / "vault", url) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
        model = nc.embedding_model_id
        assert model is not None
        stores = nc.space_stores()
        assert [name for name, _ in stores] == ["personal"]
        assert isinstance(stores[0][1], str if url else Path)
        assert has_pending(stores[0][1], model) is True
        assert any_pending(stores, model) is True
        nc.personal.index.wait()
        assert has_pending(stores[0][1], model) is False
        assert any_pending(stores, model) is False


@pytest.mark.postgresql
def test_a_postgresql_space_still_being_created_is_not_pending(tmp_path: Path, database_url: str) -> None:
    """A database without the schema yet (its creator is migrating it) reads as not
    pending, so nobody races the creator's migration; an unreachable database reads the same."""
    with _open(tmp_path / "vault", database_url) as nc:
        postgres.create_database(database_url, "org:fresh")
        stores = dict(nc.space_stores())
        assert "org:fresh" in stores
        assert has_pending(stores["org:fresh"], "any-model") is False
        gone = str(stores["org:fresh"]).replace(postgres.database_name(database_url, "org:fresh"), "nosuchdb")
        assert has_pending(gone, "any-model") is False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def serving(tmp_path: Path, url: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``notochord serve``'s server on a vault whose personal space waits to be embedded."""
    data = tmp_path / "vault"
    with _open(data, url) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
    monkeypatch.setattr(vector_index, "POLL_SECONDS", 0.3)
    monkeypatch.setattr(vault_indexer, "POLL_SECONDS", 0.3)
    settings = Settings(data_dir=data, jwt_secret=SECRET, database_url=url)
    with notochord.open(data, settings) as nc:
        server = build_server(nc, settings, host="127.0.0.1", port=_free_port())
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            yield data
        finally:
            server.should_exit = True
            thread.join(timeout=30)


def _embedded(space: notochord.Space) -> bool:
    """Whether the space holds passages and none of them waits for a vector."""
    with space.core.store.read() as conn:
        total = conn.execute(sa.select(sa.func.count()).select_from(chunks)).scalar_one()
    return int(total) > 0 and space.index.pending() == 0


def _until_embedded(observer: notochord.Notochord, name: str) -> None:
    deadline = time.monotonic() + 120
    while not (name in observer.spaces() and _embedded(observer.space(name))):
        if time.monotonic() > deadline:
            pytest.fail(f"{name} still pending after two minutes (spaces: {observer.spaces()})")
        time.sleep(0.3)


def test_serve_embeds_a_space_that_another_process_creates_while_it_runs(serving: Path, url: str | None) -> None:
    """With ``database_url`` as with files, serve does not need to have opened a
    space at start: an organization a command creates later is found, opened and embedded."""
    with _open(serving, url) as observer:
        _until_embedded(observer, "personal")
        _write_as_a_command(serving, url, "beta", "leave", "Holidays are booked through the staff portal.")
        _until_embedded(observer, "org:beta")
        hits = observer.space("org:beta").search("vacation days", limit=1)
        assert hits and hits[0].title == "leave"
