"""Upgrading a store written before chunk hashes: hashes filled, ids never reused, nothing else lost."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

import notochord
from notochord.clock import FixedClock
from notochord.db import migrate as migrate_module
from notochord.db.engine import create_sqlite_engine
from notochord.db.migrate import migrate
from notochord.knowledge.check import check
from notochord.search.vector_index import passage_hash
from notochord.settings import Settings

TS = "2026-09-29T08:00:00.000Z"


def _store_at_0006(path: Path) -> sa.Engine:
    engine = create_sqlite_engine(path, busy_timeout_ms=5000)
    config = Config()
    config.set_main_option("script_location", str(migrate_module._SCRIPTS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0006")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO entities (id, kind, display_name, created_by, created_at) "
                "VALUES (7, 'person', 'Ada', 'user', :ts)"
            ),
            {"ts": TS},
        )
        conn.execute(
            sa.text("INSERT INTO collections (id, name, created_by, created_at) VALUES (1, 'keep', 'user', :ts)"),
            {"ts": TS},
        )
        conn.execute(
            sa.text(
                "INSERT INTO documents (id, collection_id, title, body, meta_json, content_hash, created_by, writer, "
                "created_at, updated_at, doc_date) VALUES (1, 1, 'Notes', 'Ada bakes bread.', '{}', 'x', 'user', "
                "'user', :ts, :ts, :ts)"
            ),
            {"ts": TS},
        )
        for chunk_id, text in ((1, "Ada bakes"), (2, "bread.")):
            conn.execute(
                sa.text(
                    'INSERT INTO chunks (id, document_id, idx, text, start, "end") VALUES (:id, 1, :idx, :t, 0, 1)'
                ),
                {"id": chunk_id, "idx": chunk_id - 1, "t": text},
            )
            conn.execute(
                sa.text("INSERT INTO chunk_vectors (chunk_id, model_id, vector) VALUES (:id, 'm', x'00000000')"),
                {"id": chunk_id},
            )
        conn.execute(sa.text("INSERT INTO mentions (chunk_id, entity_id) VALUES (1, 7)"))
    return engine


def test_upgrading_fills_chunk_hashes_keeps_mentions_and_drops_unprovable_vectors(tmp_path: Path) -> None:
    """Hashes for existing chunks; old vectors cannot be tied to their text, so they re-embed."""
    engine = _store_at_0006(tmp_path / "s.db")
    migrate(engine)
    with engine.connect() as conn:
        hashes: dict[int, str] = dict(conn.execute(sa.text("SELECT id, text_hash FROM chunks ORDER BY id")).all())
        mentions = conn.execute(sa.text("SELECT chunk_id, entity_id FROM mentions")).all()
        vectors = conn.execute(sa.text("SELECT count(*) FROM chunk_vectors")).scalar_one()
    assert hashes == {1: passage_hash("Notes", "Ada bakes"), 2: passage_hash("Notes", "bread.")}
    assert [tuple(m) for m in mentions] == [(1, 7)]
    assert vectors == 0

    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM chunks WHERE id = 2"))
        conn.execute(
            sa.text(
                "INSERT INTO chunks (document_id, idx, text, start, \"end\", text_hash) VALUES (1, 1, 'rye', 0, 1, 'h')"
            )
        )
        newest = conn.execute(sa.text("SELECT max(id) FROM chunks")).scalar_one()
    engine.dispose()
    assert newest == 3, "the id of a deleted chunk is not given out again"


def test_a_fresh_space_checks_clean(tmp_path: Path, clock: FixedClock) -> None:
    """The checker finds nothing wrong in a space written only through the product."""
    settings = Settings(data_dir=tmp_path / "d", index_in_background=False)
    with notochord.open(tmp_path / "d", settings, clock=clock, embedder=None) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="keep", key="a", title="Stew", body="# Stew\n\nSimmer two hours.")
        space.user.documents.upsert(collection="keep", key="a", title="Stew", body="# Stew\n\nSimmer three hours.")
        space.user.facts.put(predicate="location.home.city", value="Delft")
        assert check(space.core) == []
