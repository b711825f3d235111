"""Per-resource grants, for organization owners and admins (OD-B10 as overridden):
``/api/knowledge/kb/{kb_id}/grants`` and ``/api/knowledge/agents/{agent_id}/grants``.

``PUT …/grants/{user_id}`` sets the user's level (``view``, ``edit`` or ``delete``); ``DELETE`` removes
it and succeeds when there was none.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from notochord.kbservice import ResourceType
from notochord.server.deps import CurrentActor, RawBody, Service, json_object_body, permission
from notochord.server.errors import documented
from notochord.server.routes.models import GrantEnvelope, GrantList, grant_out

__all__ = ["router"]

router = APIRouter(tags=["grants"])

_KB = ResourceType.KB
_AGENT = ResourceType.AGENT
_BODY = json_object_body(
    {"permission": {"type": "string", "enum": ["view", "edit", "delete"]}}, required=["permission"]
)


@router.get(
    "/kb/{kb_id}/grants",
    response_model=GrantList,
    responses=documented(401, 403, 404),
    openapi_extra=permission("kb:grants"),
    summary="List grants on a knowledge base",
)
def list_kb_grants(service: Service, actor: CurrentActor, kb_id: str) -> GrantList:
    return GrantList(grants=[grant_out(g) for g in service.grants.list(actor=actor, type=_KB, resource_id=kb_id)])


@router.put(
    "/kb/{kb_id}/grants/{user_id}",
    response_model=GrantEnvelope,
    responses=documented(400, 401, 403, 404, 413, 415, 507),
    openapi_extra=permission("kb:grants", body=_BODY),
    summary="Grant a user view, edit or delete on a knowledge base",
)
def put_kb_grant(
    service: Service, actor: CurrentActor, kb_id: str, user_id: str, body: RawBody, request: Request
) -> GrantEnvelope:
    declared = body.declared(request.headers)
    grant = service.grants.put(actor=actor, type=_KB, resource_id=kb_id, user_id=user_id, body=declared)
    return GrantEnvelope(grant=grant_out(grant))


@router.delete(
    "/kb/{kb_id}/grants/{user_id}",
    status_code=204,
    response_class=Response,
    responses=documented(400, 401, 403, 404, 507),
    openapi_extra=permission("kb:grants"),
    summary="Remove a user's grant on a knowledge base",
)
def delete_kb_grant(service: Service, actor: CurrentActor, kb_id: str, user_id: str) -> Response:
    service.grants.delete(actor=actor, type=_KB, resource_id=kb_id, user_id=user_id)
    return Response(status_code=204)


@router.get(
    "/agents/{agent_id}/grants",
    response_model=GrantList,
    responses=documented(401, 403, 404),
    openapi_extra=permission("agent:grants"),
    summary="List grants on an agent",
)
def list_agent_grants(service: Service, actor: CurrentActor, agent_id: str) -> GrantList:
    return GrantList(grants=[grant_out(g) for g in service.grants.list(actor=actor, type=_AGENT, resource_id=agent_id)])


@router.put(
    "/agents/{agent_id}/grants/{user_id}",
    response_model=GrantEnvelope,
    responses=documented(400, 401, 403, 404, 413, 415, 507),
    openapi_extra=permission("agent:grants", body=_BODY),
    summary="Grant a user view, edit or delete on an agent",
)
def put_agent_grant(
    service: Service, actor: CurrentActor, agent_id: str, user_id: str, body: RawBody, request: Request
) -> GrantEnvelope:
    declared = body.declared(request.headers)
    grant = service.grants.put(actor=actor, type=_AGENT, resource_id=agent_id, user_id=user_id, body=declared)
    return GrantEnvelope(grant=grant_out(grant))


@router.delete(
    "/agents/{agent_id}/grants/{user_id}",
    status_code=204,
    response_class=Response,
    responses=documented(400, 401, 403, 404, 507),
    openapi_extra=permission("agent:grants"),
    summary="Remove a user's grant on an agent",
)
def delete_agent_grant(service: Service, actor: CurrentActor, agent_id: str, user_id: str) -> Response:
    service.grants.delete(actor=actor, type=_AGENT, resource_id=agent_id, user_id=user_id)
    return Response(status_code=204)
