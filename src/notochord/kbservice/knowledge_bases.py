"""Knowledge bases: create, list, get, update and delete (KB-CRT, KB-LST, KB-GET, KB-UPD, KB-DEL).

Rules:

- A knowledge base lives in its organization's space and owns one ``builtin = 'kb'`` collection
  there, created in the same transaction; its documents, chunks, vectors and mentions are stored
  under that collection, out of every gem's reach (OD-B24 as overridden).
- Order of checks: not found (404) → permission (403) → body validation (400); creating checks the
  role before the body, so a refused caller creates nothing whatever it sent (OD-B12, OD-B16).
- ``visibility`` and every other unknown key are ignored: not stored, not returned (KB-GEN-07).
- Lists are always the caller's organization, superadmins included, newest first, then by id
  (OD-B14, OD-B15).
- Deleting is physical and irreversible (KB-DEL-04): in one transaction it removes the documents with
  their chunks, full-text rows, vectors and mentions, the change records about them, the collection
  subtree, the grants, and the knowledge base row (its agent links cascade, KB-DEL-05); and it writes
  the ``knowledge_base.delete`` audit entry and the ``vector_store`` cost record to the organization
  that owned the knowledge base, whoever the caller is (KB-DEL-07…09). No agent is touched (KB-DEL-06).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import chunk_vectors, chunks, documents, kb_grants, kb_knowledge_bases
from notochord.kbservice.actors import Actor
from notochord.kbservice.audit import KB_DELETE, record_audit, record_usage
from notochord.kbservice.grants import locate
from notochord.kbservice.policy import Action, OrgScope, ResourceType, authorize
from notochord.kbservice.spaces import Directory, OrgSpace, require_live
from notochord.kbservice.validation import (
    JsonBody,
    KbSettings,
    Paging,
    optional_object,
    optional_text,
    required_text,
)
from notochord.knowledge.purge import collection_subtree, purge_collections

__all__ = ["Deletion", "KnowledgeBase", "KnowledgeBases", "kb_from_row"]

_KB = ResourceType.KB


@dataclass(frozen=True)
class KnowledgeBase:
    """The KB object of OD-B06, plus the id of its document collection (never serialised)."""

    id: str
    name: str
    description: str | None
    organization_id: str
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    collection_id: int


@dataclass(frozen=True)
class Deletion:
    """What deleting a knowledge base removed, and from which organization."""

    kb_id: str
    organization_id: str
    documents: int
    vectors: int
    bytes: int


def kb_from_row(row: Any) -> KnowledgeBase:
    return KnowledgeBase(
        id=row.id,
        name=row.name,
        description=row.description,
        organization_id=row.organization_id,
        settings=json.loads(row.settings_json),
        created_at=row.created_at,
        updated_at=row.updated_at,
        collection_id=row.collection_id,
    )


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class KnowledgeBases:
    def __init__(self, directory: Directory) -> None:
        self._directory = directory

    def create(self, *, actor: Actor, body: JsonBody) -> KnowledgeBase:
        """Create a knowledge base in the caller's organization (KB-CRT-01…07)."""
        authorize(actor=actor, action=Action.CREATE, target=OrgScope(actor.organization_id))
        fields = body.object()
        name = required_text(fields, "name")
        description = optional_text(fields, "description")
        settings = optional_object(fields, "settings") or {}
        store = self._directory.store(actor.organization_id)
        _check_settings(store, settings)
        kb_id = str(uuid.uuid4())
        with store.write() as conn:
            now = store.now()
            collection_id = store.core.collections.create_kb_root(conn, name=kb_id, now=now)
            conn.execute(
                sa.insert(kb_knowledge_bases).values(
                    id=kb_id,
                    organization_id=actor.organization_id,
                    name=name,
                    description=description,
                    settings_json=_dump(settings),
                    collection_id=collection_id,
                    created_at=now,
                    updated_at=now,
                )
            )
            row = conn.execute(sa.select(kb_knowledge_bases).where(kb_knowledge_bases.c.id == kb_id)).one()
        self._directory.remember(kb_id, actor.organization_id)
        return kb_from_row(row)

    def list(self, *, actor: Actor, paging: Paging) -> tuple[list[KnowledgeBase], int]:
        """The caller's organization's knowledge bases, newest first, and their total (KB-LST)."""
        authorize(actor=actor, action=Action.LIST, target=OrgScope(actor.organization_id))
        mine = kb_knowledge_bases.c.organization_id == actor.organization_id
        with self._directory.store(actor.organization_id).read() as conn:
            total = int(
                conn.execute(sa.select(sa.func.count()).select_from(kb_knowledge_bases).where(mine)).scalar_one()
            )
            rows = conn.execute(
                sa.select(kb_knowledge_bases)
                .where(mine)
                .order_by(kb_knowledge_bases.c.created_at.desc(), kb_knowledge_bases.c.id)
                .limit(paging.limit)
                .offset(paging.offset)
            ).all()
        return [kb_from_row(r) for r in rows], total

    def get(self, *, actor: Actor, kb_id: object) -> KnowledgeBase:
        """One knowledge base (KB-GET-01/02)."""
        found, _ = locate(self._directory, actor=actor, type=_KB, resource_id=kb_id, action=Action.VIEW)
        return kb_from_row(found.row)

    def update(self, *, actor: Actor, kb_id: object, body: JsonBody) -> KnowledgeBase:
        """Partial update of name, description and settings; ``updated_at`` advances (KB-UPD)."""
        found, resource = locate(self._directory, actor=actor, type=_KB, resource_id=kb_id, action=Action.EDIT)
        fields = body.object()
        changes_: dict[str, Any] = {}
        if "name" in fields:
            changes_["name"] = required_text(fields, "name")
        if "description" in fields:
            changes_["description"] = optional_text(fields, "description")
        store = found.store
        if "settings" in fields:
            settings = optional_object(fields, "settings") or {}
            _check_settings(store, settings)
            changes_["settings_json"] = _dump(settings)
        with store.write() as conn:
            require_live(conn, type=_KB, resource_id=resource.id)
            conn.execute(
                sa.update(kb_knowledge_bases)
                .where(kb_knowledge_bases.c.id == resource.id)
                .values(**changes_, updated_at=store.now())
            )
            row = conn.execute(sa.select(kb_knowledge_bases).where(kb_knowledge_bases.c.id == resource.id)).one()
        return kb_from_row(row)

    def delete(self, *, actor: Actor, kb_id: object) -> Deletion:
        """Delete a knowledge base with everything stored for it (KB-DEL-01…10)."""
        found, resource = locate(self._directory, actor=actor, type=_KB, resource_id=kb_id, action=Action.DELETE)
        store = found.store
        with store.write() as conn:
            row = require_live(conn, type=_KB, resource_id=resource.id)
            now = store.now()
            subtree = collection_subtree(conn, row.collection_id)
            kb_documents = sa.select(documents.c.id).where(documents.c.collection_id.in_(subtree))
            kb_chunks = sa.select(chunks.c.id).where(chunks.c.document_id.in_(kb_documents))
            vectors, size = conn.execute(
                sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(sa.func.length(chunk_vectors.c.vector)), 0))
                .select_from(chunk_vectors)
                .where(chunk_vectors.c.chunk_id.in_(kb_chunks))
            ).one()
            conn.execute(
                sa.delete(kb_grants).where(
                    kb_grants.c.resource_type == str(_KB), kb_grants.c.resource_id == resource.id
                )
            )
            # the links go by ON DELETE CASCADE (KB-DEL-05); the row refers to the collection, so it
            # goes before the collection subtree
            conn.execute(sa.delete(kb_knowledge_bases).where(kb_knowledge_bases.c.id == resource.id))
            doc_ids = purge_collections(conn, subtree)
            record_audit(
                conn,
                organization_id=row.organization_id,
                actor=actor,
                action=KB_DELETE,
                kb_id=resource.id,
                details={"kb_name": row.name},
                now=now,
            )
            record_usage(
                conn,
                organization_id=row.organization_id,
                kb_id=resource.id,
                vectors_deleted=int(vectors),
                bytes_deleted=int(size),
                now=now,
            )
        self._directory.forget(resource.id)
        return Deletion(
            kb_id=resource.id,
            organization_id=row.organization_id,
            documents=len(doc_ids),
            vectors=int(vectors),
            bytes=int(size),
        )


def _check_settings(store: OrgSpace, settings: Mapping[str, Any]) -> None:
    """Refuse settings ingestion could not honour (a chunk size out of range, a model not here)."""
    embedder = store.core.vectors.embedder
    KbSettings.parse(settings, running_model=embedder.model_id if embedder is not None else None)
