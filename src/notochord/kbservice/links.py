"""Links between knowledge bases and agents, and both lookups (KB-LNK, KB-ULK, KB-LAG, KB-AKB).

Rules:

- A link is stored in the knowledge base's space; deleting the knowledge base removes it
  (KB-DEL-05). It holds the agent's organization so that a link made before cross-organization
  links were refused can still be found and removed.
- Order of checks for link and unlink (OD-B16): 404 for the knowledge base, 404 for the agent,
  403 for ``edit`` on the knowledge base, 403 for ``edit`` on the agent, then 409 when the two belong
  to different organizations (link only; only a superadmin gets this far), then 400 for the body.
  A refused request changes nothing and writes no audit entry (KB-LNK-11).
- Linking a linked pair replaces ``priority`` and ``permissions`` (omitted → ``0`` and ``{}``), keeps
  the original ``linked_at`` and writes another ``knowledge_base.agent_link`` entry (OD-B17).
- Unlinking is idempotent; ``knowledge_base.agent_unlink`` is written only when a link was removed
  (KB-ULK-03/04). A superadmin may remove a cross-organization link (KB-ULK-05).
- Lookups order by priority descending, then ``linked_at`` ascending, then id (KB-LAG-02, OD-B17,
  OD-B21); soft-deleted agents are left out (KB-LAG-04). Links whose other side is in another
  organization appear only for a superadmin.
- A lookup shows only the linked resources the caller may view, and counts only those: a caller who
  reaches one side through a grant alone does not read, through the link, what a direct read of the
  other side would refuse (OD-B08, OD-B10).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import kb_agent_links, kb_agents, kb_grants, kb_knowledge_bases
from notochord.kbservice.actors import Actor
from notochord.kbservice.audit import KB_AGENT_LINK, KB_AGENT_UNLINK, record_audit
from notochord.kbservice.errors import KbConflictError
from notochord.kbservice.grants import check, find, locate
from notochord.kbservice.knowledge_bases import KnowledgeBase, kb_from_row
from notochord.kbservice.policy import Action, Level, Resource, ResourceType, decide
from notochord.kbservice.spaces import Directory, Found, require_live
from notochord.kbservice.validation import JsonBody, optional_object, priority_value

__all__ = ["LinkedAgent", "LinkedKnowledgeBase", "Links"]

_KB = ResourceType.KB
_AGENT = ResourceType.AGENT


# an agent's links with one user's grant on each linked knowledge base; built once, as it is the same
# statement for every retrieval
_LINKED_WITH_GRANT = (
    sa.select(
        kb_knowledge_bases,
        kb_agent_links.c.permissions_json,
        kb_agent_links.c.priority,
        kb_agent_links.c.linked_at,
        kb_grants.c.permission.label("granted"),
    )
    .join(kb_knowledge_bases, kb_knowledge_bases.c.id == kb_agent_links.c.kb_id)
    .outerjoin(
        kb_grants,
        sa.and_(
            kb_grants.c.resource_type == str(_KB),
            kb_grants.c.resource_id == kb_knowledge_bases.c.id,
            kb_grants.c.user_id == sa.bindparam("user_id", type_=sa.String),
        ),
    )
    .where(kb_agent_links.c.agent_id == sa.bindparam("agent_id", type_=sa.String))
)


@dataclass(frozen=True)
class LinkedAgent:
    """An agent as KB-LAG shows it (OD-B06), with the link's creation time for ordering."""

    id: str
    name: str
    status: str
    priority: int
    linked_at: str


@dataclass(frozen=True)
class LinkedKnowledgeBase:
    """A knowledge base with the metadata of its link to one agent (KB-AKB-02, OD-B06)."""

    knowledge_base: KnowledgeBase
    permissions: dict[str, Any]
    priority: int
    linked_at: str


