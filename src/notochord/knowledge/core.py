"""The knowledge core of one space: its store and the services over it, wired once."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from notochord.clock import Clock
from notochord.db.engine import is_read_only
from notochord.db.schema import changes, collections, documents, entities, facts
from notochord.knowledge.changes import ChangeLog
from notochord.knowledge.chunkless import all_chunked, index_chunkless
from notochord.knowledge.collections import Collections
from notochord.knowledge.documents import Documents
from notochord.knowledge.entities import Entities
from notochord.knowledge.facts import Facts
from notochord.knowledge.vocabulary import Vocabulary
from notochord.knowledge.writes import USER, Store
from notochord.search.embeddings import Embedder
from notochord.search.inverted_index import save_text_indexes
from notochord.search.vector_held import SAVED_MATRIX_MIN
from notochord.search.vector_index import VectorIndex
from notochord.search.vector_memory import DEFAULT_HNSW_THRESHOLD

__all__ = ["KnowledgeCore"]


class KnowledgeCore:
    """Store, vocabulary, entities, facts, collections, documents, the vector index and the change log."""

    def __init__(
        self,
        engine: sa.Engine,
        clock: Clock,
        *,
        embedder: Embedder | None,
        background: bool,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
        saved_matrix_min: int = SAVED_MATRIX_MIN,
    ) -> None:
        self.store = Store(engine, clock)
        self.vocabulary = Vocabulary()
        self.entities = Entities(self.store)
        self.facts = Facts(self.store, self.vocabulary, self.entities)
        self.collections = Collections(self.store)
        self.vectors = VectorIndex(
            engine, embedder, background=background, hnsw_threshold=hnsw_threshold, saved_matrix_min=saved_matrix_min
        )
        self.documents = Documents(self.store, self.collections, on_indexed=self.vectors.notify)
        self.changes = ChangeLog(self.store)

    def initialise(self) -> None:
        """Seed what every space has: the core predicates, the user's own entity, diary and keep;
        and, once per store, index the documents an earlier version left without a chunk
        (:mod:`~notochord.knowledge.chunkless`)."""
        with self.store.write(actor=USER, run_id=None) as tx:
            self.vocabulary.seed_core(tx.conn, now=tx.now)
            self.entities.ensure_self(tx.conn, now=tx.now)
            self.collections.seed_builtins(tx.conn, now=tx.now)
            # read here, in a transaction every open runs anyway: an upgraded store costs one row
            chunked = is_read_only(self.store.engine) or all_chunked(tx.conn)
        if not chunked:
            # a transaction of its own: a database that refuses writes must still open
            index_chunkless(self.store)
        if self.vectors.enabled:
            self.vectors.notify()

    def close(self) -> None:
        save_text_indexes(self.store.engine)
        self.vectors.close()

    def counts(self) -> dict[str, int]:
        def count(query: sa.Select[Any]) -> int:
            return int(conn.execute(query).scalar_one())

        with self.store.read() as conn:
            return {
                "facts": count(sa.select(sa.func.count()).select_from(facts).where(facts.c.valid_to.is_(None))),
                "entities": count(
                    sa.select(sa.func.count())
                    .select_from(entities)
                    .where(
                        entities.c.kind != "self",
                        entities.c.deleted_at.is_(None),
                        entities.c.merged_into.is_(None),
                    )
                ),
                "documents": count(
                    sa.select(sa.func.count()).select_from(documents).where(documents.c.deleted_at.is_(None))
                ),
                "collections": count(
                    sa.select(sa.func.count()).select_from(collections).where(collections.c.deleted_at.is_(None))
                ),
                "changes": count(sa.select(sa.func.count()).select_from(changes)),
            }
