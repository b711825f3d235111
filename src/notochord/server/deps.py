"""What every route receives: the service, the authenticated actor, the raw body, its permission label.

Rules:

- Authentication runs first for every route (401 before anything else).
- Bodies are read raw and handed to the domain, which parses them after its permission checks, so a
  refused caller gets 403 whatever the body holds (OD-B12).
- Every route declares the permission check it asks as ``x-permission`` in the OpenAPI document;
  a test walks every route against a table of expected checks.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from notochord.kbservice import Actor, JsonBody, KbService
from notochord.server.auth import Authenticator

__all__ = ["CurrentActor", "RawBody", "Service", "json_object_body", "permission"]


def _service(request: Request) -> KbService:
    service: KbService = request.app.state.kb
    return service


def _actor(request: Request) -> Actor:
    authenticator: Authenticator = request.app.state.authenticator
    return authenticator.authenticate(
        authorization=request.headers.get("authorization"),
        headers=request.headers,
        peer=request.client.host if request.client is not None else None,
    )


async def _body(request: Request, _actor: Annotated[Actor, Depends(_actor)]) -> JsonBody:
    return JsonBody(await request.body())


Service = Annotated[KbService, Depends(_service)]
CurrentActor = Annotated[Actor, Depends(_actor)]
RawBody = Annotated[JsonBody, Depends(_body)]


def permission(label: str, *, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` of a route: its permission label and, when it takes one, its body schema."""
    extra: dict[str, Any] = {"x-permission": label}
    if body is not None:
        extra["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": body}},
        }
    return extra


def json_object_body(properties: dict[str, Any], *, required: list[str] | None = None) -> dict[str, Any]:
    """A JSON-schema object with ``properties``; other keys are allowed and ignored."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
