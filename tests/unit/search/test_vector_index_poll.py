"""The embedding worker's poll: passages and vectors written by another process."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import notochord
from notochord.clock import FixedClock
from notochord.search.vault_indexer import VaultIndexer, has_pending
from notochord.settings import Settings

from .fakes import HashedNgramEmbedder


@pytest.fixture
def two_processes(tmp_path: Path, clock: FixedClock) -> Iterator[tuple[notochord.Space, notochord.Space]]:
    """The same space opened twice, as two processes would: separate engines, indexes and matrices."""
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False)
    embedder = HashedNgramEmbedder()
    with (
        notochord.open(tmp_path / "d", settings, clock=clock, embedder=embedder) as first,
        notochord.open(tmp_path / "d", settings, clock=clock, embedder=embedder) as second,
    ):
        yield first.personal, second.personal


def test_a_poll_embeds_passages_another_process_wrote(two_processes: tuple[notochord.Space, notochord.Space]) -> None:
    """The long-running side embeds what a command wrote, without being notified."""
    serving, command = two_processes
    assert serving.index.poll() == 0
    command.user.documents.upsert(collection="keep", title="Bread", body="Knead the dough and let it rise.")
    assert serving.index.poll() == 1
    assert serving.index.pending() == 0
    assert serving.index.poll() == 0, "nothing moved since the last round"


def test_a_poll_loads_vectors_another_process_stored(two_processes: tuple[notochord.Space, notochord.Space]) -> None:
    """Vectors a separate reindex stored reach the running process's in-memory index."""
    serving, command = two_processes
    serving.user.documents.upsert(collection="keep", title="Stew", body="Simmer the beef two hours.")
    serving.index.wait()
    assert serving.search("simmer beef", limit=1)[0].title == "Stew"  # the matrix is loaded now
    serving.index.poll()

    command.user.documents.upsert(collection="keep", title="Tyres", body="Patch the puncture of the bicycle tyre.")
    command.index.wait()
    serving.index.poll()

    semantic = serving.index.search("bicycle tyre puncture", k=5, allowed=list(range(1, 100)))
    assert len(semantic) == 2


def test_the_vault_indexer_opens_only_spaces_with_pending_passages(tmp_path: Path, clock: FixedClock) -> None:
    """At start-up the spaces with pending work open (starting their workers); a
    space with nothing pending stays closed, and one that cannot be opened does not stop the rest."""
    data = tmp_path / "d"
    settings = Settings(data_dir=data, index_in_background=False)
    embedder = HashedNgramEmbedder()
    with notochord.open(data, settings, clock=clock, embedder=embedder) as nc:
        nc.org("busy", create=True).user.documents.upsert(collection="keep", title="Bread", body="Knead the dough.")
        nc.org("idle", create=True)
        nc.org("broken", create=True).user.documents.upsert(collection="keep", title="Rye", body="Rye needs longer.")
    opened: list[str] = []

    def open_space(name: str) -> None:
        if name == "org:broken":
            raise RuntimeError("damaged")
        opened.append(name)

    indexer = VaultIndexer(
        data_dir=data,
        spaces=lambda: [(p.stem.replace("org-", "org:"), p) for p in sorted((data / "spaces").glob("*.db"))],
        is_open=lambda name: False,
        open_space=open_space,
        model_id=embedder.model_id,
    )
    assert indexer.run_once() == ["org:busy"]
    assert opened == ["org:busy"]


def test_a_space_still_being_created_is_left_to_its_creator(tmp_path: Path) -> None:
    """The watcher never opens a space whose schema is not committed yet (it would
    race the creating command's migration); a space at an older schema is opened to be migrated."""
    creating = tmp_path / "org-new.db"
    sqlite3.connect(creating).close()
    assert has_pending(creating, "m") is False
    older = tmp_path / "org-old.db"
    with contextlib.closing(sqlite3.connect(older)) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        conn.execute("INSERT INTO alembic_version VALUES ('0006')")
        conn.commit()
    assert has_pending(older, "m") is True
