"""Knowledge bases and their agent links: ``/api/knowledge/kb`` (KB-CRT … KB-LAG)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from notochord.kbservice import Paging
from notochord.kbservice.validation import given_once
from notochord.server.deps import CurrentActor, RawBody, Service, json_object_body, permission
from notochord.server.errors import documented
from notochord.server.routes.models import (
    KnowledgeBaseEnvelope,
    KnowledgeBaseList,
    LinkedAgentList,
    LinkResult,
    Message,
    kb_out,
    linked_agent_out,
)

__all__ = ["Limit", "Offset", "paging_of", "router"]

router = APIRouter(tags=["knowledge bases"])

LINKED = "Agent linked to knowledge base successfully"
UNLINKED = "Agent unlinked successfully"

_KB_FIELDS = {
    "name": {"type": "string", "description": "Knowledge base name."},
    "description": {"type": "string", "description": "Description of the knowledge base contents."},
    "settings": {"type": "object", "description": "Custom KB settings (embedding config, chunking strategy)."},
}
_LINK_FIELDS = {
    "permissions": {"type": "object", "description": "Optional permission overrides for this link."},
    "priority": {"type": "integer", "default": 0, "description": "Ranking priority among linked KBs."},
}
Limit = Annotated[
    str | None,
    Query(description="Maximum results: a whole number of 1 or more (default 50; at most 100 are returned)."),
]
Offset = Annotated[str | None, Query(description="Pagination offset: a whole number ≥ 0 (default 0).")]
_PAGING = ("limit", "offset")


def paging_of(request: Request, limit: str | None, offset: str | None) -> Paging:
    """The applied paging of a listing, its ``limit`` and ``offset`` each given at most once."""
    given_once(request.query_params.multi_items(), _PAGING)
    return Paging.of(limit, offset)


@router.post(
    "/kb",
    status_code=201,
    response_model=KnowledgeBaseEnvelope,
    responses=documented(400, 401, 403, 413, 415, 507),
    openapi_extra=permission("org:create", body=json_object_body(_KB_FIELDS, required=["name"])),
    summary="Create Knowledge Base",
)
def create_knowledge_base(
    service: Service, actor: CurrentActor, body: RawBody, request: Request
) -> KnowledgeBaseEnvelope:
    """Create a knowledge base in the caller's organization; needs member or higher."""
    kb = service.knowledge_bases.create(actor=actor, body=body.declared(request.headers))
    return KnowledgeBaseEnvelope(knowledge_base=kb_out(kb))


@router.get(
    "/kb",
    response_model=KnowledgeBaseList,
    responses=documented(400, 401, 403),
    openapi_extra=permission("org:list"),
    summary="List Knowledge Bases",
)
def list_knowledge_bases(
    service: Service, actor: CurrentActor, request: Request, limit: Limit = None, offset: Offset = None
) -> KnowledgeBaseList:
    """The knowledge bases of the caller's organization, newest first."""
    paging = paging_of(request, limit, offset)
    found, total = service.knowledge_bases.list(actor=actor, paging=paging)
    return KnowledgeBaseList(
        knowledge_bases=[kb_out(kb) for kb in found], total=total, limit=paging.limit, offset=paging.offset
    )


@router.get(
    "/kb/{kb_id}",
    response_model=KnowledgeBaseEnvelope,
    responses=documented(401, 403, 404),
    openapi_extra=permission("kb:view"),
    summary="Get Knowledge Base",
)
def get_knowledge_base(service: Service, actor: CurrentActor, kb_id: str) -> KnowledgeBaseEnvelope:
    return KnowledgeBaseEnvelope(knowledge_base=kb_out(service.knowledge_bases.get(actor=actor, kb_id=kb_id)))


def _update(
    service: Service, actor: CurrentActor, kb_id: str, body: RawBody, request: Request
) -> KnowledgeBaseEnvelope:
    """Update name, description or settings; fields left out stay as they are."""
    kb = service.knowledge_bases.update(actor=actor, kb_id=kb_id, body=body.declared(request.headers))
    return KnowledgeBaseEnvelope(knowledge_base=kb_out(kb))


for _method in ("PATCH", "PUT"):
    router.add_api_route(
        "/kb/{kb_id}",
        _update,
        methods=[_method],
        response_model=KnowledgeBaseEnvelope,
        responses=documented(400, 401, 403, 404, 413, 415, 507),
        openapi_extra=permission("kb:edit", body=json_object_body(_KB_FIELDS)),
        summary="Update Knowledge Base" if _method == "PATCH" else "Update Knowledge Base (PUT alias)",
        name=f"update_knowledge_base_{_method.lower()}",
        operation_id=f"update_knowledge_base_{_method.lower()}",
    )


@router.delete(
    "/kb/{kb_id}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 403, 404, 507),
    openapi_extra=permission("kb:delete"),
    summary="Delete Knowledge Base",
)
def delete_knowledge_base(service: Service, actor: CurrentActor, kb_id: str) -> Response:
    """Delete the knowledge base with all its documents, chunks, vectors and links."""
    service.knowledge_bases.delete(actor=actor, kb_id=kb_id)
    return Response(status_code=204)


@router.post(
    "/kb/{kb_id}/agents/{agent_id}",
    response_model=LinkResult,
    responses=documented(400, 401, 403, 404, 409, 413, 415, 507),
    openapi_extra=permission("kb:edit+agent:edit", body=json_object_body(_LINK_FIELDS)),
    summary="Link Agent to KB",
)
def link_agent(
    service: Service, actor: CurrentActor, kb_id: str, agent_id: str, body: RawBody, request: Request
) -> LinkResult:
    kb, agent = service.links.link(actor=actor, kb_id=kb_id, agent_id=agent_id, body=body.declared(request.headers))
    return LinkResult(message=LINKED, knowledge_base_id=kb, agent_id=agent)


@router.delete(
    "/kb/{kb_id}/agents/{agent_id}",
    response_model=Message,
    responses=documented(401, 403, 404, 507),
    openapi_extra=permission("kb:edit+agent:edit"),
    summary="Unlink Agent from KB",
)
def unlink_agent(service: Service, actor: CurrentActor, kb_id: str, agent_id: str) -> Message:
    service.links.unlink(actor=actor, kb_id=kb_id, agent_id=agent_id)
    return Message(message=UNLINKED)


@router.get(
    "/kb/{kb_id}/agents",
    response_model=LinkedAgentList,
    responses=documented(401, 403, 404),
    openapi_extra=permission("kb:view"),
    summary="Get KB's Linked Agents",
)
def linked_agents(service: Service, actor: CurrentActor, kb_id: str) -> LinkedAgentList:
    """Linked agents by priority (highest first), then link time (oldest first)."""
    return LinkedAgentList(agents=[linked_agent_out(a) for a in service.links.agents_of(actor=actor, kb_id=kb_id)])
