"""The vector leg on PostgreSQL: vectors in pgvector, searched by the server, and a shared embedding queue.

This module is the one place that tells the backends' vectors apart (:func:`is_postgresql`);
:mod:`~notochord.search.vector_index` asks it and hands over. SQLite keeps its BLOBs and the
in-memory matrix (:mod:`~notochord.search.vector_memory`); on PostgreSQL no process loads the
vectors, so a replica's memory stays small however large the space.

Rules:

- **Storage.** ``chunk_vectors.vector`` is a pgvector ``vector`` of *any* dimension (migration
  0010): one table serves every model, including the old and the new one while a model change
  re-embeds in the background. The code reads and writes it as float32 bytes, as on SQLite
  (:class:`~notochord.db.schema.VectorBytes` converts). Each dimension has its own HNSW index, an
  expression index on the column cast to ``vector(dim)``, partial on ``vector_dims(vector) = dim``
  (HNSW needs a fixed dimension; a ``vector(dim)`` column would fix one model per table). The index
  of a new dimension is made with its first vector (:func:`ensure_index`, under the space's write
  lock); up to :data:`MAX_INDEXED_DIM` dimensions, pgvector's HNSW limit: above it, search is exact.
  Vectors are unit length (every embedder normalises), so the index is on the inner product
  (``vector_ip_ops``) and a score is the cosine exactly as SQLite computes it (``-(a <#> b)``).
- **Search inside the query, filtered by the caller's candidates.** The caller passes the candidate
  chunk ids it computed (the hybrid search's shared set) and the SQL conditions that made them.

  * Up to :data:`EXACT_LIMIT` candidates the search is **exact**: the candidates' vectors are scored
    by ``chunk_id = ANY(ids)`` and sorted (an uncast ``<#>`` that the index cannot serve), ties by
    the smaller id — the same ranking as SQLite's exact matrix, and identical whatever the caller
    cannot see.
  * Above it the search is **approximate**: an HNSW index scan with the filter (the caller's
    conditions, joined to ``chunks`` and ``documents``) evaluated inside it, ``hnsw.iterative_scan =
    relaxed_order`` so that a selective filter keeps scanning until ``k`` rows pass, then re-sorted
    exactly. ``hnsw.ef_search`` is ``2k`` (at least 200); ``hnsw.max_scan_tuples`` bounds the scan
    at :data:`MAX_SCAN_TUPLES`. Only here can a ranking differ from exact, and depend on rows
    outside the filter (through the graph's shape).

    Measured recall@10 against exact (``bench``-style clustered unit vectors, dimension 384, 20,000
    vectors, m 16, ef_construction 64, 20 queries), at candidate shares 1.0 / 0.1 / 0.01 of the
    space: 1.000 / 1.000 / 0.990 with ``k = 100`` (the hybrid search's depth), 1.000 / 1.000 / 0.915
    with ``k = 10`` and ``ef_search`` 100. At a share of 0.01 the exact path is the one taken unless
    the space holds over a million vectors. On *isotropic* random vectors (no neighbourhoods at all,
    unlike embeddings) HNSW recall is far lower; the test asserts ≥ 0.95 on clustered vectors
    (``tests/postgres/test_vector_store_pg.py``).

    The hybrid search always passes its conditions. A caller passing ids alone gets them as an
    array filter inside the scan, which costs far more at scale (0.7 s p50 at 100,000 candidates on
    ``bench/retrieval_synthetic_pg.py``, where the hybrid search took 79 ms).
- **A shared queue.** Any number of processes (replicas of the service, the CLI) embed the same
  database's pending chunks without embedding one twice. :func:`claim` takes pending chunks with
  ``FOR UPDATE OF chunks SKIP LOCKED`` (a chunk another claimer is taking right now is skipped,
  not waited for) and records a lease in ``chunk_vector_claims`` (``expires_at``, in the server's
  clock), in one statement of its own transaction; ``INSERT … ON CONFLICT DO UPDATE … WHERE
  expired`` is the arbiter, so of two claimers only one gets a chunk even where their snapshots
  overlap. The inference runs with no transaction open; the write transaction that stores the
  vectors (idempotently, replacing any vector of the same chunk and model) also drops the leases.
  A crashed worker's lease lapses after :data:`LEASE_SECONDS`, and its chunks are taken again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from notochord.db.engine import storage_errors
from notochord.db.schema import PgVector, chunk_vectors, chunks, documents, vector_text

__all__ = [
    "EXACT_LIMIT",
    "LEASE_SECONDS",
    "MAX_INDEXED_DIM",
    "claim",
    "ensure_index",
    "ensure_indexes",
    "is_postgresql",
    "release",
    "release_now",
    "search",
]

EXACT_LIMIT = 10_000
"""Candidates up to which the vector leg is exact on PostgreSQL (above: the HNSW index).

