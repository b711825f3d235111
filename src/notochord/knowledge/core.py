"""The knowledge core of one space: its store and the services over it, wired once."""

from __future__ import annotations

import sqlalchemy as sa

from notochord.clock import Clock
from notochord.db.schema import changes, entities, facts
from notochord.knowledge.changes import ChangeLog
from notochord.knowledge.entities import Entities
from notochord.knowledge.facts import Facts
from notochord.knowledge.vocabulary import Vocabulary
from notochord.knowledge.writes import USER, Store

__all__ = ["KnowledgeCore"]


class KnowledgeCore:
    """Store, vocabulary, entities, facts and the change log of one space."""

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.store = Store(engine, clock)
        self.vocabulary = Vocabulary()
        self.entities = Entities(self.store)
        self.facts = Facts(self.store, self.vocabulary, self.entities)
        self.changes = ChangeLog(self.store)

    def initialise(self) -> None:
        """Seed what every space has: the core predicates and the user's own entity. Idempotent."""
        with self.store.write(actor=USER, run_id=None) as tx:
            self.vocabulary.seed_core(tx.conn, now=tx.now)
            self.entities.ensure_self(tx.conn, now=tx.now)

    def counts(self) -> dict[str, int]:
        with self.store.read() as conn:
            return {
                "facts": conn.execute(
                    sa.select(sa.func.count()).select_from(facts).where(facts.c.valid_to.is_(None))
                ).scalar_one(),
                "entities": conn.execute(
                    sa.select(sa.func.count())
                    .select_from(entities)
                    .where(
                        entities.c.kind != "self",
                        entities.c.deleted_at.is_(None),
                        entities.c.merged_into.is_(None),
                    )
                ).scalar_one(),
                "changes": conn.execute(sa.select(sa.func.count()).select_from(changes)).scalar_one(),
            }
