"""MCP over streamable HTTP at ``/mcp``, mounted by ``notochord serve``.

Every request passes, in order:

1. the front door of local servers (the MCP specification's DNS-rebinding rule): its ``Host`` must
   name this server (the console's rule, :func:`notochord.console.guard.host_allowed`), and an
   ``Origin``, when sent, must be this same ``http(s)://<host>``; otherwise 403 (421 for the host);
2. the bearer secret of one connection, checked against the stored hash on every request, so a
   revoked secret is refused on its very next request: no secret, a wrong one, a revoked one, or
   the ``Authorization`` header sent more than once (readers of a repeated header disagree on which
   counts, as the REST service holds) is 401 with ``WWW-Authenticate: Bearer`` and no session.
   Before any request is served, the secrets that opened the open sessions are checked the same way
   (:mod:`~notochord.mcp_server.http_sessions`; also every :data:`SWEEP_SECONDS`, for clients that
   only hold a stream open): a revocation, whichever process made it, ends the sessions its secret
   opened on the next request of any client, their runs finished and their streams closed, as on
   the client's ``DELETE``. A secret is made for one installation of its connection, and a session
   belongs to that installation: once the connection is removed, the session cannot be carried on,
   not even with the secret of a connection made again under its name (the SDK answers as for an
   unknown session);
3. a request whose id is not a string or an integer, answered with 400 and a JSON-RPC error
   (:func:`~notochord.mcp_server.app.unanswerable_id`) instead of the SDK's 202 and silence;
4. a body not declared ``Content-Type: application/json`` (415) or past the REST service's body
   limit (413), answered with a JSON-RPC error the SDK's client can read rather than the SDK's
   plain text;
5. the SDK's session manager; a session can only be used with the secret that opened it, and, by
   its own connection, in the protocol version its ``initialize`` agreed: an ``Mcp-Protocol-Version``
   header naming another is refused with 400 (:mod:`~notochord.mcp_server.http_sessions`). A body
   that is not JSON-RPC is answered in the words stdio uses
   (:func:`~notochord.mcp_server.words.not_json`), not with pydantic's report.

Every refusal before the SDK reads the message (steps 1 to 4) is a JSON-RPC error object with
``id: null``, at the HTTP status named above, so that the SDK's client shows its words. So is every
refusal of the SDK's transport (step 5), its words replaced by the project's and its status, code
and headers kept: an unknown or ended session, or one begun with another secret, which reads the
same (404); a request of a session without its ``Mcp-Session-Id`` (400); an HTTP method the endpoint
does not take (405, with ``Allow``); an ``Accept`` header without what the answer is sent as (406);
a session's second stream (409); a body past the limit on another method than POST (413); no room
for another session (503, with ``Retry-After``). So is a ``Mcp-Protocol-Version`` header naming a
version the server does not speak, which the SDK routes to the 2026-07-28 protocol and refuses for
lacking that protocol's envelope: it is told the version is not spoken, and which are; and, in the
2026-07-28 protocol, a request whose ``params._meta`` envelope is missing or incomplete, or whose
``Mcp-Protocol-Version``, ``Mcp-Method`` or ``Mcp-Name`` header does not repeat its body or is sent
twice, told what to send (the SDK's code, ``data`` and the request's ``id`` kept: its client
negotiates the protocol by them).

The server keeps no past events to replay: a ``GET`` with ``Last-Event-ID`` opens the session's
stream as one without it (the SDK, given the header without a store of events, would answer nothing,
a bare 500).

The session's run is finished when the session ends (the client's ``DELETE``, the idle timeout,
its secret revoked, or the server stopping). A request of the 2026-07-28 protocol, which has no
sessions, is a run of its own, finished even when its client gives up on it (closes the connection)
mid-call.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
import pydantic_core
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import (
    DEFAULT_MAX_SESSIONS,
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER, NAME_BEARING_METHODS
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notochord.app import Notochord
from notochord.console.guard import host_allowed
from notochord.kbservice.validation import MAX_BODY_BYTES
from notochord.mcp_server.app import Caller, McpService, build_server
from notochord.mcp_server.connections import Connections
from notochord.mcp_server.http_sessions import SPOKEN, SWEEP_SECONDS, EndRevoked, Sessions, refuse
from notochord.mcp_server.words import (
    authorization_twice,
    envelope_lacks,
    foreign_origin,
    header_differs,
    header_twice,
    method_not_allowed,
    no_envelope,
    no_secret,
    no_session_id,
    not_acceptable,
    not_json,
    not_json_declared,
    not_json_rpc,
    stream_open,
    too_large,
    too_many_sessions,
    unanswerable_id,
    unknown_session,
    unsupported_version,
    version_differs,
    wrong_host,
)

__all__ = ["MCP_PATH", "SWEEP_SECONDS", "McpMount", "mcp_mount"]

MCP_PATH: Final = "/mcp"

log = logging.getLogger("notochord.mcp")


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


class _FrontDoor:
    """Host and Origin of a local server (DNS rebinding), before any secret is looked at."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        host = request.headers.get("host")
        if not host_allowed(host, scope.get("server")):
            await refuse(scope, receive, send, 421, wrong_host())
            return
        origin = request.headers.get("origin")
        if origin is not None and origin not in {f"http://{host}", f"https://{host}"}:
            await refuse(scope, receive, send, 403, foreign_origin(origin))
            return
        await self._app(scope, receive, send)


