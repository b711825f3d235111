"""The audit log and the cost ledger of the knowledge-base service (OD-B19, OD-B20).

Rules:

- Only three actions are ever written: ``knowledge_base.delete``, ``knowledge_base.agent_link`` and
  ``knowledge_base.agent_unlink``. Creating, updating and reading are not audited.
- An entry is written in the same transaction as the change it records, in the space of the
  organization that owns the knowledge base, whoever the caller is (KB-DEL-07, KB-DEL-09).
- Deleting a knowledge base writes one ``vector_store`` cost record to the owning organization with
  the number of vectors and bytes removed (KB-DEL-08).
- Reading the log or the ledger needs admin or higher in the organization (or a superadmin), and
  always reads the caller's own organization.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import kb_audit_log, kb_usage
from notochord.kbservice.actors import Actor
from notochord.kbservice.errors import KbNotFoundError, KbValidationError
from notochord.kbservice.policy import Action, OrgScope, authorize
from notochord.kbservice.spaces import Directory
from notochord.kbservice.validation import Paging, given_once

__all__ = [
    "AUDIT_ACTIONS",
    "KB_AGENT_LINK",
    "KB_AGENT_UNLINK",
    "KB_DELETE",
    "AuditEntry",
    "AuditLog",
    "UsageRecord",
    "record_audit",
    "record_usage",
]

KB_DELETE = "knowledge_base.delete"
KB_AGENT_LINK = "knowledge_base.agent_link"
KB_AGENT_UNLINK = "knowledge_base.agent_unlink"
AUDIT_ACTIONS = (KB_DELETE, KB_AGENT_LINK, KB_AGENT_UNLINK)


@dataclass(frozen=True)
class AuditEntry:
    id: int
    organization_id: str
    actor_user_id: str
    actor_email: str | None
    action: str
    resource_type: str
    resource_id: str
    details: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class UsageRecord:
    id: int
    organization_id: str
    kind: str
    kb_id: str
    vectors_deleted: int
    bytes_deleted: int
    created_at: str


def record_audit(
    conn: sa.Connection,
    *,
    organization_id: str,
    actor: Actor,
    action: str,
    kb_id: str,
    details: dict[str, Any],
    now: str,
) -> None:
    """Append one audit entry about knowledge base ``kb_id`` inside the caller's transaction."""
    if action not in AUDIT_ACTIONS:
        raise AssertionError(f"undocumented audit action {action!r}")
    conn.execute(
        sa.insert(kb_audit_log).values(
            organization_id=organization_id,
            actor_user_id=actor.user_id,
            actor_email=actor.email,
            action=action,
            resource_type="knowledge_base",
            resource_id=kb_id,
            details_json=json.dumps(details, ensure_ascii=False, sort_keys=True),
            created_at=now,
        )
    )


def record_usage(
    conn: sa.Connection,
    *,
    organization_id: str,
    kb_id: str,
    vectors_deleted: int,
    bytes_deleted: int,
    now: str,
) -> None:
    """Append one ``vector_store`` cost record inside the caller's transaction."""
    conn.execute(
        sa.insert(kb_usage).values(
            organization_id=organization_id,
            kind="vector_store",
            kb_id=kb_id,
            vectors_deleted=vectors_deleted,
            bytes_deleted=bytes_deleted,
            created_at=now,
        )
    )


class AuditLog:
    """Reading the audit log and the cost ledger of the caller's organization."""

    def __init__(self, directory: Directory) -> None:
        self._directory = directory

    def entries(
        self,
        *,
        actor: Actor,
        paging: Paging,
        action: str | None = None,
        organization_id: str | None = None,
        query: Iterable[tuple[str, str]] = (),
    ) -> tuple[list[AuditEntry], int]:
        """Entries newest first, and their total; ``action`` narrows to one action.

        ``organization_id`` names another organization: only a superadmin may ask, and an
        organization without a space reads exactly like one the caller may not see. ``query`` is
        the request's query string, whose ``action`` and ``organizationId`` may each be given once;
        like every filter problem, a repeated one is refused only after the role check.
        """
        org = organization_id or actor.organization_id
        authorize(actor=actor, action=Action.READ_AUDIT, target=OrgScope(org))
        given_once(query, ("action", "organizationId"))
        if org != actor.organization_id and org not in self._directory.organizations():
            raise KbNotFoundError("organization")
        condition = kb_audit_log.c.organization_id == org
        if action is not None:
            if action not in AUDIT_ACTIONS:
                raise KbValidationError(
                    f"action must be one of {', '.join(AUDIT_ACTIONS)} (the only actions the log records); "
                    "leave it out for every entry"
                )
            condition = sa.and_(condition, kb_audit_log.c.action == action)
        with self._directory.store(org).read() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(kb_audit_log).where(condition))
            rows = conn.execute(
                sa.select(kb_audit_log)
                .where(condition)
                .order_by(kb_audit_log.c.created_at.desc(), kb_audit_log.c.id.desc())
                .limit(paging.limit)
                .offset(paging.offset)
            ).all()
            count = int(total.scalar_one())
        return [
            AuditEntry(
                id=r.id,
                organization_id=r.organization_id,
                actor_user_id=r.actor_user_id,
                actor_email=r.actor_email,
                action=r.action,
                resource_type=r.resource_type,
                resource_id=r.resource_id,
                details=json.loads(r.details_json),
                created_at=r.created_at,
            )
            for r in rows
        ], count

    def usage(self, *, actor: Actor, paging: Paging) -> tuple[list[UsageRecord], int]:
        """Cost records newest first, and their total."""
        authorize(actor=actor, action=Action.READ_AUDIT, target=OrgScope(actor.organization_id))
        condition = kb_usage.c.organization_id == actor.organization_id
        with self._directory.store(actor.organization_id).read() as conn:
            count = int(conn.execute(sa.select(sa.func.count()).select_from(kb_usage).where(condition)).scalar_one())
            rows = conn.execute(
                sa.select(kb_usage)
                .where(condition)
                .order_by(kb_usage.c.created_at.desc(), kb_usage.c.id.desc())
                .limit(paging.limit)
                .offset(paging.offset)
            ).all()
        return [
            UsageRecord(
                id=r.id,
                organization_id=r.organization_id,
                kind=r.kind,
                kb_id=r.kb_id,
                vectors_deleted=r.vectors_deleted,
                bytes_deleted=r.bytes_deleted,
                created_at=r.created_at,
            )
            for r in rows
        ], count
