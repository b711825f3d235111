"""The agent registry: a local mirror of the Bot Service's agents (OD-B18).

Rules:

- An agent belongs to one organization and has a ``status`` of ``draft``, ``published`` or
  ``archived``; new agents are ``draft`` unless the body says otherwise.
- Ids are random UUIDs chosen by the service, so an id names at most one agent across every space.
- Deleting is soft (``deleted_at``): a soft-deleted agent is "not found" everywhere (get, update,
  delete, link, unlink, the agent's linked knowledge bases) and left out of every list (KB-LAG-04);
  its links stay in place but are never shown.
- Creating needs member or higher; reading needs any organization role or a grant; updating needs
  ``edit`` and deleting ``delete`` on the agent (OD-B08, OD-B09).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import kb_agents
from notochord.kbservice.actors import Actor
from notochord.kbservice.errors import KbValidationError
from notochord.kbservice.grants import locate
from notochord.kbservice.policy import Action, OrgScope, ResourceType, authorize
from notochord.kbservice.spaces import Directory, require_live
from notochord.kbservice.validation import JsonBody, Paging, required_text

__all__ = ["AGENT_STATUSES", "Agent", "Agents", "agent_from_row"]

AGENT_STATUSES = ("draft", "published", "archived")
_AGENT = ResourceType.AGENT


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    status: str
    organization_id: str
    created_at: str
    updated_at: str


def agent_from_row(row: Any) -> Agent:
    return Agent(
        id=row.id,
        name=row.name,
        status=row.status,
        organization_id=row.organization_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _status(fields: dict[str, Any]) -> str:
    value = fields["status"]
    if value not in AGENT_STATUSES:
        raise KbValidationError("status must be one of draft, published, archived")
    return str(value)


class Agents:
    def __init__(self, directory: Directory) -> None:
        self._directory = directory

    def create(self, *, actor: Actor, body: JsonBody) -> Agent:
        authorize(actor=actor, action=Action.CREATE, target=OrgScope(actor.organization_id))
        fields = body.object()
        name = required_text(fields, "name")
        status = _status(fields) if "status" in fields else "draft"
        store = self._directory.store(actor.organization_id)
        agent_id = str(uuid.uuid4())
        with store.write() as conn:
            now = store.now()
            conn.execute(
                sa.insert(kb_agents).values(
                    id=agent_id,
                    organization_id=actor.organization_id,
                    name=name,
                    status=status,
                    created_at=now,
                    updated_at=now,
                    deleted_at=None,
                )
            )
            row = conn.execute(sa.select(kb_agents).where(kb_agents.c.id == agent_id)).one()
        self._directory.remember(agent_id, actor.organization_id)
        return agent_from_row(row)

    def list(self, *, actor: Actor, paging: Paging) -> tuple[list[Agent], int]:
        """The caller's organization's live agents, newest first, and their total."""
        authorize(actor=actor, action=Action.LIST, target=OrgScope(actor.organization_id))
        live = sa.and_(kb_agents.c.organization_id == actor.organization_id, kb_agents.c.deleted_at.is_(None))
        with self._directory.store(actor.organization_id).read() as conn:
            total = int(conn.execute(sa.select(sa.func.count()).select_from(kb_agents).where(live)).scalar_one())
            rows = conn.execute(
                sa.select(kb_agents)
                .where(live)
                .order_by(kb_agents.c.created_at.desc(), kb_agents.c.id)
                .limit(paging.limit)
                .offset(paging.offset)
            ).all()
        return [agent_from_row(r) for r in rows], total

    def get(self, *, actor: Actor, agent_id: object) -> Agent:
        found, _ = locate(self._directory, actor=actor, type=_AGENT, resource_id=agent_id, action=Action.VIEW)
        return agent_from_row(found.row)

    def update(self, *, actor: Actor, agent_id: object, body: JsonBody) -> Agent:
        """Partial update of ``name`` and ``status``."""
        found, resource = locate(self._directory, actor=actor, type=_AGENT, resource_id=agent_id, action=Action.EDIT)
        fields = body.object()
        values: dict[str, Any] = {}
        if "name" in fields:
            values["name"] = required_text(fields, "name")
        if "status" in fields:
            values["status"] = _status(fields)
        with found.store.write() as conn:
            require_live(conn, type=_AGENT, resource_id=resource.id)
            conn.execute(
                sa.update(kb_agents).where(kb_agents.c.id == resource.id).values(**values, updated_at=found.store.now())
            )
            row = conn.execute(sa.select(kb_agents).where(kb_agents.c.id == resource.id)).one()
        return agent_from_row(row)

    def delete(self, *, actor: Actor, agent_id: object) -> None:
        """Soft-delete the agent: it reads as not found from now on."""
        found, resource = locate(self._directory, actor=actor, type=_AGENT, resource_id=agent_id, action=Action.DELETE)
        with found.store.write() as conn:
            require_live(conn, type=_AGENT, resource_id=resource.id)
            now = found.store.now()
            conn.execute(
                sa.update(kb_agents).where(kb_agents.c.id == resource.id).values(deleted_at=now, updated_at=now)
            )
