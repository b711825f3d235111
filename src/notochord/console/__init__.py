"""The user's console: the vault's own web pages, served by ``notochord serve`` at ``/``.

It acts as the vault's user (``space.user``), so only the person who can read the data directory
may drive it: they sign in with a one-time link (:mod:`notochord.console.auth`), and every request
passes the front door of :mod:`notochord.console.guard` (Host, Origin, cross-site, session) and,
when it changes something, the CSRF check of :mod:`notochord.console.forms`.

Pages are rendered on the server from Jinja2 templates; htmx (vendored in ``static/``, BSD-0
licence beside it) swaps parts of a page, and every action is also a plain form post. What each
page shows is built as data in :mod:`notochord.console.views` (OD-K52).
"""

from __future__ import annotations

import logging
from pathlib import Path

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
from notochord.console.forms import ConsoleRefusal, verified_form
from notochord.console.guard import ConsoleGuard
from notochord.console.i18n import choose_lang, text
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
from notochord.console.uploads import Uploads
from notochord.errors import KnowledgeValidationError

__all__ = ["ConsoleKeys", "ConsoleMount", "console_mount", "create_console", "login_url"]

log = logging.getLogger("notochord.server")
_STATIC = Path(__file__).parent / "static"


def login_url(keys: ConsoleKeys, base: str) -> str:
    """A fresh one-time sign-in link under ``base`` (``http://127.0.0.1:8420``)."""
    return f"{base.rstrip('/')}/login?token={keys.mint_login_token()}"


def _message_page(request: Request, status: int, title_key: str, message_key: str) -> Response:
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    return render_page(
        request,
        "refused.html",
        {"lang": lang, "title": text(title_key, lang), "message": text(message_key, lang)},
        status_code=status,
    )


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
        return _message_page(request, exc.status_code, "refused_title", str(exc.detail))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            return _message_page(request, 404, "not_found_title", "not_found")
        return _message_page(request, exc.status_code, "error_title", "not_found")

    async def malformed(request: Request, _exc: Exception) -> Response:
        # a malformed id in a path names nothing that exists
        return _message_page(request, 404, "not_found_title", "not_found")

    async def invalid(request: Request, exc: Exception) -> Response:
        # what the store refuses as the caller's mistake (a number beyond 64 bits in a path, say)
        lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
        page = {"lang": lang, "title": text("error_title", lang), "message": str(exc)}
        return render_page(request, "refused.html", page, status_code=400)

    console.add_exception_handler(ConsoleRefusal, refused)
    console.add_exception_handler(KnowledgeValidationError, invalid)
    console.add_exception_handler(StarletteHTTPException, http_error)
    console.add_exception_handler(RequestValidationError, malformed)
    console.add_middleware(ConsoleGuard, keys=keys)
    return console
