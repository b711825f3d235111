"""MCP over streamable HTTP at ``/mcp``, mounted by ``notochord serve``.

Every request passes, in order:

1. the front door of local servers (the MCP specification's DNS-rebinding rule): its ``Host`` must
   name this server (the console's rule, :func:`notochord.console.guard.host_allowed`), and an
   ``Origin``, when sent, must be this same ``http(s)://<host>``; otherwise 403 (421 for the host);
2. the bearer secret of one connection, checked against the stored hash on every request, so a
   revoked secret is refused on its very next request: no secret, a wrong one or a revoked one is
   401 with ``WWW-Authenticate: Bearer`` and no session. A secret is made for one installation of
   its connection, and a session belongs to that installation: once the connection is removed, the
   session cannot be carried on, not even with the secret of a connection made again under its
   name (the SDK answers as for an unknown session);
3. a request whose id is not a string or an integer, answered with 400 and a JSON-RPC error
   (:func:`~notochord.mcp_server.app.unanswerable_id`) instead of the SDK's 202 and silence;
4. a body not declared ``Content-Type: application/json`` (415) or past the REST service's body
   limit (413), answered with a JSON-RPC error the SDK's client can read rather than the SDK's
   plain text;
5. the SDK's session manager; a session can only be used with the secret that opened it. A body
   that is not JSON-RPC is answered in the words stdio uses
   (:func:`~notochord.mcp_server.app.not_json`), not with pydantic's report.

Every refusal before the SDK reads the message (steps 1 to 4) is a JSON-RPC error object with
``id: null``, at the HTTP status named above, so that the SDK's client shows its words.

The session's run is finished when the session ends (the client's ``DELETE``, the idle timeout,
or the server stopping). A request of the 2026-07-28 protocol, which has no sessions, is a run of
its own.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notochord.app import Notochord
from notochord.console.guard import host_allowed
from notochord.kbservice.validation import MAX_BODY_BYTES
from notochord.mcp_server.app import (
    Caller,
    McpService,
    build_server,
    foreign_origin,
    no_secret,
    not_json,
    not_json_declared,
    not_json_rpc,
    too_large,
    unanswerable_id,
    wrong_host,
)
from notochord.mcp_server.connections import Connections

__all__ = ["MCP_PATH", "McpMount", "mcp_mount"]

MCP_PATH: Final = "/mcp"


class _Verifier:
    """The SDK's token verifier: a bearer secret → its connection, or ``None``."""

    def __init__(self, service: McpService) -> None:
        self._service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await anyio.to_thread.run_sync(lambda: self._service.connections.identify(token))
        if found is None:
            return None
        name, installation = found
        # the SDK lets a session be used only by the principal that opened it, (client, issuer,
        # subject): with the installation as the subject, a connection made again under the same
        # name is another principal
        return AccessToken(token=token, client_id=name, scopes=[], subject=installation)


class _Sessions(StreamableHTTPSessionManager):
    """The SDK's session manager, also finishing the session's run when the session goes."""

    def __init__(self, service: McpService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._service = service

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        await super()._discard_session(session_id, transport)
        await anyio.to_thread.run_sync(lambda: self._service.close_key(session_id))


class _FrontDoor:
    """Host and Origin of a local server (DNS rebinding), before any secret is looked at."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        host = request.headers.get("host")
        if not host_allowed(host, scope.get("server")):
            await _refuse(scope, receive, send, 421, wrong_host())
            return
        origin = request.headers.get("origin")
        if origin is not None and origin not in {f"http://{host}", f"https://{host}"}:
            await _refuse(scope, receive, send, 403, foreign_origin(origin))
            return
        await self._app(scope, receive, send)


class _RequireConnection:
    """No request without the verified secret of a connection: 401 with ``WWW-Authenticate: Bearer``
    (RFC 6750), its body a JSON-RPC error, in place of the SDK's OAuth-shaped body."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self._app(scope, receive, send)
            return
        challenge = {"WWW-Authenticate": 'Bearer error="invalid_token", error_description="Authentication required"'}
        await _refuse(scope, receive, send, 401, no_secret(), headers=challenge)


_TOO_LARGE: Final = object()
"""What :func:`_read_body` hands back for a body past the limit."""


async def _read_body(scope: Scope, receive: Receive) -> tuple[bytes | object | None, Receive]:
    """The request's body and a ``receive`` that hands it on again; :data:`_TOO_LARGE` for a body
    past the limit (read no further than the limit), ``None`` when the client went away first."""
    declared = Headers(scope=scope).get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _TOO_LARGE, receive
    held: list[Message] = []
    size, complete = 0, False
    while not complete and size <= MAX_BODY_BYTES:
        message = await receive()
        held.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        complete = not message.get("more_body", False)
    if size > MAX_BODY_BYTES:
        return _TOO_LARGE, receive

    async def replay() -> Message:
        return held.pop(0) if held else await receive()

    body = b"".join(m.get("body", b"") for m in held) if complete else None
    return body, replay


def _declared_json(scope: Scope) -> bool:
    media_type = Headers(scope=scope).get("content-type", "").split(";")[0].strip().lower()
    return media_type == "application/json"


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, message: str, *, headers: dict[str, str] | None = None
) -> None:
    """A refusal before the message was read: a JSON-RPC error with ``id: null`` at ``status``."""
    error = {"code": types.INVALID_REQUEST, "message": message}
    await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status, headers=headers)(scope, receive, send)


