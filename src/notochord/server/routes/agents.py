"""The agent registry and the agent's linked knowledge bases: ``/api/knowledge/agents``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from notochord.server.deps import CurrentActor, RawBody, Service, json_object_body, permission
from notochord.server.errors import documented
from notochord.server.routes.kb import Limit, Offset, paging_of
from notochord.server.routes.models import (
    AgentEnvelope,
    AgentList,
    LinkedKnowledgeBaseList,
    agent_out,
    linked_kb_out,
)

__all__ = ["router"]

router = APIRouter(tags=["agents"])

_STATUS = {"type": "string", "enum": ["draft", "published", "archived"]}
_AGENT_FIELDS = {"name": {"type": "string", "description": "Agent name."}, "status": _STATUS}


@router.post(
    "/agents",
    status_code=201,
    response_model=AgentEnvelope,
    responses=documented(400, 401, 403, 413, 415, 507),
    openapi_extra=permission("org:create", body=json_object_body(_AGENT_FIELDS, required=["name"])),
    summary="Register Agent",
)
def create_agent(service: Service, actor: CurrentActor, body: RawBody, request: Request) -> AgentEnvelope:
    """Register an agent in the caller's organization; needs member or higher."""
    return AgentEnvelope(agent=agent_out(service.agents.create(actor=actor, body=body.declared(request.headers))))


@router.get(
    "/agents",
    response_model=AgentList,
    responses=documented(400, 401, 403),
    openapi_extra=permission("org:list"),
    summary="List Agents",
)
def list_agents(
    service: Service, actor: CurrentActor, request: Request, limit: Limit = None, offset: Offset = None
) -> AgentList:
    paging = paging_of(request, limit, offset)
    found, total = service.agents.list(actor=actor, paging=paging)
    return AgentList(agents=[agent_out(a) for a in found], total=total, limit=paging.limit, offset=paging.offset)


@router.get(
    "/agents/{agent_id}",
    response_model=AgentEnvelope,
    responses=documented(401, 403, 404),
    openapi_extra=permission("agent:view"),
    summary="Get Agent",
)
def get_agent(service: Service, actor: CurrentActor, agent_id: str) -> AgentEnvelope:
    return AgentEnvelope(agent=agent_out(service.agents.get(actor=actor, agent_id=agent_id)))


@router.patch(
    "/agents/{agent_id}",
    response_model=AgentEnvelope,
    responses=documented(400, 401, 403, 404, 413, 415, 507),
    openapi_extra=permission("agent:edit", body=json_object_body(_AGENT_FIELDS)),
    summary="Update Agent",
)
def update_agent(
    service: Service, actor: CurrentActor, agent_id: str, body: RawBody, request: Request
) -> AgentEnvelope:
    updated = service.agents.update(actor=actor, agent_id=agent_id, body=body.declared(request.headers))
    return AgentEnvelope(agent=agent_out(updated))


@router.delete(
    "/agents/{agent_id}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 403, 404, 507),
    openapi_extra=permission("agent:delete"),
    summary="Delete Agent (soft)",
)
def delete_agent(service: Service, actor: CurrentActor, agent_id: str) -> Response:
    """Soft-delete: the agent reads as not found from now on; its links are no longer shown."""
    service.agents.delete(actor=actor, agent_id=agent_id)
    return Response(status_code=204)


@router.get(
    "/agents/{agent_id}/kb",
    response_model=LinkedKnowledgeBaseList,
    responses=documented(401, 403, 404),
    openapi_extra=permission("agent:view"),
    summary="Get Agent's Linked KBs",
)
def linked_knowledge_bases(service: Service, actor: CurrentActor, agent_id: str) -> LinkedKnowledgeBaseList:
    linked = service.links.knowledge_bases_of(actor=actor, agent_id=agent_id)
    return LinkedKnowledgeBaseList(knowledge_bases=[linked_kb_out(k) for k in linked], count=len(linked))
