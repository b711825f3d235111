"""The user's console: the vault's own web pages, served by ``notochord serve`` at ``/``.

It acts as the vault's user (``space.user``), so only the person who can read the data directory
may drive it: they sign in with a one-time link (:mod:`notochord.console.auth`), and every request
passes the front door of :mod:`notochord.console.guard` (Host, Origin, cross-site, session) and,
when it changes something, the CSRF check of :mod:`notochord.console.forms`. A store that cannot be
used right now (its database server down, or locked by another process) is answered 503 with
``Retry-After`` by :mod:`notochord.console.unavailable`; any other failure no page foresaw is a page
of its own, 500, by :mod:`notochord.console.failure`, its details only in the server's log.

Pages are rendered on the server from Jinja2 templates; htmx (vendored in ``static/``, BSD-0
licence beside it) swaps parts of a page, and every action is also a plain form post. What each
page shows is built as data in :mod:`notochord.console.views` (OD-K52).

Every page answers HEAD as its GET without the body (:class:`notochord.server.head.HeadAsGet`, the
REST service's own mechanism), ahead of the guard: a HEAD is refused exactly where its GET is. The
one GET that changes something, a sign-in link, answers HEAD without using the link up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from notochord.app import Notochord
from notochord.console.auth import ConsoleKeys
from notochord.console.failure import ServerFailure
from notochord.console.forms import ConsoleRefusal, shown, verified_form
from notochord.console.guard import ConsoleGuard
from notochord.console.i18n import choose_lang, text
from notochord.console.refusal_words import refusal
from notochord.console.render import render_page
from notochord.console.routes import (
    changes,
    entities,
    folders,
    gems,
    knowledge,
    network,
    runs,
    search,
    session,
    studio,
    uninstall,
)
from notochord.console.unavailable import STORE_UNAVAILABLE, store_unavailable
from notochord.console.uploads import Uploads
from notochord.errors import KnowledgeValidationError
from notochord.server.head import HeadAsGet, allowed_methods

__all__ = ["ConsoleKeys", "ConsoleMount", "console_mount", "create_console", "login_url"]

log = logging.getLogger("notochord.server")
_STATIC = Path(__file__).parent / "static"


def login_url(keys: ConsoleKeys, base: str) -> str:
    """A fresh one-time sign-in link under ``base`` (``http://127.0.0.1:8420``)."""
    return f"{base.rstrip('/')}/login?token={keys.mint_login_token()}"


def _message_page(
    request: Request,
    status: int,
    title_key: str,
    message_key: str,
    *,
    headers: Mapping[str, str] | None = None,
    values: Mapping[str, object] | None = None,
) -> Response:
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    response = render_page(
        request,
        "refused.html",
        {"lang": lang, "title": text(title_key, lang), "message": text(message_key, lang, **(values or {}))},
        status_code=status,
    )
    # Starlette's own headers (the ``Allow`` of a 405) still belong to the answer
    response.headers.update(headers or {})
    return response


# pydantic's error types, in the console's words; pydantic's own message is never shown
_QUERY_PROBLEMS: Final[dict[str, str]] = {
    "int_parsing": "refused_query_int",
    "int_type": "refused_query_int",
    "int_from_float": "refused_query_int",
    "float_parsing": "refused_query_number",
    "float_type": "refused_query_number",
    "bool_parsing": "refused_query_bool",
    "bool_type": "refused_query_bool",
    "missing": "refused_query_missing",
}


def _validation_refusal(problem: Mapping[str, Any]) -> tuple[str, dict[str, object]]:
    """The sentence key and values naming one parameter a page could not read, and what it expects."""
    loc = tuple(problem.get("loc", ()))
    name = str(loc[-1]) if len(loc) > 1 else ""
    given = problem.get("input")
    values: dict[str, object] = {"name": shown(name), "value": shown(given if isinstance(given, str) else "")}
    if loc[:1] != ("query",):
        return "refused_request", values
    return _QUERY_PROBLEMS.get(str(problem.get("type", "")), "refused_query"), values


class ConsoleMount(Mount):
    """The console at ``/``, except under the REST service's prefix: a wrong method or an unknown
    path there keeps the service's own answer (405, or its JSON not-found body)."""

    def __init__(self, app: FastAPI, *, reserved: str) -> None:
        super().__init__("/", app=app, name="console")
        self._reserved = reserved.rstrip("/") + "/"

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and (scope["path"] + "/").startswith(self._reserved):
            return Match.NONE, {}
        return super().matches(scope)


def console_mount(nc: Notochord, *, reserved: str) -> ConsoleMount:
    """The console over ``nc`` as the last route of an app whose ``reserved`` prefix it leaves alone."""
    return ConsoleMount(create_console(nc), reserved=reserved)


def create_console(nc: Notochord) -> FastAPI:
    """The console over the open data directory ``nc``, to mount at ``/``.

    Raises:
        StorageError: the login secret in the data directory cannot be read or created.
    """
    keys = ConsoleKeys(Path(nc.data_dir))
    console = FastAPI(
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(verified_form)],
    )
    console.state.nc = nc
    console.state.console_keys = keys
    console.state.console_uploads = Uploads(Path(nc.data_dir))
    console.mount("/static", StaticFiles(directory=_STATIC), name="console-static")
    for router in (session.router, gems.router, uninstall.router, changes.router, studio.router):
        console.include_router(router)
    for router in (knowledge.router, entities.router, search.router, runs.router, network.router, folders.router):
        console.include_router(router)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ConsoleRefusal)
        return _message_page(request, exc.status_code, "refused_title", str(exc.detail), values=exc.values)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            return _message_page(request, 404, "not_found_title", "not_found", headers=exc.headers)
        if exc.status_code == 405:
            # every method the path serves, not only those of the first route that matched it
            allow = ", ".join(allowed_methods(console.router.routes, request.scope))
            return _message_page(
                request,
                405,
                "method_title",
                "method_not_allowed",
                headers={**(exc.headers or {}), "Allow": allow},
                values={"method": shown(request.method)},
            )
        return _message_page(request, exc.status_code, "error_title", "error_request", headers=exc.headers)

    async def malformed(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        problems = list(exc.errors())
        # a malformed id in a path names nothing that exists, whatever else the request holds; a bad
        # value elsewhere (the query of a page that exists) is the visitor's mistake to correct
        if any(tuple(p.get("loc", ()))[:1] == ("path",) for p in problems):
            return _message_page(request, 404, "not_found_title", "not_found")
        if not problems:
            return _message_page(request, 400, "refused_title", "error_request")
        key, values = _validation_refusal(problems[0])
        return _message_page(request, 400, "refused_title", key, values=values)

    async def invalid(request: Request, exc: Exception) -> Response:
        # what the store refuses as the caller's mistake (a number beyond 64 bits in a path, say)
        lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
        page = {"lang": lang, "title": text("error_title", lang), "message": refusal(exc, lang)}
        return render_page(request, "refused.html", page, status_code=400)

    console.add_exception_handler(ConsoleRefusal, refused)
    console.add_exception_handler(KnowledgeValidationError, invalid)
    console.add_exception_handler(StarletteHTTPException, http_error)
    console.add_exception_handler(RequestValidationError, malformed)
    for outage in STORE_UNAVAILABLE:
        console.add_exception_handler(outage, store_unavailable)
    console.add_middleware(ConsoleGuard, keys=keys)
    # around the guard and every route, inside HeadAsGet: a HEAD that fails gets the page's headers alone
    console.add_middleware(ServerFailure)
    # outermost, so the guard sees a HEAD as the GET it stands for and answers it the same way
    console.add_middleware(HeadAsGet, routes=console.router.routes)
    return console
