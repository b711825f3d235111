"""The sessions of ``/mcp``: the SDK's session manager, bound to the secrets that opened them and to
the protocol version each agreed.

- A session remembers the secret that opened it. The secrets of the open sessions are checked
  against the store before any request is served (:class:`EndRevoked`) and every
  :data:`SWEEP_SECONDS` when none comes (:meth:`Sessions.sweep_every`): a session whose secret no
  longer identifies the installation it was opened for ends as on its client's ``DELETE``.
- A session speaks the protocol version its ``initialize`` agreed. A request of the session's own
  connection whose ``Mcp-Protocol-Version`` header names another version the server speaks is
  refused with 400 before the SDK reads it (the SDK's transport takes any of the session versions
  without comparing, and routes 2026-07-28 past the session altogether); without the header the
  agreed version is assumed. A version the server does not speak at all is left to the SDK's
  routing, whose refusal :mod:`notochord.mcp_server.http` words. With another connection's secret
  the version is not looked at: the SDK answers as for an unknown session.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notochord.errors import NotochordError
from notochord.mcp_server.app import McpService
from notochord.mcp_server.words import version_not_agreed

__all__ = ["SPOKEN", "SWEEP_SECONDS", "EndRevoked", "Sessions", "refuse", "secret_of"]

log = logging.getLogger("notochord.mcp")

SPOKEN: Final = frozenset((*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS))
"""The protocol versions the SDK serves: a request naming another in its ``Mcp-Protocol-Version``
header is routed to the stateless protocol, whose refusals then follow from the version alone."""


async def refuse(
    scope: Scope, receive: Receive, send: Send, status: int, message: str, *, headers: dict[str, str] | None = None
) -> None:
    """A refusal before the message was read: a JSON-RPC error with ``id: null`` at ``status``."""
    error = {"code": types.INVALID_REQUEST, "message": message}
    await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status, headers=headers)(scope, receive, send)


def secret_of(scope: Scope) -> AccessToken | None:
    """The verified secret of the request ``scope``, when it has one."""
    user = scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def _agreed(body: bytes) -> str | None:
    """The protocol version of the ``initialize`` answer ``body``, sent as JSON or as an event stream."""
    for line in body.splitlines():
        try:
            message = json.loads(line.removeprefix(b"data:"))
        except ValueError:
            continue
        result = message.get("result") if isinstance(message, dict) else None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            return version
    return None


_OPENER: ContextVar[AccessToken | None] = ContextVar("notochord_mcp_opener", default=None)
"""The verified secret of the request being served, for the session it may open."""

SWEEP_SECONDS: Final = 60.0
"""How often the sessions' secrets are checked when no request comes: a client that only holds its
``GET`` stream open sends none, and nothing else would end its session once its secret is revoked."""


class Sessions(StreamableHTTPSessionManager):
    """The SDK's session manager, also finishing the session's run when the session goes, ending the
    sessions whose secret was revoked, and holding each session to the protocol version it agreed."""

    def __init__(self, service: McpService, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._service = service
        self._openers: dict[str, AccessToken] = {}
        self._agreed: dict[str, str] = {}

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._version_refusal(scope)
        if refusal is not None:
            await refuse(scope, receive, send, 400, refusal)
            return
        # the SDK admits a new session without the request at hand; the secret that opened it
        # reaches the admission through the request's context
        held = _OPENER.set(secret_of(scope))
        try:
            await super()._handle_request(scope, receive, send)
        finally:
            _OPENER.reset(held)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        opener = _OPENER.get()
        if transport is not None and transport.mcp_session_id is not None and opener is not None:
            self._openers[transport.mcp_session_id] = opener
        return transport

    def _version_refusal(self, scope: Scope) -> str | None:
        """Why a request of a session of the caller's own names another version than it agreed."""
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        agreed = self._agreed.get(session_id) if session_id is not None else None
        user = scope.get("user")
        if agreed is None or not isinstance(user, AuthenticatedUser):
            return None
        if authorization_context(user) != self._session_owners.get(session_id or ""):
            # another connection's session must read as no session at all, so nothing of it is judged
            return None
        for sent in headers.getlist(MCP_PROTOCOL_VERSION_HEADER):
            if sent != agreed and sent in SPOKEN:
                return version_not_agreed(sent, agreed)
        return None

    async def _serve_opening_request(
        self, http_transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session_id = http_transport.mcp_session_id
        answer: list[bytes] = []

        async def kept(message: Message) -> None:
            # the version is taken before the client can read it, and so send the session's next request
            if message["type"] == "http.response.body" and session_id is not None and session_id not in self._agreed:
                answer.append(message.get("body", b""))
                agreed = _agreed(b"".join(answer))
                if agreed is not None and session_id in self._server_instances:
                    self._agreed[session_id] = agreed
            await send(message)

        await super()._serve_opening_request(http_transport, scope, receive, kept)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._openers.pop(session_id, None)
        self._agreed.pop(session_id, None)
        await super()._discard_session(session_id, transport)
        # the SDK discards a session from tasks that may be being cancelled; its run ends regardless
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: self._service.close_key(session_id))

    async def end_revoked(self, verified: AccessToken | None = None) -> None:
        """End every open session whose secret no longer identifies the installation it opened the
        session for (revoked, or its connection removed), as its client's ``DELETE`` would: its run
        is finished and its streams closed. ``verified`` is a secret this request already found
        valid, not looked up again.

        Each distinct secret is checked once, as a request's secret is (the store may have been
        changed by another process), so the cost grows with the connections holding sessions, not
        with the sessions.
        """
        openers = dict(self._openers)
        secrets = {o.token for o in openers.values()} - ({verified.token} if verified is not None else set())
        if not secrets:
            return
        connections = self._service.connections

        def identities() -> dict[str, tuple[str, str] | None]:
            return {secret: connections.identify(secret) for secret in secrets}

        try:
            found = await anyio.to_thread.run_sync(identities)
        except NotochordError:
            # a store that cannot be read now fails no request that does not need it; the sessions
            # are checked again on the next request or sweep
            log.warning("could not check the secrets of the open MCP sessions", exc_info=True)
            return
        for session_id, opener in openers.items():
            if opener.token in found and found[opener.token] != (opener.client_id, opener.subject):
                transport = self._server_instances.get(session_id)
                if transport is not None:
                    await self._discard_session(session_id, transport)

    async def sweep_every(self, seconds: float) -> None:
        """:meth:`end_revoked` every ``seconds``, until cancelled."""
        while True:
            await anyio.sleep(seconds)
            try:
                await self.end_revoked()
            except NotochordError:
                # a run that could not be recorded finished must not stop the sweeps, nor the server
                log.warning("could not end the MCP sessions of a revoked secret", exc_info=True)


class EndRevoked:
    """Before any request is served, the sessions of revoked secrets end: a revocation is learnt of
    on the next request, whoever sends it, and from then on nothing the secret opened goes on."""

    def __init__(self, app: ASGIApp, sessions: Sessions) -> None:
        self._app = app
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._sessions.end_revoked(secret_of(scope))
        await self._app(scope, receive, send)
