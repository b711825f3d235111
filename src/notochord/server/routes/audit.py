"""The audit log and the cost ledger of the caller's organization, for owners and admins."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from notochord.kbservice.audit import AUDIT_ACTIONS
from notochord.server.deps import CurrentActor, Service, permission
from notochord.server.errors import documented
from notochord.server.routes.kb import Limit, Offset, paging_of
from notochord.server.routes.models import AuditList, UsageList, audit_out, usage_out

__all__ = ["router"]

router = APIRouter(tags=["audit"])


@router.get(
    "/audit",
    response_model=AuditList,
    responses=documented(400, 401, 403, 404),
    openapi_extra=permission("org:audit"),
    summary="Audit log",
)
def audit_log(
    service: Service,
    actor: CurrentActor,
    request: Request,
    limit: Limit = None,
    offset: Offset = None,
    action: Annotated[
        str | None,
        Query(description=f"Only entries of this action: one of {', '.join(AUDIT_ACTIONS)}."),
    ] = None,
    organization_id: Annotated[
        str | None,
        Query(alias="organizationId", description="Another organization (superadmin only).", max_length=63),
    ] = None,
) -> AuditList:
    """Audit entries of the caller's organization (or, for a superadmin, of any), newest first."""
    paging = paging_of(request, limit, offset)
    entries, total = service.audit.entries(
        actor=actor,
        paging=paging,
        action=action,
        organization_id=organization_id,
        query=request.query_params.multi_items(),
    )
    return AuditList(entries=[audit_out(e) for e in entries], total=total, limit=paging.limit, offset=paging.offset)


@router.get(
    "/usage",
    response_model=UsageList,
    responses=documented(400, 401, 403),
    openapi_extra=permission("org:audit"),
    summary="Cost records",
)
def usage(
    service: Service, actor: CurrentActor, request: Request, limit: Limit = None, offset: Offset = None
) -> UsageList:
    """Cost records (such as the vector store freed by deleting a knowledge base), newest first."""
    paging = paging_of(request, limit, offset)
    records, total = service.audit.usage(actor=actor, paging=paging)
    return UsageList(records=[usage_out(r) for r in records], total=total, limit=paging.limit, offset=paging.offset)