class Links:
    def __init__(self, directory: Directory) -> None:
        self._directory = directory

    def link(self, *, actor: Actor, kb_id: object, agent_id: object, body: JsonBody) -> tuple[str, str]:
        """Link (or re-link) a knowledge base and an agent; returns their canonical ids."""
        kb_found, kb = find(self._directory, actor=actor, type=_KB, resource_id=kb_id)
        agent_found, agent = find(self._directory, actor=actor, type=_AGENT, resource_id=agent_id)
        check(kb_found, kb, actor=actor, action=Action.EDIT)
        check(agent_found, agent, actor=actor, action=Action.EDIT)
        if kb.organization_id != agent.organization_id:
            raise KbConflictError(
                "The knowledge base and the agent belong to different organizations; "
                "cross-organization links are refused"
            )
        fields = body.object()
        priority = priority_value(fields)
        permissions = optional_object(fields, "permissions") or {}
        store = kb_found.store
        with store.write() as conn:
            require_live(conn, type=_KB, resource_id=kb.id)
            # same organization, so the agent lives in this space and is re-checked in this transaction
            require_live(conn, type=_AGENT, resource_id=agent.id)
            now = store.now()
            key = (kb_agent_links.c.kb_id == kb.id, kb_agent_links.c.agent_id == agent.id)
            values = {
                "permissions_json": json.dumps(permissions, ensure_ascii=False, sort_keys=True),
                "priority": priority,
                "updated_at": now,
            }
            if conn.execute(sa.select(kb_agent_links.c.kb_id).where(*key)).first() is None:
                conn.execute(
                    sa.insert(kb_agent_links).values(
                        kb_id=kb.id,
                        agent_id=agent.id,
                        agent_organization_id=agent.organization_id,
                        linked_at=now,
                        **values,
                    )
                )
            else:
                conn.execute(sa.update(kb_agent_links).where(*key).values(**values))
            record_audit(
                conn,
                organization_id=kb.organization_id,
                actor=actor,
                action=KB_AGENT_LINK,
                kb_id=kb.id,
                details={"agent_id": agent.id, "priority": priority, "permissions": permissions},
                now=now,
            )
        return kb.id, agent.id

    def unlink(self, *, actor: Actor, kb_id: object, agent_id: object) -> bool:
        """Remove the link if there is one; returns whether a link was removed."""
        kb_found, kb = find(self._directory, actor=actor, type=_KB, resource_id=kb_id)
        agent_found, agent = find(self._directory, actor=actor, type=_AGENT, resource_id=agent_id)
        check(kb_found, kb, actor=actor, action=Action.EDIT)
        check(agent_found, agent, actor=actor, action=Action.EDIT)
        store = kb_found.store
        with store.write() as conn:
            removed = conn.execute(
                sa.delete(kb_agent_links).where(kb_agent_links.c.kb_id == kb.id, kb_agent_links.c.agent_id == agent.id)
            ).rowcount
            if removed:
                record_audit(
                    conn,
                    organization_id=kb.organization_id,
                    actor=actor,
                    action=KB_AGENT_UNLINK,
                    kb_id=kb.id,
                    details={"agent_id": agent.id},
                    now=store.now(),
                )
        return bool(removed)

    def agents_of(self, *, actor: Actor, kb_id: object) -> list[LinkedAgent]:
        """The live agents linked to a knowledge base (KB-LAG)."""
        found, kb = locate(self._directory, actor=actor, type=_KB, resource_id=kb_id, action=Action.VIEW)
        with found.store.read() as conn:
            local = conn.execute(
                sa.select(
                    kb_agents.c.id,
                    kb_agents.c.name,
                    kb_agents.c.status,
                    kb_agent_links.c.priority,
                    kb_agent_links.c.linked_at,
                    kb_grants.c.permission.label("granted"),
                )
                .join(kb_agents, kb_agents.c.id == kb_agent_links.c.agent_id)
                .outerjoin(
                    kb_grants,
                    sa.and_(
                        kb_grants.c.resource_type == str(_AGENT),
                        kb_grants.c.resource_id == kb_agents.c.id,
                        kb_grants.c.user_id == actor.user_id,
                    ),
                )
                .where(
                    kb_agent_links.c.kb_id == kb.id,
                    kb_agent_links.c.agent_organization_id == kb.organization_id,
                    kb_agents.c.deleted_at.is_(None),
                )
                .order_by(kb_agent_links.c.priority.desc(), kb_agent_links.c.linked_at, kb_agents.c.id)
            ).all()
            foreign = (
                conn.execute(
                    sa.select(kb_agent_links).where(
                        kb_agent_links.c.kb_id == kb.id,
                        kb_agent_links.c.agent_organization_id != kb.organization_id,
                    )
                ).all()
                if actor.is_superadmin
                else []
            )
        agents = [
            LinkedAgent(r.id, r.name, r.status, int(r.priority), r.linked_at)
            for r in local
            if _may_view(actor, Resource(_AGENT, r.id, kb.organization_id), r.granted)
        ]
        if not foreign:
            return agents
        for link in foreign:
            with self._directory.store(link.agent_organization_id).read() as conn:
                row = conn.execute(
                    sa.select(kb_agents).where(kb_agents.c.id == link.agent_id, kb_agents.c.deleted_at.is_(None))
                ).first()
            if row is not None:
                agents.append(LinkedAgent(row.id, row.name, row.status, int(link.priority), link.linked_at))
        return sorted(agents, key=lambda a: (-a.priority, a.linked_at, a.id))

    def knowledge_bases_of(self, *, actor: Actor, agent_id: object) -> list[LinkedKnowledgeBase]:
        """The knowledge bases linked to a live agent (KB-AKB, OD-B21)."""
        found, agent = locate(self._directory, actor=actor, type=_AGENT, resource_id=agent_id, action=Action.VIEW)
        return [
            linked
            for linked, granted in self.linked_to(found, agent, actor=actor)
            if _may_view(actor, _kb_resource(linked.knowledge_base), granted)
        ]

    def linked_to(
        self, found: Found, agent: Resource, *, actor: Actor, within: sa.Connection | None = None
    ) -> list[tuple[LinkedKnowledgeBase, Level]]:
        """The knowledge bases linked to an agent already found and checked, each with ``actor``'s grant
        on it, read with the link in one statement per organization (for retrieval's permission
        question, asked per knowledge base).

        ``within`` is the open read transaction the agent was found in: the agent's own organization
        is read in it, or taken from what was read under the access version that transaction sees
        (:attr:`Found.version`; links and grants are written by the service alone, so any change of
        them replaced the version)."""
        organizations = [agent.organization_id]
        if actor.is_superadmin:
            organizations += [o for o in self._directory.organizations() if o != agent.organization_id]
        params = {"agent_id": agent.id, "user_id": actor.user_id}
        linked: list[tuple[LinkedKnowledgeBase, Level]] = []
        for org in organizations:
            if within is not None and org == agent.organization_id:
                linked += self._own_links(found, agent, actor=actor, conn=within)
                continue
            store = found.store if org == agent.organization_id else self._directory.store(org)
            with store.read() as conn:
                linked += _linked(conn.execute(_LINKED_WITH_GRANT, params).all())
        return sorted(linked, key=lambda k: (-k[0].priority, k[0].linked_at, k[0].knowledge_base.id))

    def _own_links(
        self, found: Found, agent: Resource, *, actor: Actor, conn: sa.Connection
    ) -> list[tuple[LinkedKnowledgeBase, Level]]:
        key = ("links", agent.organization_id, agent.id, actor.user_id)
        if found.version is not None:
            known: list[tuple[LinkedKnowledgeBase, Level]] | None = self._directory.recall(key, found.version)
            if known is not None:
                return list(known)
        linked = _linked(conn.execute(_LINKED_WITH_GRANT, {"agent_id": agent.id, "user_id": actor.user_id}).all())
        if found.version is not None:
            self._directory.keep(key, found.version, tuple(linked))
        return linked


def _kb_resource(kb: KnowledgeBase) -> Resource:
    return Resource(_KB, kb.id, kb.organization_id)


def _may_view(actor: Actor, target: Resource, granted: Level | str | None) -> bool:
    level = granted if isinstance(granted, Level) else Level.parse(granted) or Level.NONE
    return decide(actor=actor, action=Action.VIEW, target=target, grant=level).allowed


def _linked(rows: Sequence[Any]) -> list[tuple[LinkedKnowledgeBase, Level]]:
    return [
        (
            LinkedKnowledgeBase(
                knowledge_base=kb_from_row(r),
                permissions=json.loads(r.permissions_json),
                priority=int(r.priority),
                linked_at=r.linked_at,
            ),
            Level.parse(r.granted) or Level.NONE,
        )
        for r in rows
    ]