_LAST_EVENT_ID: Final = b"last-event-id"


class _NothingToReplay:
    """A ``GET`` asking to resume its stream from an event id (``Last-Event-ID``) opens the stream as
    one without it: the server keeps no past events (it sends none on that stream a client could have
    missed), and the SDK, given the header but no store of events, answers nothing at all, which the
    HTTP server turns into a bare 500."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != _LAST_EVENT_ID]
            scope = {**scope, "headers": headers}
        await self._app(scope, receive, send)


_CHALLENGE: Final = {"WWW-Authenticate": 'Bearer error="invalid_token", error_description="Authentication required"'}
_AUTHORIZATION: Final = b"authorization"


class _OneAuthorization:
    """A request sending ``Authorization`` more than once is refused before any secret is looked at:
    the SDK's bearer backend reads the first, a proxy in front may read the last, so which connection
    is asking would depend on the reader."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        count = sum(1 for key, _ in scope.get("headers", ()) if key.lower() == _AUTHORIZATION)
        if count > 1:
            await refuse(scope, receive, send, 401, authorization_twice(count), headers=_CHALLENGE)
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
        await refuse(scope, receive, send, 401, no_secret(), headers=_CHALLENGE)


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


def _json_problem(text: bytes) -> str:
    """Where and why ``text`` is not JSON, in the words the SDK's own parser uses elsewhere."""
    try:
        pydantic_core.from_json(text)
    except ValueError as exc:
        return str(exc)
    return "it could not be read"


_SESSION_GONE: Final = frozenset(
    {"Session not found", "Not Found: Session has been terminated", "Not Found: Invalid or expired session ID"}
)
"""What the SDK answers to a session id it does not hold (the manager), or holds but ended (the
session's transport, between its end and being forgotten)."""
_SESSION_HEADER: Final = MCP_SESSION_ID_HEADER.lower().encode()
_RETRY_AFTER: Final = "60"
"""Seconds a client is asked to wait before opening a session past the limit again. Room is made
when any session ends, which the server cannot foresee (a DELETE at any moment, an idle session only
after its timeout); a minute keeps a retrying client from hammering, and the words say how to make
room sooner."""


@dataclass(frozen=True)
class _Asked:
    """What a refusal's words depend on: the request's HTTP method, its body when a POST, whether it
    named a session, and its headers."""

    method: str
    body: bytes
    in_session: bool
    headers: Headers

    @property
    def version(self) -> str | None:
        """The protocol version the ``Mcp-Protocol-Version`` header names, as the SDK routes by it."""
        return self.headers.get(MCP_PROTOCOL_VERSION_HEADER)


@dataclass(frozen=True)
class _Said:
    """The project's words for one of the SDK's answers: the message, the JSON-RPC code when it
    changes, and headers to add."""

    message: str
    code: int | None = None
    headers: tuple[tuple[bytes, bytes], ...] = ()