def _json_problem(text: bytes) -> str:
    """Where and why ``text`` is not JSON, in the words the SDK's own parser uses elsewhere."""
    try:
        pydantic_core.from_json(text)
    except ValueError as exc:
        return str(exc)
    return "it could not be read"


class _OwnWords:
    """The SDK's edges, in the project's words.

    - A request whose id cannot be answered is refused with 400 before the SDK reads it as a
      notification (a 202 and no reply): -32600 with ``id: null``, the id being unusable.
    - The SDK's answers to a body that is not JSON-RPC are reworded: it sends pydantic's report
      (model names, ``input_value=…``, links to pydantic's site) or, in the stateless protocol, a
      bare "Parse error", which the body read here lets be told where.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = b""
        if scope["type"] == "http" and scope["method"] == "POST":
            # the SDK would answer these two in plain text, which its own client cannot read
            if not _declared_json(scope):
                await _refuse(scope, receive, send, 415, not_json_declared())
                return
            body, receive = await _read_body(scope, receive)
            if body is _TOO_LARGE:
                await _refuse(scope, receive, send, 413, too_large(MAX_BODY_BYTES))
                return
            request = body if isinstance(body, bytes) else b""
            problem = unanswerable_id(request) if request else None
            if problem is not None:
                await _refuse(scope, receive, send, 400, problem)
                return
        held: list[Message] = []

        async def reword(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 400:
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message.get("more_body", False):
                return
            start, *parts = held
            held.clear()
            body = self._reworded(b"".join(p.get("body", b"") for p in parts), request)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self._app(scope, receive, reword)

    @staticmethod
    def _reworded(body: bytes, request: bytes) -> bytes:
        try:
            answer = json.loads(body)
            said = answer["error"]["message"]
        except (ValueError, TypeError, KeyError):
            return body
        if not isinstance(said, str):
            return body
        if said.startswith("Parse error: "):
            answer["error"]["message"] = not_json(said.removeprefix("Parse error: ").removeprefix("Invalid JSON: "))
        elif said == "Parse error":
            answer["error"]["message"] = not_json(_json_problem(request))
        elif said.startswith(("Validation error: ", "Body must be a single JSON-RPC")):
            # JSON-RPC 2.0's code for JSON that is no request object, as stdio answers it
            answer["error"] = {**answer["error"], "code": types.INVALID_REQUEST, "message": not_json_rpc()}
        else:
            return body
        return json.dumps(answer).encode()


def _resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    user = request.scope.get("user") if isinstance(request, Request) else None
    installation = user.access_token.subject if isinstance(user, AuthenticatedUser) else None
    if not isinstance(user, AuthenticatedUser) or installation is None:
        # the front door lets nothing through without a secret; this is a second lock
        raise PermissionError("an MCP request over HTTP without a verified connection")
    assert isinstance(request, Request)
    return Caller(user.access_token.client_id, request.headers.get(MCP_SESSION_ID_HEADER), "http", installation)


class McpMount:
    """The ``/mcp`` route and the session manager the app's lifespan runs."""

    def __init__(self, nc: Notochord) -> None:
        self.service = McpService(lambda: Connections(nc.personal))
        server = build_server(self.service, _resolve)
        self.sessions = _Sessions(
            self.service, app=server, max_request_body_size=MAX_BODY_BYTES, security_settings=None
        )
        guarded: ASGIApp = AuthenticationMiddleware(
            _RequireConnection(_OwnWords(StreamableHTTPASGIApp(self.sessions))),
            backend=BearerAuthBackend(_Verifier(self.service)),
        )
        self.route = Route(MCP_PATH, endpoint=_FrontDoor(guarded), name="mcp")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            try:
                yield
            finally:
                await anyio.to_thread.run_sync(self.service.close_all)


def mcp_mount(nc: Notochord) -> McpMount:
    """MCP over streamable HTTP for the personal space's connections of ``nc``."""
    return McpMount(nc)