Measured on this project's machine at load 10 (dimension 384): an exact search costs 8-20 ms over
200 candidates, 70-120 ms over 2,000 and 340-480 ms over 20,000 (every candidate's vector is read
and scored); the filtered index scan 60-130 ms whatever the candidates' number."""

LEASE_SECONDS = 120.0
"""How long a claim on pending chunks holds: longer than any batch's inference, short enough that a
crashed worker's chunks wait only briefly."""

MAX_INDEXED_DIM = 2000
MAX_SCAN_TUPLES = 200_000
_CLAIMS = "chunk_vector_claims"


def is_postgresql(engine: sa.Engine) -> bool:
    """Whether ``engine``'s vectors live in pgvector (otherwise in SQLite BLOBs and memory)."""
    return engine.dialect.name == "postgresql"


def _index_name(dim: int) -> str:
    return f"chunk_vectors_hnsw_{int(dim)}"


def ensure_index(conn: sa.Connection, dim: int) -> None:
    """Make the HNSW index of vectors of ``dim`` dimensions unless it exists (in a write transaction)."""
    dim = int(dim)
    if not 0 < dim <= MAX_INDEXED_DIM:
        return
    conn.execute(
        sa.text(
            f"CREATE INDEX IF NOT EXISTS {_index_name(dim)} ON chunk_vectors "
            f"USING hnsw ((CAST(vector AS vector({dim}))) vector_ip_ops) WHERE vector_dims(vector) = {dim}"
        )
    )


def ensure_indexes(conn: sa.Connection) -> None:
    """Make the HNSW index of every dimension the stored vectors have (after a bulk copy)."""
    for dim in conn.execute(sa.text("SELECT DISTINCT vector_dims(vector) FROM chunk_vectors")).scalars().all():
        ensure_index(conn, int(dim))


_CLAIM = sa.text(
    f"""
    WITH todo AS (
        SELECT c.id FROM chunks AS c JOIN documents AS d ON d.id = c.document_id
        WHERE NOT EXISTS (
                SELECT 1 FROM chunk_vectors AS v
                WHERE v.chunk_id = c.id AND v.model_id = :model AND v.text_hash = c.text_hash)
            AND NOT EXISTS (
                SELECT 1 FROM {_CLAIMS} AS k
                WHERE k.chunk_id = c.id AND k.model_id = :model
                    AND k.expires_at > extract(epoch FROM clock_timestamp()))
        ORDER BY c.id
        LIMIT :limit
        FOR UPDATE OF c SKIP LOCKED
    )
    INSERT INTO {_CLAIMS} (chunk_id, model_id, expires_at)
    SELECT id, :model, extract(epoch FROM clock_timestamp()) + :lease FROM todo
    ON CONFLICT (chunk_id, model_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
        WHERE {_CLAIMS}.expires_at <= extract(epoch FROM clock_timestamp())
    RETURNING chunk_id
    """
)


def claim(engine: sa.Engine, model_id: str, limit: int, *, lease: float = LEASE_SECONDS) -> list[Any]:
    """Take up to ``limit`` pending chunks for this worker: ``(id, text, text_hash, title)`` rows by id.

    A chunk another worker holds an unexpired lease on is never returned; the lease is committed
    before this returns, so the inference that follows holds no lock.
    """
    # translated as every read and write is: a lost server is out of reach, not a failing store
    with storage_errors("taking pending passages from the embedding queue"):
        # one statement decides; READ COMMITTED lets ON CONFLICT see a lease committed meanwhile
        with engine.connect().execution_options(isolation_level="READ COMMITTED") as conn, conn.begin():
            ids = sorted(
                int(i)
                for i in conn.execute(_CLAIM, {"model": model_id, "limit": int(limit), "lease": float(lease)}).scalars()
            )
        if not ids:
            return []
        with engine.connect() as conn, conn.begin():
            return list(
                conn.execute(
                    sa.text(
                        "SELECT c.id, c.text, c.text_hash, d.title FROM chunks AS c "
                        "JOIN documents AS d ON d.id = c.document_id WHERE c.id = ANY(:ids) ORDER BY c.id"
                    ),
                    {"ids": ids},
                ).all()
            )


def release(conn: sa.Connection, model_id: str, chunk_ids: Sequence[int]) -> None:
    """Drop this worker's leases on ``chunk_ids``, in the transaction that stores their vectors."""
    conn.execute(
        sa.text(f"DELETE FROM {_CLAIMS} WHERE model_id = :model AND chunk_id = ANY(:ids)"),
        {"model": model_id, "ids": [int(i) for i in chunk_ids]},
    )


