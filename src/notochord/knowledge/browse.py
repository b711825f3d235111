"""Browsing the knowledge a page at a time: the read side of the user's Knowledge pages.

Rules:

- Every function answers one list with a fixed number of queries, whatever the number of rows
  (no query per row): counts are one ``GROUP BY``, and what an entity's merge closure holds
  (identifiers, facts) is one recursive query over the whole page.
- Pages are ``offset``/``limit`` slices with the total beside them, so a pager can say how many
  pages there are; ``limit`` is capped at :data:`MAX_PAGE`.
- Only live objects are listed: deleted documents and entities, and entities merged into another,
  are left out, except by :func:`deleted_documents`, which lists exactly the deleted documents an
  undo can bring back (the applied change that deleted them).
- Names filter case-insensitively by substring, on the display name or any live identifier, and
  entities are listed by name: both compare the folded texts the write path stores beside the
  names (:func:`~notochord.knowledge.identifiers.folded`: Unicode case folding, accents composed),
  byte by byte, so SQLite and PostgreSQL find the same entities in the same order, whatever the
  server's locale, and a gem's ``entities.list`` agrees with them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import sqlalchemy as sa

from notochord.db.schema import change_objects, changes, collections, documents, entities, facts, identifiers
from notochord.knowledge.arguments import text_or_none, whole_number
from notochord.knowledge.entities import listed_identifiers
from notochord.knowledge.identifiers import check_kind, folded
from notochord.knowledge.quotas import check_length, refuse_unstorable_filter
from notochord.knowledge.records import Identifier

__all__ = [
    "MAX_PAGE",
    "DeletedDocument",
    "DocumentSummary",
    "EntitySummary",
    "Page",
    "RelatedFact",
    "deleted_documents",
    "deletion_of",
    "display_names",
    "document_counts",
    "document_page",
    "entity_kinds",
    "entity_page",
    "facts_about",
]

MAX_PAGE: Final = 200
_DELETE_OPS: Final = ("documents.delete", "uninstall.delete")


@dataclass(frozen=True)
class DocumentSummary:
    """A document as a list shows it: no body, no passages."""

    id: int
    collection_id: int
    key: str | None
    title: str
    created_by: str
    writer: str
    created_at: str
    updated_at: str
    doc_date: str


@dataclass(frozen=True)
class DeletedDocument:
    document: DocumentSummary
    change_id: int
    """The applied change that deleted it: undoing it restores the document."""
    deleted_at: str


@dataclass(frozen=True)
class EntitySummary:
    id: int
    kind: str
    display_name: str
    identifiers: tuple[Identifier, ...]
    created_by: str
    created_at: str


@dataclass(frozen=True)
class RelatedFact:
    """A current fact about an entity (through its merge closure), said by someone other than a guess."""

    id: int
    entity_id: int
    """The live entity of the page the fact belongs to (the one others were merged into)."""
    predicate: str
    value: Any
    object_id: int | None
    writer: str
    recorded_at: str


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    offset: int
    limit: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.items) < self.total


def _check_slice(offset: int, limit: int) -> None:
    whole_number("offset", offset)
    whole_number("limit", limit, minimum=1, maximum=MAX_PAGE)


def _like(text: str) -> str:
    escaped = folded(text).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _summary(row: Any) -> DocumentSummary:
    return DocumentSummary(
        id=row.id,
        collection_id=row.collection_id,
        key=row.key,
        title=row.title,
        created_by=row.created_by,
        writer=row.writer,
        created_at=row.created_at,
        updated_at=row.updated_at,
        doc_date=row.doc_date,
    )


_SUMMARY_COLUMNS: Final = (
    documents.c.id,
    documents.c.collection_id,
    documents.c.key,
    documents.c.title,
    documents.c.created_by,
    documents.c.writer,
    documents.c.created_at,
    documents.c.updated_at,
    documents.c.doc_date,
)


def _deleting_change() -> tuple[sa.Join, sa.ColumnElement[bool]]:
    """Of ``documents``: the join to the applied changes that deleted each one, reached through
    the index of the objects each change touched rather than a scan of the change log."""
    touched = sa.join(change_objects, changes, changes.c.id == change_objects.c.change_id)
    return touched, sa.and_(
        change_objects.c.object_type == "document",
        change_objects.c.object_id == documents.c.id,
        changes.c.target_type == "document",
        changes.c.target_id == documents.c.id,
        changes.c.op.in_(_DELETE_OPS),
        changes.c.status == "applied",
    )


def document_counts(conn: sa.Connection) -> dict[int, int]:
    """Live documents placed directly in each live collection (absent: none)."""
    rows = conn.execute(
        sa.select(documents.c.collection_id, sa.func.count())
        .join(collections, collections.c.id == documents.c.collection_id)
        .where(documents.c.deleted_at.is_(None), collections.c.deleted_at.is_(None))
        .group_by(documents.c.collection_id)
    ).all()
    return {int(c): int(n) for c, n in rows}


def document_page(conn: sa.Connection, collection_id: int, *, offset: int, limit: int) -> Page[DocumentSummary]:
    """The live documents placed directly in a collection, newest first by document date (OD-K42)."""
    _check_slice(offset, limit)
    where = sa.and_(documents.c.collection_id == collection_id, documents.c.deleted_at.is_(None))
    total = conn.execute(sa.select(sa.func.count()).select_from(documents).where(where)).scalar_one()
    rows = conn.execute(
        sa.select(*_SUMMARY_COLUMNS)
        .where(where)
        .order_by(documents.c.doc_date.desc(), documents.c.id.desc())
        .offset(offset)
        .limit(limit)
    ).all()
    return Page([_summary(r) for r in rows], int(total), offset, limit)


def deleted_documents(conn: sa.Connection, collection_id: int, *, limit: int) -> list[DeletedDocument]:
    """Deleted documents of a collection that an undo brings back, most recently deleted first."""
    _check_slice(0, limit)
    touched, deleting = _deleting_change()
    # per deleted document, its latest applied deletion, looked up by the touched-objects index
    deletion = sa.select(sa.func.max(changes.c.id)).select_from(touched).where(deleting).scalar_subquery()
    found = (
        sa.select(*_SUMMARY_COLUMNS, deletion.label("change_id"), documents.c.deleted_at)
        .where(documents.c.collection_id == collection_id, documents.c.deleted_at.is_not(None))
        .subquery()
    )
    rows = conn.execute(
        sa.select(found).where(found.c.change_id.is_not(None)).order_by(found.c.change_id.desc()).limit(limit)
    ).all()
    return [DeletedDocument(_summary(r), int(r.change_id), r.deleted_at) for r in rows]


def deletion_of(conn: sa.Connection, doc_id: int) -> DeletedDocument | None:
    """The deleted document with the applied change that deleted it, or ``None`` when it is live
    or no undo can bring it back."""
    row = conn.execute(
        sa.select(*_SUMMARY_COLUMNS, changes.c.id.label("change_id"), documents.c.deleted_at)
        .join(*_deleting_change())
        .where(documents.c.id == doc_id, documents.c.deleted_at.is_not(None))
        .order_by(changes.c.id.desc())
        .limit(1)
    ).first()
    return None if row is None else DeletedDocument(_summary(row), int(row.change_id), row.deleted_at)


def entity_kinds(conn: sa.Connection) -> list[str]:
    """The kinds of the live entities, alphabetically (``self`` is not one)."""
    rows = conn.execute(
        sa.select(entities.c.kind)
        .where(entities.c.kind != "self", entities.c.deleted_at.is_(None), entities.c.merged_into.is_(None))
        .distinct()
        .order_by(entities.c.kind)
    ).scalars()
    return list(rows)


def display_names(conn: sa.Connection, entity_ids: Sequence[int]) -> dict[int, str]:
    """The display name each id names now: its own, or, for a merged id, the kept entity's.
    An id of a deleted entity, of the user, or of nothing is left out."""
    if not entity_ids:
        return {}
    seed = sa.select(entities.c.id.label("start"), entities.c.id.label("current")).where(entities.c.id.in_(entity_ids))
    chain = seed.cte("chain", recursive=True)
    step = (
        sa.select(chain.c.start, entities.c.merged_into)
        .join(entities, entities.c.id == chain.c.current)
        .where(entities.c.merged_into.is_not(None))
    )
    chain = chain.union(step)
    rows = conn.execute(
        sa.select(chain.c.start, entities.c.display_name)
        .join(entities, entities.c.id == chain.c.current)
        .where(entities.c.merged_into.is_(None), entities.c.deleted_at.is_(None), entities.c.kind != "self")
    ).all()
    return {int(start): name for start, name in rows}


def _closure(roots: Sequence[int]) -> sa.CTE:
    """``(root, member)``: each live root with itself and every entity merged into it, through chains."""
    seed = sa.select(entities.c.id.label("root"), entities.c.id.label("member")).where(
        entities.c.id.in_(roots), entities.c.deleted_at.is_(None)
    )
    closure = seed.cte("closure", recursive=True)
    step = sa.select(closure.c.root, entities.c.id).join(entities, entities.c.merged_into == closure.c.member)
    return closure.union(step)


def entity_page(
    conn: sa.Connection, *, kind: str | None, query: str | None, offset: int, limit: int, exclude: int | None = None
) -> Page[EntitySummary]:
    """Live entities (of ``kind``, or of every kind but ``self``) by display name, with identifiers.

    ``query`` matches the display name or any identifier of the entity or of one merged into it;
    ``exclude`` leaves one entity out (the one a merge keeps).
    """
    _check_slice(offset, limit)
    query = text_or_none("query", query)
    if query is not None:
        # longer than any name or identifier, and than the store's pattern matching takes
        check_length("query", query)
        # neither store can compare a NUL or a lone surrogate: say so, as every other filter does
        refuse_unstorable_filter("query", query)
    where: list[sa.ColumnElement[bool]] = [
        entities.c.kind != "self",
        entities.c.deleted_at.is_(None),
        entities.c.merged_into.is_(None),
    ]
    if kind:
        where.append(entities.c.kind == check_kind(kind))
    if exclude is not None:
        where.append(entities.c.id != whole_number("exclude", exclude))
    if query and query.strip():
        pattern = _like(query.strip())
        members = _closure_of_all()
        by_identifier = (
            sa.select(members.c.root)
            .join(identifiers, identifiers.c.entity_id == members.c.member)
            .where(identifiers.c.removed_at.is_(None), identifiers.c.value_folded.like(pattern, escape="\\"))
        )
        where.append(sa.or_(entities.c.name_folded.like(pattern, escape="\\"), entities.c.id.in_(by_identifier)))
    condition = sa.and_(*where)
    total = conn.execute(sa.select(sa.func.count()).select_from(entities).where(condition)).scalar_one()
    rows = conn.execute(
        sa.select(entities.c.id, entities.c.kind, entities.c.display_name, entities.c.created_by, entities.c.created_at)
        .where(condition)
        .order_by(entities.c.name_folded, entities.c.id)
        .offset(offset)
        .limit(limit)
    ).all()
    idents = listed_identifiers(conn, [r.id for r in rows]) if rows else {}
    items = [
        EntitySummary(
            id=r.id,
            kind=r.kind,
            display_name=r.display_name,
            identifiers=tuple(idents.get(r.id, [])),
            created_by=r.created_by,
            created_at=r.created_at,
        )
        for r in rows
    ]
    return Page(items, int(total), offset, limit)


def _closure_of_all() -> sa.CTE:
    """``(root, member)`` for every live root entity: the query filter's merge closure."""
    seed = sa.select(entities.c.id.label("root"), entities.c.id.label("member")).where(entities.c.merged_into.is_(None))
    closure = seed.cte("all_closure", recursive=True)
    step = sa.select(closure.c.root, entities.c.id).join(entities, entities.c.merged_into == closure.c.member)
    return closure.union(step)


def facts_about(conn: sa.Connection, entity_ids: Sequence[int]) -> dict[int, list[RelatedFact]]:
    """The current facts about each live entity of ``entity_ids``, through its merge closure, by
    predicate; inferred facts are left out, as a lookup leaves them out by default."""
    if not entity_ids:
        return {}
    members = _closure(entity_ids)
    rows = conn.execute(
        sa.select(
            members.c.root,
            facts.c.id,
            facts.c.predicate,
            facts.c.value_json,
            facts.c.object_id,
            facts.c.writer,
            facts.c.recorded_at,
        )
        .join(facts, facts.c.subject_id == members.c.member)
        .where(facts.c.valid_to.is_(None), facts.c.source != "inferred")
        .order_by(facts.c.predicate, facts.c.id)
    ).all()
    found: dict[int, list[RelatedFact]] = {}
    for r in rows:
        found.setdefault(int(r.root), []).append(
            RelatedFact(
                id=r.id,
                entity_id=int(r.root),
                predicate=r.predicate,
                value=json.loads(r.value_json),
                object_id=r.object_id,
                writer=r.writer,
                recorded_at=r.recorded_at,
            )
        )
    return found
