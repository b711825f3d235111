"""A repair of the full-text rows reaches every held in-memory index (K-SRCH-02, K-CHG-01).

A repair rewrites full-text rows without a change record. A row rewritten in place with as many
tokens as before passes the refresh's totals, so without more a search kept finding what the
repair had just removed. A repair now draws a new full-text generation, and an index held at
another generation is rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.db.schema import chunks, space_meta
from notochord.knowledge.check import check, repair
from notochord.search.inverted_index import text_index
from notochord.search.inverted_index_delta import GENERATION_KEY
from notochord.settings import Settings
from postgres_server import BACKENDS

from .fakes import HashedNgramEmbedder


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[notochord.Space]:
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False, database_url=new_database_url())
    with notochord.open(tmp_path / "d", settings, clock=clock, embedder=HashedNgramEmbedder()) as nc:
        # imported: a repair re-derives its full-text rows from its chunks, in place under the same ids
        nc.personal.user.documents.upsert(
            collection="keep",
            key="stew",
            title="Stew",
            text="Simmer the beef slowly.",
            source_uri="https://example.org/stew",
        )
        nc.personal.user.documents.upsert(collection="keep", key="rice", title="Rice", body="Rinse the rice twice.")
        yield nc.personal


def _titles(space: notochord.Space, query: str) -> list[str]:
    return [hit.title for hit in space.user.search(query) if hit.text_match]


def _swap_word_in_place(space: notochord.Space, old: str, new: str) -> None:
    """Damage the stew's full-text row as a torn write would: one word for another, same token count."""
    with space.core.store.engine.begin() as conn:
        chunk = conn.execute(sa.select(sa.func.min(chunks.c.id))).scalar_one()
        if conn.dialect.name == "sqlite":
            body = conn.execute(sa.text("SELECT body FROM chunks_fts WHERE rowid = :id"), {"id": chunk}).scalar_one()
            conn.execute(
                sa.text("UPDATE chunks_fts SET body = :body WHERE rowid = :id"),
                {"id": chunk, "body": str(body).replace(old, new)},
            )
        else:
            conn.execute(
                sa.text("UPDATE chunks_fts_terms SET term = :new WHERE chunk_id = :id AND term = :old"),
                {"id": chunk, "old": old, "new": new},
            )


def test_a_search_after_a_repair_finds_the_repaired_words_not_the_damaged_ones(space: notochord.Space) -> None:
    """The index held when the damage was read is rebuilt after the repair, not trusted on its totals
    (an imported document's rows are rewritten under the same ids, with as many tokens)."""
    _swap_word_in_place(space, "beef", "lamb")
    assert _titles(space, "lamb") == ["Stew"]  # the index now holds the damaged row
    assert check(space.core), "the damage is one the checker finds"

    repair(space.core)

    assert check(space.core) == []
    assert _titles(space, "beef") == ["Stew"]
    assert _titles(space, "lamb") == []


def test_a_repair_draws_a_new_generation_and_an_index_of_another_is_rebuilt(space: notochord.Space) -> None:
    """Another process holding an index sees the new generation in the store and rebuilds."""
    with space.core.store.read() as conn:
        before = text_index(conn, "chunks_fts")
    _swap_word_in_place(space, "beef", "lamb")
    repair(space.core)
    with space.core.store.read() as conn:
        generation = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == GENERATION_KEY)).scalar()
        after = text_index(conn, "chunks_fts")
    assert generation and before.held.generation != generation
    assert after.held.generation == generation
    assert after is not before


def test_ordinary_writes_keep_the_generation_and_refresh_incrementally(space: notochord.Space) -> None:
    """Only a repair draws a generation: a document write is applied by the refresh, not a rebuild."""
    with space.core.store.read() as conn:
        before = text_index(conn, "chunks_fts")
    space.user.documents.upsert(collection="keep", key="bread", title="Bread", body="Knead the dough.")
    with space.core.store.read() as conn:
        after = text_index(conn, "chunks_fts")
        stored = conn.execute(sa.select(space_meta.c.value).where(space_meta.c.key == GENERATION_KEY)).scalar()
    assert stored is None
    assert after.held.generation == before.held.generation == ""
    assert after.held.changed > before.held.changed  # applied as a change, which a rebuild resets
    assert _titles(space, "dough") == ["Bread"]