def release_now(engine: sa.Engine, model_id: str, chunk_ids: Sequence[int]) -> None:
    """Give ``chunk_ids`` back to the queue at once (the inference failed); best effort."""
    try:
        with engine.connect() as conn, conn.begin():
            release(conn, model_id, chunk_ids)
    except SQLAlchemyError:
        pass  # the leases lapse by themselves


def search(
    conn: sa.Connection,
    query: npt.NDArray[np.float32],
    *,
    model_id: str,
    k: int,
    allowed_ids: npt.NDArray[np.int64],
    where: Sequence[sa.ColumnElement[bool]] | None = None,
    exact_limit: int = EXACT_LIMIT,
) -> list[tuple[int, float]]:
    """Up to ``k`` ``(chunk id, cosine)`` among the candidates, best first (see the module rules).

    ``allowed_ids`` are the candidates; ``where`` the conditions on ``chunks`` joined with
    ``documents`` that select exactly them (without it the ids themselves filter the index scan).
    """
    if k <= 0 or allowed_ids.size == 0:
        return []
    dim = int(query.size)
    text = vector_text(query)
    with storage_errors("searching the vectors"):
        if allowed_ids.size <= exact_limit or dim > MAX_INDEXED_DIM:
            rows = conn.execute(
                sa.text(
                    "SELECT v.chunk_id, -(v.vector <#> CAST(:q AS vector)) AS score "
                    "FROM chunk_vectors AS v JOIN chunks AS c ON c.id = v.chunk_id "
                    "WHERE v.chunk_id = ANY(:ids) AND v.model_id = :model AND v.text_hash = c.text_hash "
                    "AND vector_dims(v.vector) = :dim "
                    "ORDER BY score DESC, v.chunk_id LIMIT :k"
                ),
                {"q": text, "ids": allowed_ids.tolist(), "model": model_id, "dim": dim, "k": int(k)},
            ).all()
            return [(int(r[0]), float(r[1])) for r in rows]
        approximate_settings(conn, k)
        query_rows = conn.execute(
            approximate_query(text, dim, model_id=model_id, k=k, allowed_ids=allowed_ids, where=where)
        ).all()
        return [(int(r[0]), -float(r[1])) for r in query_rows]


def approximate_settings(conn: sa.Connection, k: int) -> None:
    """The transaction's settings of the approximate path (see the module rules)."""
    conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {min(1000, max(200, 2 * int(k)))}")
    conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
    conn.exec_driver_sql(f"SET LOCAL hnsw.max_scan_tuples = {MAX_SCAN_TUPLES}")
    # the planner's row estimates cannot see how many candidates the filter keeps, and a plan that
    # sorts every candidate looks cheaper to it than the index whenever it underestimates them:
    # without a sort to choose, the ordered index scan is the plan
    conn.exec_driver_sql("SET LOCAL enable_sort = off")


def approximate_query(
    text: str,
    dim: int,
    *,
    model_id: str,
    k: int,
    allowed_ids: npt.NDArray[np.int64],
    where: Sequence[sa.ColumnElement[bool]] | None,
) -> sa.Select[Any]:
    """The HNSW index scan with the caller's filter inside it, re-sorted exactly."""
    typed = sa.cast(chunk_vectors.c.vector, PgVector(dim))
    # the expression and the constant dimension are those of the partial index, so the planner uses it
    distance = typed.op("<#>", return_type=sa.Float())(sa.cast(sa.literal(text), PgVector(dim)))
    conditions: list[sa.ColumnElement[bool]] = [
        sa.func.vector_dims(chunk_vectors.c.vector) == sa.literal_column(str(int(dim))),
        chunk_vectors.c.model_id == model_id,
        chunk_vectors.c.text_hash == chunks.c.text_hash,
    ]
    if where is not None:
        conditions.extend(where)
    else:
        conditions.append(chunk_vectors.c.chunk_id == sa.func.any(sa.literal(allowed_ids.tolist(), _INT_ARRAY)))
    nearest = (
        sa.select(chunk_vectors.c.chunk_id, distance.label("distance"))
        .select_from(
            chunk_vectors.join(chunks, chunks.c.id == chunk_vectors.c.chunk_id).join(
                documents, documents.c.id == chunks.c.document_id
            )
        )
        .where(*conditions)
        .order_by(distance)
        .limit(int(k))
        .subquery()
    )
    # relaxed order: the scan's rows are nearly sorted; the outer sort (of k rows) makes it exact
    return sa.select(nearest.c.chunk_id, nearest.c.distance).order_by(nearest.c.distance, nearest.c.chunk_id)


_INT_ARRAY = sa.ARRAY(sa.BigInteger)
