"""Search within a knowledge base, retrieval for an agent, and a knowledge base's graph (OD-B07 as
overridden): ``POST /kb/{kb_id}/search``, ``POST /agents/{agent_id}/retrieve``, ``GET /kb/{kb_id}/graph``.

Search and retrieval answer with bodies written straight from the passages
(:mod:`notochord.server.routes.passages_json`): the bytes their response models would write, without
building and re-validating a model per passage. The models stay declared for the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from notochord.kbservice.retrieval import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from notochord.kbservice.validation import given_once
from notochord.server.deps import BodyCaller, CurrentActor, Service, json_object_body, permission
from notochord.server.errors import documented
from notochord.server.routes.models import (
    GraphOut,
    RetrieveResults,
    SearchResults,
    graph_out,
)
from notochord.server.routes.passages_json import json_response, retrieve_results_json, search_results_json

__all__ = ["router"]

router = APIRouter(tags=["retrieval"])

_SEARCH_FIELDS = {
    "query": {"type": "string", "description": "What to look for; an empty query lists the newest passages."},
    "limit": {
        "type": "integer",
        "default": DEFAULT_SEARCH_LIMIT,
        "minimum": 1,
        "description": f"Maximum passages: a whole number of 1 or more (at most {MAX_SEARCH_LIMIT} are returned).",
    },
    "filters": {
        "type": "object",
        "description": "Only timeRange: {from?, to?} on the document date (ISO date or time).",
        "properties": {"timeRange": {"type": "object"}},
    },
}
_RETRIEVE_FIELDS = {key: value for key, value in _SEARCH_FIELDS.items() if key != "filters"}


@router.post(
    "/kb/{kb_id}/search",
    response_model=SearchResults,
    responses=documented(400, 401, 403, 404, 413, 415),
    openapi_extra=permission("kb:view", body=json_object_body(_SEARCH_FIELDS, required=["query"])),
    summary="Search Knowledge Base",
)
def search_knowledge_base(call: BodyCaller, kb_id: str, request: Request) -> Response:
    """Hybrid (full text and vector) search within one knowledge base, best first."""
    body = call.body.declared(request.headers)
    passages = call.service.retrieval.search(actor=call.actor, kb_id=kb_id, body=body)
    return json_response(search_results_json(passages))


@router.post(
    "/agents/{agent_id}/retrieve",
    response_model=RetrieveResults,
    responses=documented(400, 401, 403, 404, 413, 415),
    openapi_extra=permission("agent:view", body=json_object_body(_RETRIEVE_FIELDS, required=["query"])),
    summary="Retrieve for Agent",
)
def retrieve_for_agent(call: BodyCaller, agent_id: str, request: Request) -> Response:
    """Passages from the agent's linked knowledge bases, fused; ties go to the higher link priority."""
    body = call.body.declared(request.headers)
    passages = call.service.retrieval.retrieve(actor=call.actor, agent_id=agent_id, body=body)
    return json_response(retrieve_results_json(passages))


@router.get(
    "/kb/{kb_id}/graph",
    response_model=GraphOut,
    responses=documented(400, 401, 403, 404),
    openapi_extra=permission("kb:view"),
    summary="Knowledge Graph",
)
def knowledge_graph(
    service: Service,
    actor: CurrentActor,
    kb_id: str,
    request: Request,
    limit: Annotated[
        str | None, Query(description="Maximum entities: a whole number of 1 or more (default 50; at most 100).")
    ] = None,
) -> GraphOut:
    """Entities named in the knowledge base's documents and how often two appear in one passage."""
    given_once(request.query_params.multi_items(), ("limit",))
    return graph_out(service.retrieval.graph(actor=actor, kb_id=kb_id, limit=limit))