class _OwnWords:
    """The SDK's edges, in the project's words.

    - A request whose id cannot be answered is refused with 400 before the SDK reads it as a
      notification (a 202 and no reply): -32600 with ``id: null``, the id being unusable.
    - Every answer of the SDK at 400 or above is read again before it is sent. Its status, its
      JSON-RPC code, ``id: null`` and its headers stay; its words are replaced by the project's:
      pydantic's report (model names, ``input_value=…``, links to pydantic's site) or, in the
      stateless protocol, a bare "Parse error", which the body read here lets be told where; an
      unknown or ended session; a request of a session without its id; an HTTP method or an
      ``Accept`` header the endpoint does not take; a session's second stream; a body past the
      limit on another method than POST; no room for another session (503, with ``Retry-After``); a
      protocol version the server does not speak; the 2026-07-28 protocol's envelope and headers.
      The answers the SDK sends without a JSON-RPC body (the stateless protocol's 405 and 406, the
      plain-text 413) get one. An answer not recognised is sent as it was.
    """

    def __init__(self, app: ASGIApp, sessions: StreamableHTTPSessionManager) -> None:
        self._app = app
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = b""
        if scope["type"] == "http" and scope["method"] == "POST":
            # the SDK would answer these two in plain text, which its own client cannot read
            if not _declared_json(scope):
                await refuse(scope, receive, send, 415, not_json_declared())
                return
            body, receive = await _read_body(scope, receive)
            if body is _TOO_LARGE:
                await refuse(scope, receive, send, 413, too_large(MAX_BODY_BYTES))
                return
            request = body if isinstance(body, bytes) else b""
            problem = unanswerable_id(request) if request else None
            if problem is not None:
                await refuse(scope, receive, send, 400, problem)
                return
        headers = Headers(scope=scope)
        asked = _Asked(scope.get("method", ""), request, MCP_SESSION_ID_HEADER in headers, headers)
        held: list[Message] = []

        async def reword(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
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
            headers, body = self._reworded(start, b"".join(p.get("body", b"") for p in parts), asked)
            headers = [*headers, (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": b"" if asked.method == "HEAD" else body})

        await self._app(scope, receive, reword)

    def _reworded(self, start: Message, body: bytes, asked: _Asked) -> tuple[list[tuple[bytes, bytes]], bytes]:
        """The headers (but its length) and the body of the SDK's answer ``start`` + ``body``."""
        # a refused request that named no session began none: the id the SDK drew for it names
        # nothing a client could use (the next request with it is an unknown session)
        dropped = {b"content-length"} if asked.in_session else {b"content-length", _SESSION_HEADER}
        headers = [(k, v) for k, v in start["headers"] if k.lower() not in dropped]
        answer = _error_of(body)
        said = answer["error"]["message"] if answer is not None else body.decode("utf-8", "replace")
        allowed = [m.strip() for k, v in headers if k.lower() == b"allow" for m in v.decode("latin-1").split(",")]
        own = self._words(start["status"], said, asked, allowed)
        if own is None:
            return headers, body
        if answer is None:
            answer = {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST}}
            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            headers.append((b"content-type", b"application/json"))
        answer["error"] = {**answer["error"], "message": own.message}
        if own.code is not None:
            answer["error"]["code"] = own.code
        return [*headers, *own.headers], json.dumps(answer).encode()

    def _words(self, status: int, said: str, asked: _Asked, allowed: list[str]) -> _Said | None:
        idle = round((self._sessions.session_idle_timeout or 0) / 60)
        if status == 413:
            return _Said(too_large(MAX_BODY_BYTES))
        if asked.version is not None and asked.version not in SPOKEN:
            # the SDK takes any version it does not know for the stateless protocol's and refuses the
            # request for lacking that protocol's envelope; the version itself is what is wrong
            return _Said(unsupported_version(asked.version))
        if status == 400 and (own := _envelope_words(said, asked)) is not None:
            return _Said(own)
        if status == 400 and said.startswith("Parse error: "):
            return _Said(not_json(said.removeprefix("Parse error: ").removeprefix("Invalid JSON: ")))
        if status == 400 and said == "Parse error":
            return _Said(not_json(_json_problem(asked.body)))
        if status == 400 and said.startswith(("Validation error: ", "Body must be a single JSON-RPC")):
            # JSON-RPC 2.0's code for JSON that is no request object, as stdio answers it
            return _Said(not_json_rpc(_decoded(asked.body)), types.INVALID_REQUEST)
        if status == 400 and said == "Bad Request: Missing session ID":
            return _Said(no_session_id(asked.method))
        if status == 404 and said in _SESSION_GONE:
            return _Said(unknown_session(idle))
        if status == 405:
            return _Said(method_not_allowed(asked.method, allowed or ["GET", "POST", "DELETE"]))
        if status == 406:
            return _Said(not_acceptable(stream=asked.method == "GET"))
        if status == 409 and said.startswith("Conflict: Only one SSE stream"):
            return _Said(stream_open())
        if status == 503 and said == "Too many open sessions":
            limit = self._sessions.max_sessions or 0
            return _Said(too_many_sessions(limit, idle), headers=((b"retry-after", _RETRY_AFTER.encode()),))
        return None


def _envelope_words(said: str, asked: _Asked) -> str | None:
    """The project's words for the stateless protocol's refusal ``said`` of a request that names a
    version it speaks: the envelope in ``params._meta`` or a header that does not repeat the body."""
    version = asked.version
    if version is None or version not in MODERN_PROTOCOL_VERSIONS:
        return None
    request = _object(_decoded(asked.body))
    params = _object(request.get("params"))
    meta = _object(params.get("_meta"))
    if said.startswith("params._meta must be an object carrying the required"):
        return no_envelope(version)
    if said.startswith("params._meta is missing the required envelope key(s)"):
        return envelope_lacks(
            version, [k for k in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if k not in meta]
        )
    if said == f"{MCP_PROTOCOL_VERSION_HEADER} header does not match the request envelope's protocol version":
        return version_differs(version, meta.get(PROTOCOL_VERSION_META_KEY))
    if said == f"{MCP_METHOD_HEADER} header does not match the request body's method":
        return header_differs("Mcp-Method", asked.headers.get(MCP_METHOD_HEADER), "method", request.get("method"))
    if said.startswith(f"{MCP_NAME_HEADER} header does not match the request body's "):
        field = NAME_BEARING_METHODS.get(str(request.get("method")), "name")
        return header_differs("Mcp-Name", asked.headers.get(MCP_NAME_HEADER), f"params.{field}", params.get(field))
    if said.endswith(" header appears more than once"):
        header = said.removesuffix(" header appears more than once")
        return header_twice("-".join(part[:1].upper() + part[1:] for part in header.split("-")))
    return None


def _decoded(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (what the refusal then names is missing)."""
    return value if isinstance(value, dict) else {}


def _error_of(body: bytes) -> dict[str, Any] | None:
    """``body`` when it is a JSON-RPC error whose message is a string, else ``None``."""
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), dict):
        return None
    return answer if isinstance(answer["error"].get("message"), str) else None


def _resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    user = request.scope.get("user") if isinstance(request, Request) else None
    installation = user.access_token.subject if isinstance(user, AuthenticatedUser) else None
    if not isinstance(user, AuthenticatedUser) or installation is None:
        # the front door lets nothing through without a secret; this is a second lock
        raise PermissionError("an MCP request over HTTP without a verified connection")
    assert isinstance(request, Request)
    # the 2026-07-28 protocol has no sessions: an Mcp-Session-Id sent with it names none of the
    # caller's (its own would have been refused for the version), and keyed by it, the request's
    # run would stay open until the server stops
    key = None if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else request.headers.get(MCP_SESSION_ID_HEADER)
    return Caller(user.access_token.client_id, key, "http", installation)


class McpMount:
    """The ``/mcp`` route and the session manager the app's lifespan runs; ``sweep_seconds`` is how
    often the open sessions' secrets are checked when no request comes (:data:`SWEEP_SECONDS`)."""

    def __init__(
        self, nc: Notochord, *, max_sessions: int = DEFAULT_MAX_SESSIONS, sweep_seconds: float = SWEEP_SECONDS
    ) -> None:
        self._sweep_seconds = sweep_seconds
        self.service = McpService(lambda: Connections(nc.personal))
        server = build_server(self.service, _resolve)
        self.sessions = Sessions(
            self.service,
            app=server,
            max_request_body_size=MAX_BODY_BYTES,
            security_settings=None,
            max_sessions=max_sessions,
        )
        served = _OwnWords(_NothingToReplay(StreamableHTTPASGIApp(self.sessions)), self.sessions)
        guarded: ASGIApp = AuthenticationMiddleware(
            EndRevoked(_RequireConnection(served), self.sessions),
            backend=BearerAuthBackend(_Verifier(self.service)),
        )
        self.route = Route(MCP_PATH, endpoint=_FrontDoor(_OneAuthorization(guarded)), name="mcp")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            try:
                async with anyio.create_task_group() as sweeping:
                    sweeping.start_soon(self.sessions.sweep_every, self._sweep_seconds)
                    try:
                        yield
                    finally:
                        sweeping.cancel_scope.cancel()
            finally:
                await anyio.to_thread.run_sync(self.service.close_all)


def mcp_mount(nc: Notochord) -> McpMount:
    """MCP over streamable HTTP for the personal space's connections of ``nc``."""
    return McpMount(nc)
