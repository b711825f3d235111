"""Vectors in pgvector, searched by the server inside the query, filtered by the caller's candidates
. Every test runs against a real PostgreSQL server with pgvector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa
from pg_vector_fixtures import MODEL, WordHashEmbedder, clustered_unit_vectors, seeded_space, unit_vectors

import notochord
from notochord.clock import FixedClock
from notochord.db.engine import read_tx
from notochord.db.schema import chunks, documents, vector_text
from notochord.search import vector_store_pg
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql

COUNT = 12_000
DIM = 96
# collection 1 holds 1% of the chunks, collection 2 9%, collection 3 the other 90%
SHARES = {1.0: {1, 2, 3}, 0.1: {1, 2}, 0.01: {1}}


def _collection(i: int) -> int:
    return 1 if i % 100 == 0 else 2 if i % 10 == 0 else 3


@pytest.fixture(scope="module")
def seeded(postgres_server_url: str) -> Iterator[tuple[sa.Engine, npt.NDArray[np.float32]]]:
    from postgres_server import drop_databases, unique_database_url

    url = unique_database_url(postgres_server_url)
    vectors = clustered_unit_vectors(COUNT, DIM, seed=17)
    engine = seeded_space(url, vectors, [_collection(i) for i in range(COUNT)])
    yield engine, vectors
    engine.dispose()
    drop_databases(postgres_server_url, url)


def _where(collection_ids: set[int]) -> list[sa.ColumnElement[bool]]:
    return [documents.c.deleted_at.is_(None), documents.c.collection_id.in_(sorted(collection_ids))]


def _allowed(collection_ids: set[int]) -> npt.NDArray[np.int64]:
    return np.asarray([i + 1 for i in range(COUNT) if _collection(i) in collection_ids], dtype=np.int64)


def _exact(
    vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32], allowed: npt.NDArray[np.int64], k: int
) -> list[int]:
    scores = vectors[allowed - 1] @ query
    order = np.lexsort((allowed, -scores))[:k]
    return [int(i) for i in allowed[order]]


def _recall(engine: sa.Engine, vectors: npt.NDArray[np.float32], share: float, *, k: int, queries: int) -> float:
    allowed = _allowed(SHARES[share])
    found = 0
    for query in clustered_unit_vectors(queries, DIM, seed=int(share * 1000) + 1):
        with read_tx(engine) as conn:
            hits = vector_store_pg.search(
                conn, query, model_id=MODEL, k=k, allowed_ids=allowed, where=_where(SHARES[share]), exact_limit=0
            )
        assert {i for i, _ in hits} <= set(allowed.tolist())
        found += len({i for i, _ in hits[:10]} & set(_exact(vectors, query, allowed, 10)))
    return found / (10 * queries)


@pytest.mark.parametrize("share", sorted(SHARES))
def test_the_filtered_index_scan_finds_the_exact_top_ten(
    seeded: tuple[sa.Engine, npt.NDArray[np.float32]], share: float
) -> None:
    """K-SRCH: the HNSW scan with the caller's collections filtered inside it
    (iterative scan) returns only candidates, and at least 95% of the exact top ten, whether the
    candidates are every chunk, a tenth or a hundredth of them."""
    engine, vectors = seeded
    recall = _recall(engine, vectors, share, k=100, queries=40)
    assert recall >= 0.95, f"recall@10 {recall:.3f} at candidate share {share}"


def test_the_index_serves_the_approximate_search(seeded: tuple[sa.Engine, npt.NDArray[np.float32]]) -> None:
    """Above the exact limit the search is the HNSW index scan in the server, with
    the collections filtered inside it, not a scan and sort of every candidate."""
    engine, vectors = seeded
    with read_tx(engine) as conn:
        vector_store_pg.approximate_settings(conn, 10)
        query = vector_store_pg.approximate_query(
            vector_text(vectors[0]), DIM, model_id=MODEL, k=10, allowed_ids=_allowed({1, 2}), where=_where({1, 2})
        )
        compiled = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        plan = conn.exec_driver_sql("EXPLAIN " + compiled).scalars().all()
    assert any(f"Index Scan using chunk_vectors_hnsw_{DIM}" in line for line in plan), plan


def test_small_candidate_sets_are_ranked_exactly_like_the_in_memory_matrix(
    seeded: tuple[sa.Engine, npt.NDArray[np.float32]],
) -> None:
    """Up to the exact limit the ranking is exact — the same ids in the same order,
    with the same cosines, as a float32 matrix product over the candidates (what SQLite ranks by)."""
    engine, vectors = seeded
    allowed = _allowed({1, 2})
    for query in unit_vectors(5, DIM, seed=99):
        with read_tx(engine) as conn:
            hits = vector_store_pg.search(conn, query, model_id=MODEL, k=50, allowed_ids=allowed, where=_where({1, 2}))
        assert [i for i, _ in hits] == _exact(vectors, query, allowed, 50)
        expected = vectors[np.asarray([i for i, _ in hits]) - 1] @ query
        assert np.allclose([s for _, s in hits], expected, atol=1e-5)


def test_a_stale_vector_never_ranks(seeded: tuple[sa.Engine, npt.NDArray[np.float32]]) -> None:
    """A vector computed from text its chunk no longer holds is not found, on
    either path."""
    engine, vectors = seeded
    with engine.begin() as conn:
        conn.execute(sa.update(chunks).where(chunks.c.id == 1).values(text_hash="edited"))
    try:
        for exact_limit in (0, COUNT):
            with read_tx(engine) as conn:
                hits = vector_store_pg.search(
                    conn,
                    vectors[0],
                    model_id=MODEL,
                    k=10,
                    allowed_ids=_allowed({1}),
                    where=_where({1}),
                    exact_limit=exact_limit,
                )
            assert hits and 1 not in {i for i, _ in hits}
    finally:
        with engine.begin() as conn:
            conn.execute(sa.update(chunks).where(chunks.c.id == 1).values(text_hash=_hash(0)))


def _hash(i: int) -> str:
    from notochord.search.vector_index import passage_hash

    return passage_hash("", f"p{i}")


def test_vectors_stored_before_pgvector_migrate_exactly(database_url: str) -> None:
    """A database whose vectors are still bytes (revision 0009) is migrated to a
    pgvector column holding the same float32 values, indexed by HNSW."""
    from alembic import command
    from alembic.config import Config

    from notochord.db import postgres
    from notochord.db.engine import write_tx
    from notochord.db.migrate import _SCRIPTS, migrate
    from notochord.db.schema import chunk_vectors

    postgres.create_database(database_url, "personal")
    engine = postgres.create_postgresql_engine(database_url, "personal")
    vectors = unit_vectors(3, 48, seed=3)
    try:
        with write_tx(engine) as conn:
            config = Config()
            config.set_main_option("script_location", str(_SCRIPTS))
            config.attributes["connection"] = conn
            command.upgrade(config, "0009")
            conn.execute(
                sa.text("INSERT INTO collections (id, name, created_by, created_at) VALUES (1, 'c', 'u', 'now')")
            )
            for i in range(3):
                conn.execute(
                    sa.text(
                        "INSERT INTO documents (id, collection_id, title, meta_json, content_hash, created_by, writer, "
                        "created_at, updated_at, doc_date) VALUES (:i, 1, '', '{}', '-', 'u', 'u', 'now', 'now', 'now')"
                    ),
                    {"i": i + 1},
                )
                conn.execute(
                    sa.text(
                        'INSERT INTO chunks (id, document_id, idx, text, start, "end", text_hash) '
                        "VALUES (:i, :i, 0, 'p', 0, 1, 'h')"
                    ),
                    {"i": i + 1},
                )
                conn.execute(
                    sa.text(
                        "INSERT INTO chunk_vectors (chunk_id, model_id, vector, text_hash) VALUES (:i, :m, :v, 'h')"
                    ),
                    {"i": i + 1, "m": MODEL, "v": vectors[i].astype("<f4").tobytes()},
                )
        migrate(engine)
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.select(chunk_vectors.c.chunk_id, chunk_vectors.c.vector)).all())
            kind = conn.execute(
                sa.text(
                    "SELECT udt_name FROM information_schema.columns "
                    "WHERE table_name = 'chunk_vectors' AND column_name = 'vector'"
                )
            ).scalar_one()
            indexes = (
                conn.execute(sa.text("SELECT indexname FROM pg_indexes WHERE tablename = 'chunk_vectors'"))
                .scalars()
                .all()
            )
            sizes = conn.execute(sa.text("SELECT DISTINCT length(vector) FROM chunk_vectors")).scalars().all()
    finally:
        engine.dispose()
    assert kind == "vector"
    assert stored == {i + 1: vectors[i].astype("<f4").tobytes() for i in range(3)}
    assert "chunk_vectors_hnsw_48" in indexes
    assert sizes == [4 * 48]  # what the length of the bytes is on SQLite


def test_a_replica_searches_vectors_without_loading_them(tmp_path: Path, clock: FixedClock, database_url: str) -> None:
    """On PostgreSQL the vector leg ranks through the server — a passage sharing no
    word with the query is found by meaning — and the process holds no vectors in memory."""
    embedder = WordHashEmbedder()
    settings = Settings(data_dir=tmp_path, index_in_background=False, database_url=database_url)
    with notochord.open(tmp_path, settings, clock=clock, embedder=embedder) as nc:
        space = nc.personal
        space.user.documents.upsert(collection="diary", title="Stew", body="simmer beef tomato")
        space.user.documents.upsert(collection="diary", title="Garden", body="water beans fence")
        assert space.core.vectors.wait() == 2
        hits = space.search("Stew")
        assert [h.title for h in hits][:1] == ["Stew"]
        assert all(h.similarity is not None for h in hits)
        assert space.core.vectors.memory is None
