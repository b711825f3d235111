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

from starlette.routing import BaseRoute, Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet", "allowed_methods", "serves_get"]

_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _full(routes: Sequence[BaseRoute], scope: Scope, method: str) -> bool:
    probe = {**scope, "method": method}
    return any(route.matches(probe)[0] == Match.FULL for route in routes)


def serves_get(routes: Sequence[BaseRoute], scope: Scope) -> bool:
    """Whether ``scope``'s path is served for GET but no route takes HEAD there itself: the case in
    which routing would refuse a HEAD with 405 while GET is answered."""
    return _full(routes, scope, "GET") and not _full(routes, scope, "HEAD")


def _served(routes: Sequence[BaseRoute], scope: Scope) -> set[str]:
    found: set[str] = set()
    for route in routes:
        if isinstance(route, Mount):
            # a mount matches a path whatever the method: what it serves is its own routes' answer
            match, child = route.matches(scope)
            if match is Match.NONE:
                continue
            if isinstance(route.app, StaticFiles):
                found |= {"GET", "HEAD"}
            else:
                found |= _served(route.routes, {**scope, **child})
            continue
        found |= {method for method in _METHODS if route.matches({**scope, "method": method})[0] is Match.FULL}
    return found


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route serves on ``scope``'s path, HEAD wherever GET is: the ``Allow`` of a 405
    (RFC 9110 §15.5.6), in alphabetical order.

    Starlette's own ``Allow`` names only the methods of the first route whose path matched, though
    one path is often served by a route per method (``GET`` and ``POST /kb``, the sign-in page), and
    a mount (the static files) matches whatever the method.
    """
    # a mount that refused the method (the static files) has moved ``root_path`` to itself: the
    # routes are matched from the application's own root again
    root = scope.get("app_root_path", scope.get("root_path", ""))
    allowed = _served(routes, {**scope, "root_path": root})
    if "GET" in allowed:
        allowed.add("HEAD")  # answered as GET by HeadAsGet wherever no route takes HEAD itself
    return [method for method in _METHODS if method in allowed]


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
