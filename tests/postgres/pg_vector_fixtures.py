"""Spaces on the test server filled straight through the tables: many chunks with seeded vectors, fast."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from notochord.db import postgres
from notochord.db.engine import write_tx
from notochord.db.migrate import migrate
from notochord.db.schema import chunk_vectors, chunks, collections, documents
from notochord.search.vector_index import passage_hash
from notochord.search.vector_store_pg import ensure_index
from notochord.search.vectors import to_blob

MODEL = "test/seeded-random"
NOW = "2026-01-01T00:00:00.000Z"


def unit_vectors(count: int, dim: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    norms: npt.NDArray[np.float32] = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / norms).astype(np.float32)


def clustered_unit_vectors(count: int, dim: int, seed: int, clusters: int = 60) -> npt.NDArray[np.float32]:
    """Unit vectors around random centres, as embeddings have neighbourhoods (isotropic noise has none)."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1).standard_normal((clusters, dim))
    rows = (centres[rng.integers(0, clusters, count)] + 0.6 * rng.standard_normal((count, dim))).astype(np.float32)
    norms: npt.NDArray[np.float32] = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / norms).astype(np.float32)


def seeded_space(database_url: str, vectors: npt.NDArray[np.float32], collection_of: list[int]) -> sa.Engine:
    """A migrated space whose chunk ``i + 1`` (one per document) holds ``vectors[i]`` in collection
    ``collection_of[i]`` (collections 1, 2, … exist); the HNSW index is built after the load."""
    postgres.create_database(database_url, "personal")
    engine = postgres.create_postgresql_engine(database_url, "personal")
    migrate(engine)
    with write_tx(engine) as conn:
        conn.execute(
            sa.insert(collections),
            [{"id": c, "name": f"c{c}", "created_by": "user", "created_at": NOW} for c in sorted(set(collection_of))],
        )
        rows = range(len(vectors))
        conn.execute(
            sa.insert(documents),
            [
                {
                    "id": i + 1,
                    "collection_id": collection_of[i],
                    "title": "",
                    "meta_json": "{}",
                    "content_hash": "-",
                    "created_by": "user",
                    "writer": "user",
                    "created_at": NOW,
                    "updated_at": NOW,
                    "doc_date": NOW,
                }
                for i in rows
            ],
        )
        conn.execute(
            sa.insert(chunks),
            [
                {
                    "id": i + 1,
                    "document_id": i + 1,
                    "idx": 0,
                    "text": f"p{i}",
                    "start": 0,
                    "end": 1,
                    "text_hash": passage_hash("", f"p{i}"),
                }
                for i in rows
            ],
        )
        conn.execute(
            sa.insert(chunk_vectors),
            [
                {
                    "chunk_id": i + 1,
                    "model_id": MODEL,
                    "vector": to_blob(vectors[i]),
                    "text_hash": passage_hash("", f"p{i}"),
                }
                for i in rows
            ],
        )
        ensure_index(conn, vectors.shape[1])
    return engine


class WordHashEmbedder:
    """A deterministic embedder for tests: lowercase words hashed into ``dim`` buckets, unit length."""

    def __init__(self, dim: int = 64) -> None:
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"test/word-hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def multilingual(self) -> bool:
        return True

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        vector = np.full(self._dim, 1e-3, dtype=np.float32)
        for word in text.lower().split():
            vector[zlib.crc32(word.encode()) % self._dim] += 1.0
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self._dim), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._one(text)
