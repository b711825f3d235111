"""What every route receives: the service, the authenticated actor, the raw body, its permission label.

Rules:

- Authentication runs first for every route (401 before anything else).
- The service and the caller are resolved on the event loop, not in the threadpool: neither touches
  the store (a token's signature is checked in microseconds and a verified token is remembered), and
  a threadpool hop per dependency cost more than the work itself. Only the route's own store work
  goes to the threadpool.
- Bodies are read raw and handed to the domain, which parses them after its permission checks, so a
  refused caller gets 403 whatever the body holds (OD-B12).
- A body is read as a bounded stream: a declared ``Content-Length`` over the limit is refused before
  anything is read, and a body that grows past the limit is refused as soon as it does (413), so a
  huge body never sits in memory.
- Every route declares the permission check it asks as ``x-permission`` in the OpenAPI document;
  a test walks every route against a table of expected checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.types import Message

from notochord.kbservice import Actor, JsonBody, KbService
from notochord.kbservice.errors import KbAuthenticationError, KbPayloadTooLargeError
from notochord.kbservice.validation import MAX_BODY_BYTES
from notochord.server.auth import Authenticator

__all__ = [
    "BodyCall",
    "BodyCaller",
    "Call",
    "Caller",
    "CurrentActor",
    "RawBody",
    "Service",
    "json_object_body",
    "limited",
    "permission",
    "read_limited",
]


async def _service(request: Request) -> KbService:
    service: KbService = request.app.state.kb
    return service


async def _actor(request: Request) -> Actor:
    authenticator: Authenticator = request.app.state.authenticator
    given = request.headers.getlist("authorization")
    if len(given) > 1:
        # one reader takes the first, another the last: who is asking must not depend on which
        raise KbAuthenticationError(
            f"Authorization is sent {len(given)} times; send one header: Authorization: Bearer <token>"
        )
    return authenticator.authenticate(
        authorization=given[0] if given else None,
        headers=request.headers,
        peer=request.client.host if request.client is not None else None,
    )


def _too_large(limit: int) -> KbPayloadTooLargeError:
    return KbPayloadTooLargeError(f"the request body is over the limit of {limit} bytes")


def _check_declared(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)


def limited(request: Request, limit: int) -> Request:
    """The same request, whose body raises :class:`KbPayloadTooLargeError` once it passes ``limit``.

    A declared ``Content-Length`` over the limit is refused here, before anything is read.
    """
    _check_declared(request, limit)
    received = 0
    upstream = request.receive

    async def receive() -> Message:
        nonlocal received
        message = await upstream()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise _too_large(limit)
        return message

    return Request(request.scope, receive)


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body of ``request``, read chunk by chunk and refused (413) past ``limit`` bytes."""
    _check_declared(request, limit)
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def _body(request: Request, _actor: Annotated[Actor, Depends(_actor)]) -> JsonBody:
    return JsonBody(await read_limited(request, MAX_BODY_BYTES))


Service = Annotated[KbService, Depends(_service)]
CurrentActor = Annotated[Actor, Depends(_actor)]
RawBody = Annotated[JsonBody, Depends(_body)]


@dataclass(frozen=True)
class Call:
    """The service and the authenticated caller, resolved as one dependency."""

    service: KbService
    actor: Actor


@dataclass(frozen=True)
class BodyCall(Call):
    """The service, the authenticated caller and the raw body, resolved as one dependency."""

    body: JsonBody


async def _call(request: Request) -> Call:
    return Call(await _service(request), await _actor(request))


async def _body_call(request: Request) -> BodyCall:
    actor = await _actor(request)  # 401 before the body is read
    return BodyCall(await _service(request), actor, JsonBody(await read_limited(request, MAX_BODY_BYTES)))


# FastAPI resolves each dependency on its own (its cache, then the request's query, header and
# cookie parameters once more): one dependency in place of three halves that work on the busiest
# routes (search, retrieval, listing documents)
Caller = Annotated[Call, Depends(_call)]
BodyCaller = Annotated[BodyCall, Depends(_body_call)]


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
