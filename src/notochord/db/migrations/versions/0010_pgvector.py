"""Vectors in pgvector on PostgreSQL, and the lease table of the shared embedding queue.

Revision ID: 0010
Revises: 0009

PostgreSQL only (SQLite keeps its BLOBs and is not touched):

- ``chunk_vectors.vector`` becomes a pgvector ``vector`` of any dimension; every existing row is
  converted from its float32 little-endian bytes, exactly.
- ``length(vector)`` answers what ``length`` of the BLOB answers on SQLite (4 bytes a dimension),
  so the statements that measure vectors (``notochord check``, a knowledge base's deletion report)
  are the same on both backends.
- One HNSW index per dimension present (``vector_ip_ops`` over the expression cast to that
  dimension, partial on it): see :mod:`notochord.search.vector_store_pg`, which makes the index of a
  new dimension when its first vector is written.
- ``chunk_vector_claims`` holds the short leases of the embedding queue shared by every process on
  the database.

The SQL is a frozen copy of what :mod:`notochord.search.vector_store_pg` runs as of this revision.
"""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_BATCH = 1000
_MAX_INDEXED_DIM = 2000  # pgvector's HNSW limit for ``vector``


def _text(blob: bytes) -> str:
    values = np.frombuffer(bytes(blob), dtype="<f4").tolist()
    return "[" + ",".join(map("{:.9g}".format, values)) + "]"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("ALTER TABLE chunk_vectors ADD COLUMN embedding vector")
    rows = bind.execute(sa.text("SELECT chunk_id, model_id, vector FROM chunk_vectors ORDER BY chunk_id")).all()
    statement = sa.text("UPDATE chunk_vectors SET embedding = CAST(:v AS vector) WHERE chunk_id = :c AND model_id = :m")
    for start in range(0, len(rows), _BATCH):
        bind.execute(statement, [{"c": r[0], "m": r[1], "v": _text(r[2])} for r in rows[start : start + _BATCH]])
    op.execute("ALTER TABLE chunk_vectors DROP COLUMN vector")
    op.execute("ALTER TABLE chunk_vectors RENAME COLUMN embedding TO vector")
    op.execute("ALTER TABLE chunk_vectors ALTER COLUMN vector SET NOT NULL")
    op.execute(
        "CREATE OR REPLACE FUNCTION length(vector) RETURNS integer LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
        "AS 'SELECT 4 * vector_dims($1)'"
    )
    dims = bind.execute(sa.text("SELECT DISTINCT vector_dims(vector) FROM chunk_vectors")).scalars().all()
    for dim in sorted(int(d) for d in dims):
        if 0 < dim <= _MAX_INDEXED_DIM:
            op.execute(
                f"CREATE INDEX IF NOT EXISTS chunk_vectors_hnsw_{dim} ON chunk_vectors "
                f"USING hnsw ((CAST(vector AS vector({dim}))) vector_ip_ops) WHERE vector_dims(vector) = {dim}"
            )
    op.execute(
        "CREATE TABLE chunk_vector_claims ("
        "chunk_id INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE, "
        "model_id VARCHAR(200) NOT NULL, "
        "expires_at DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (chunk_id, model_id))"
    )
