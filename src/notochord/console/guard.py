"""The console's front door: which requests reach a page at all.

Every request, before any route runs:

- its ``Host`` must name this server: ``localhost``, ``127.0.0.1`` or ``[::1]``, or the address the
  connection arrived on, with the port it arrived on. A page on another site that rebinds its own
  name to 127.0.0.1 therefore still sends its own name and is refused (DNS rebinding);
- an ``Origin``, when sent, must be this same ``<scheme>://<host>``, sent once, and a browser's
  ``Sec-Fetch-Site: cross-site`` or ``same-site`` (another port of the same host) is refused
  wherever it stands among the headers: another site can neither read nor drive the console (it
  may only link to the sign-in page, which then asks before it signs in);
- a request sending a body must declare its length, within :data:`MAX_BODY`: a body of unstated
  length (chunked) is refused before it is read. A request that sends no body (an OPTIONS, a
  DELETE) has no length to declare and goes on to routing, which answers a method a page does not
  serve with 405 and ``Allow``;
- apart from ``/login`` and the static files, it must carry a valid session cookie;
- a WebSocket, which any site may open, is never accepted: the console serves none.

The CSRF token of state-changing requests is checked by the app's one dependency
(:func:`notochord.console.forms.verified_form`), which sees the form body.

Every answer that passes the guard leaves with the console's policy headers
(:data:`notochord.console.render.POLICY_HEADERS`), whether a page rendered them or not: a redirect,
a static file, Starlette's own answers. All but the static files are also ``no-store``.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notochord.console.auth import ConsoleKeys
from notochord.console.forms import SIGN_IN_PATH
from notochord.console.i18n import choose_lang, text
from notochord.console.render import NO_STORE, POLICY_HEADERS, render_page

__all__ = ["MAX_BODY", "SESSION_COOKIE", "ConsoleGuard", "from_another_site", "host_allowed"]

SESSION_COOKIE: Final = "notochord_console"
MAX_BODY: Final = 16 * 1024 * 1024
"""Bytes a state-changing request may send (an uploaded gem package is the largest)."""
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})
_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_STATIC: Final = "/static/"
_POLICY_VIOLATION: Final = 1008
_ELSEWHERE: Final = frozenset({"cross-site", "same-site"})
# the static files are the same for everybody and may be cached; every other answer is private
_PRIVATE_HEADERS: Final = {**NO_STORE, **POLICY_HEADERS}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(hostname, port)`` of a Host header value; ``None`` when it is malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, _, port_text = value.partition(":") if value.count(":") <= 1 else ("", "", None)
        port_text = port_text or None
    if not name:
        return None
    if port_text is None:
        return name, None
    # isdigit alone also holds for "²", which int() refuses
    ok = port_text.isascii() and port_text.isdigit() and len(port_text) <= 5
    return (name, int(port_text)) if ok else None


def _same_address(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def host_allowed(host_header: str | None, server: tuple[str, int | None] | None) -> bool:
    """Whether ``host_header`` names the server listening on ``server`` (its local address and port)."""
    if not host_header or server is None:
        return False
    parsed = _split_host(host_header)
    if parsed is None:
        return False
    name, port = parsed
    bound_host, bound_port = server
    default_port = 80
    if (port if port is not None else default_port) != (bound_port if bound_port is not None else default_port):
        return False
    return name in _LOOPBACK_NAMES or _same_address(name, bound_host)


def from_another_site(headers: Headers) -> bool:
    """Whether a browser says the request comes from a page of another site (any copy of its
    ``Sec-Fetch-Site`` counts).

    A browser calls ``localhost:3000`` the same site as the console on ``localhost:8420`` and sends
    the console's ``SameSite=Strict`` cookie with its requests; to the person it is another web
    application all the same, and one that could time the console's answers without reading them.
    """
    return any(site.strip().lower() in _ELSEWHERE for site in headers.getlist("sec-fetch-site"))


def _refusal(request: Request, status: int, key: str) -> Response:
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    return render_page(
        request,
        "refused.html",
        {"lang": lang, "title": text("refused_title", lang), "message": text(key, lang)},
        status_code=status,
    )


class ConsoleGuard:
    """ASGI middleware applying the rules of this module; the session lands in ``request.state``."""

    def __init__(self, app: ASGIApp, *, keys: ConsoleKeys) -> None:
        self._app = app
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # a browser opens a WebSocket from any site, bound by no same-origin rule; the console
            # serves none, so none is accepted, whoever asks (1008: policy violation)
            await send({"type": "websocket.close", "code": _POLICY_VIOLATION, "reason": ""})
            return
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        static = scope["path"].startswith(_STATIC)

        async def protected(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in (POLICY_HEADERS if static else _PRIVATE_HEADERS).items():
                    # a route's own stricter value (the sign-in's no-referrer) stays
                    headers.setdefault(name, value)
            await send(message)

        request = Request(scope)
        response = self._check(request)
        if response is not None:
            await response(scope, receive, protected)
            return
        await self._app(scope, receive, protected)

    def _check(self, request: Request) -> Response | None:
        path = request.url.path
        headers: Headers = request.headers
        server = request.scope.get("server")
        if not host_allowed(headers.get("host"), server):
            return _refusal(request, 421, "refused_host")
        # every copy of a header counts: a request naming two origins names a foreign one
        origins = headers.getlist("origin")
        if origins and origins != [f"{request.url.scheme}://{headers['host']}"]:
            return _refusal(request, 403, "refused_origin")
        # a sign-in link may be opened from a chat or a web mail: its page only asks, and signs
        # in by a form posted from the console itself (notochord.console.routes.session)
        opens_sign_in = path == SIGN_IN_PATH and request.method in SAFE_METHODS
        if from_another_site(headers) and not opens_sign_in:
            return _refusal(request, 403, "refused_cross_site")
        if request.method not in SAFE_METHODS:
            length = headers.get("content-length")
            if length is None:
                # without Content-Length or Transfer-Encoding an HTTP/1.1 request has no body
                # (RFC 9112 §6.3), and nothing to bound
                if "transfer-encoding" in headers:
                    return _refusal(request, 411, "refused_length")
                length = "0"
            if not length.isascii() or not length.isdigit():
                return _refusal(request, 411, "refused_length")
            # more digits than MAX_BODY has is too large, without asking int() to read thousands
            if len(length.lstrip("0")) > len(str(MAX_BODY)) or int(length) > MAX_BODY:
                return _refusal(request, 413, "refused_too_large")
        if path == SIGN_IN_PATH or path.startswith(_STATIC):
            return None
        session = self._keys.session(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return _refusal(request, 401, "signin_needed")
        request.scope.setdefault("state", {})["console_session"] = session
        return None
