"""HEAD beside every GET of the service (RFC 9110 §9.3.2: HEAD is GET without the body).

FastAPI routes answer only the methods they declare, so a ``HEAD /api/knowledge/kb`` was refused
with 405 while its ``Allow`` header named GET. :class:`HeadAsGet` routes a HEAD request as GET when
a route serves GET on that path and none takes HEAD there itself, and sends the answer's status and
headers (``Content-Length`` included) without its body. Authentication, not-found and every other
refusal are GET's, told in the head alone. Routes that take HEAD themselves (the MCP endpoint,
whose GET opens an event stream, the static files of /docs) keep answering it. The console, mounted
at ``/``, takes every method there and applies this middleware over its own routes, in front of its
guard (:func:`notochord.console.create_console`).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet", "serves_get"]


def _full(routes: Sequence[BaseRoute], scope: Scope, method: str) -> bool:
    probe = {**scope, "method": method}
    return any(route.matches(probe)[0] == Match.FULL for route in routes)


def serves_get(routes: Sequence[BaseRoute], scope: Scope) -> bool:
    """Whether ``scope``'s path is served for GET but no route takes HEAD there itself: the case in
    which routing would refuse a HEAD with 405 while GET is answered."""
    return _full(routes, scope, "GET") and not _full(routes, scope, "HEAD")


class HeadAsGet:
    """ASGI middleware: a HEAD request that only a GET route would serve is answered as GET, bodiless."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        # the application's own list, so that routes added after the middleware still count
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or not serves_get(self.routes, scope):
            await self.app(scope, receive, send)
            return

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_head)
