"""Moving a space from SQLite to PostgreSQL: everything copied, counts checked,
the source untouched, and the copy a store like any other (searchable, writable, ids never reused)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from pg_vector_fixtures import WordHashEmbedder
from typer.testing import CliRunner

import notochord
from notochord.cli import app
from notochord.clock import FixedClock
from notochord.db import postgres
from notochord.db.migrate import migrate
from notochord.db.schema import chunk_vectors
from notochord.errors import StorageError
from notochord.knowledge.check import check
from notochord.knowledge.store_copy import copy_space
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql


def _open(data: Path, clock: FixedClock, url: str | None) -> notochord.Notochord:
    return notochord.open(
        data, Settings(data_dir=data, index_in_background=False, database_url=url), clock=clock, embedder=None
    )


def _fill(space: notochord.Space) -> None:
    kept = space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    other = space.user.entities.resolve(email="zs@home.nl", name="Zhang S.", create=True)
    assert kept is not None and other is not None
    space.user.entities.merge(keep=kept.id, merge=other.id)  # an entity pointing at another one
    space.user.facts.put(subject="self", predicate="pref.food.like", value="stew")
    space.as_assistant.facts.put(subject="self", predicate="pref.food.like", value="soup")  # a quota row
    recipes = space.user.collections.create("recipes")
    space.user.collections.create("soups", parent=recipes.id)  # a collection inside another
    space.user.documents.upsert(collection=recipes.id, title="Beef stew", body="Simmer the beef two hours.")
    space.user.documents.upsert(collection="diary", title="北京烤鸭", body="烤鸭是北京的名菜。")


def test_a_space_moves_to_postgresql_whole_and_the_source_stays_as_it_was(
    tmp_path: Path, clock: FixedClock, database_url: str
) -> None:
    """K-STORE: facts, entities, collections, documents, chunks, changes and quota
    counters arrive with their ids; the full text ranks the same; the SQLite file is not changed."""
    data = tmp_path / "data"
    with _open(data, clock, None) as lite:
        _fill(lite.personal)
        before_counts = lite.personal.core.counts()
        before_hits = [(h.title, h.chunk) for h in lite.personal.search("烤鸭 beef")]
    source_file = data / "spaces" / "personal.db"
    digest = hashlib.sha256(source_file.read_bytes()).hexdigest()

    with _open(data, clock, None) as lite:
        postgres.create_database(database_url, "personal")
        target = postgres.create_postgresql_engine(database_url, "personal")
        try:
            migrate(target)
            copied = copy_space(lite.personal.core.store.engine, target)
            with pytest.raises(StorageError, match="already holds data"):
                copy_space(lite.personal.core.store.engine, target)
        finally:
            target.dispose()
    assert copied["facts"] >= 2 and copied["chunks"] >= 2 and copied["changes"] > 0
    assert hashlib.sha256(source_file.read_bytes()).hexdigest() == digest

    with _open(data, clock, database_url) as moved:
        space = moved.personal
        assert space.core.counts() == before_counts
        assert [(h.title, h.chunk) for h in space.search("烤鸭 beef")] == before_hits
        assert {f.value for f in space.user.facts.lookup("self", "pref.food")} == {"stew", "soup"}
        # new rows get ids past the copied ones
        outcome = space.user.documents.upsert(collection="diary", title="Rice", body="Rinse the rice.")
        assert [h.title for h in space.search("rice")] == ["Rice"]
        assert outcome.id > max(d.id for d in space.user.documents.list("diary") if d.title != "Rice")


def test_migrate_store_copies_an_organization_from_the_command_line(
    tmp_path: Path, clock: FixedClock, database_url: str
) -> None:
    """``notochord migrate-store --to URL --org ID`` copies that space and says what it copied."""
    data = tmp_path / "data"
    with _open(data, clock, None) as lite:
        lite.org("acme", create=True).user.facts.put(subject="self", predicate="pref.food.like", value="stew")
    result = CliRunner().invoke(
        app, ["migrate-store", "--to", database_url, "--org", "acme", "--data-dir", str(data), "--json"], env={}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["space"] == "org:acme" and report["rows"]["facts"] == 1
    with _open(data, clock, database_url) as moved:
        assert [f.value for f in moved.org("acme").user.facts.lookup("self", "pref.food")] == ["stew"]

    refused = CliRunner().invoke(app, ["migrate-store", "--to", "mysql://db/x", "--data-dir", str(data)], env={})
    assert refused.exit_code == 2 and "postgresql://" in refused.output


def test_vectors_move_into_pgvector_bit_for_bit_and_rank_as_before(
    tmp_path: Path, clock: FixedClock, database_url: str
) -> None:
    """With vectors: the copied vectors are pgvector values equal to the SQLite bytes,
    indexed by HNSW, found by the same searches in the same order, and ``check`` finds nothing wrong."""
    embedder = WordHashEmbedder()
    data = tmp_path / "data"

    def opened(url: str | None) -> notochord.Notochord:
        settings = Settings(data_dir=data, index_in_background=False, database_url=url)
        return notochord.open(data, settings, clock=clock, embedder=embedder)

    queries = ["simmer beef", "tomato soup garlic", "river boat", "rice"]
    with opened(None) as lite:
        for title, body in [
            ("Beef stew", "Simmer the beef two hours with tomato."),
            ("Tomato soup", "Roast tomatoes with garlic and blend."),
            ("River trip", "A boat trip on the river with stewed fish."),
            ("Rice", "Rinse the rice and steam it."),
        ]:
            lite.personal.user.documents.upsert(collection="diary", title=title, body=body)
        assert lite.personal.core.vectors.wait() == 4
        with lite.personal.core.store.engine.connect() as conn:
            before = dict(conn.execute(sa.select(chunk_vectors.c.chunk_id, chunk_vectors.c.vector)).all())
        hits = {q: [(h.title, h.chunk) for h in lite.personal.search(q)] for q in queries}
        postgres.create_database(database_url, "personal")
        target = postgres.create_postgresql_engine(database_url, "personal")
        try:
            migrate(target)
            copy_space(lite.personal.core.store.engine, target)
            with target.connect() as conn:
                after = dict(conn.execute(sa.select(chunk_vectors.c.chunk_id, chunk_vectors.c.vector)).all())
                dims = conn.execute(sa.text("SELECT DISTINCT vector_dims(vector) FROM chunk_vectors")).scalars().all()
                indexes = (
                    conn.execute(sa.text("SELECT indexname FROM pg_indexes WHERE tablename = 'chunk_vectors'"))
                    .scalars()
                    .all()
                )
        finally:
            target.dispose()
    assert after == before
    assert dims == [embedder.dim]
    assert f"chunk_vectors_hnsw_{embedder.dim}" in indexes
    with opened(database_url) as moved:
        assert moved.personal.core.vectors.pending() == 0
        assert {q: [(h.title, h.chunk) for h in moved.personal.search(q)] for q in queries} == hits
        assert check(moved.personal.core) == []
