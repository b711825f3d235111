"""The rows a permission decision looks at: what a change's target is, and where it sits.

The access layer decides; these functions only read. Each takes the caller's connection, so a
decision made inside a write transaction sees exactly what that transaction will change.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from notochord.db.schema import changes, documents, entities, facts, identifiers

__all__ = ["change_row", "document_collection", "entity_kind", "fact_slot", "identifier_entity"]


def fact_slot(conn: sa.Connection, fact_id: int) -> tuple[str, str] | None:
    """The subject kind and predicate of a fact, or ``None`` when there is no such fact."""
    row = conn.execute(
        sa.select(facts.c.predicate, entities.c.kind)
        .join(entities, entities.c.id == facts.c.subject_id)
        .where(facts.c.id == fact_id)
    ).first()
    return None if row is None else (str(row.kind), str(row.predicate))


def entity_kind(conn: sa.Connection, entity_id: int) -> str:
    return str(conn.execute(sa.select(entities.c.kind).where(entities.c.id == entity_id)).scalar_one())


def identifier_entity(conn: sa.Connection, identifier_id: int) -> int:
    return int(conn.execute(sa.select(identifiers.c.entity_id).where(identifiers.c.id == identifier_id)).scalar_one())


def document_collection(conn: sa.Connection, document_id: int) -> int:
    return int(conn.execute(sa.select(documents.c.collection_id).where(documents.c.id == document_id)).scalar_one())


def change_row(conn: sa.Connection, change_id: int) -> sa.Row[Any] | None:
    """The change with this id (its ``actor``, ``target_type`` and ``target_id``), or ``None``."""
    return conn.execute(sa.select(changes).where(changes.c.id == change_id)).first()
