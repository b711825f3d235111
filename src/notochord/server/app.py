"""The FastAPI application of the knowledge-base service.

``create_app(nc, settings)`` mounts every route under ``/api/knowledge``, with the OpenAPI document
at ``/openapi.json`` and its browsable form at ``/docs``. The page works offline: its Swagger UI
script and style sheet ship inside the package (``server/static``, from the npm package
``swagger-ui-dist``, Apache-2.0, licence beside them) and are served under ``/docs/static``. These
pages are the service's whatever the method: the console, mounted at ``/``, never takes their paths.

It is the service's composition root: the document extractor and each organization space's network
rules are handed to the domain here. Routes that touch the store are plain ``def`` functions (or
hand their store work to the threadpool), so they never block the event loop. Errors are turned
into responses by the one table in :mod:`notochord.server.errors`. Every GET route answers HEAD
too (:mod:`notochord.server.head`).

The background embedding of every space starts at the application's start-up
(:meth:`notochord.Notochord.keep_indexed`). MCP over streamable HTTP is served at ``/mcp``
(:mod:`notochord.mcp_server.http`), its sessions run by the same lifespan.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

import notochord
from notochord.app import Notochord
from notochord.console import console_mount
from notochord.extraction.isolated import extract_isolated
from notochord.kbservice import KbService
from notochord.mcp_server.http import mcp_mount
from notochord.net.policy import UserNetworkRules
from notochord.server import errors
from notochord.server.auth import Authenticator
from notochord.server.head import HeadAsGet
from notochord.server.routes import agents, audit, documents, grants, kb, retrieve
from notochord.settings import Settings

__all__ = ["DOCS_STATIC", "PREFIX", "ROUTERS", "create_app"]

PREFIX = "/api/knowledge"
ROUTERS = (retrieve.router, documents.router, kb.router, agents.router, grants.router, audit.router)
"""Every router of the service, mounted under :data:`PREFIX` in this order: a request is matched
against the routes in turn, so the busiest (search, retrieval, documents) come first. No two
routes' paths overlap, so the order decides nothing else."""
DOCS_STATIC = "/docs/static"
_PAGES = frozenset({"/docs", "/openapi.json"})
"""The service's own pages outside :data:`PREFIX`: the OpenAPI document and its browsable form."""
_STATIC_DIR = Path(__file__).parent / "static"


def create_app(nc: Notochord, settings: Settings) -> FastAPI:
    """The service over the open data directory ``nc``.

    Raises:
        ConfigurationError: no way to authenticate (no JWT secret or public key, and no trusted
            gateway), or a malformed key or proxy setting.
    """
    authenticator = Authenticator(settings, data_dir=nc.data_dir)
    mcp = mcp_mount(nc)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # start-up: embed what is pending in every space now, and what other processes write
        # later, without waiting for a request to open the space (closing ``nc`` stops it)
        nc.keep_indexed()
        async with mcp.running():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="notochord knowledge-base service",
        version=notochord.__version__,
        description="Organization knowledge bases linked to agents for retrieval (REST, JWT bearer).",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        # a route answers under its one path: Starlette's redirect of a trailing slash would send
        # the client to whatever host its own Host header named
        redirect_slashes=False,
    )

    def network_rules(organization_id: str) -> UserNetworkRules:
        return nc.org(organization_id).network_rules.get()

    app.state.kb = KbService(nc, extractor=extract_isolated, network_rules=network_rules)
    app.state.authenticator = authenticator
    # each router straight under the application, not nested in one router for the prefix: a
    # request is matched against every route of every nesting level, twice per level
    for router in ROUTERS:
        # any route may find the database server gone (PostgreSQL): every one documents the 503
        app.include_router(router, prefix=PREFIX, responses=errors.documented(503))
    _mount_docs(app)
    pages = [route for route in app.router.routes if isinstance(route, Route) and route.path in _PAGES]
    app.router.routes.append(mcp.route)  # before the console, which takes every other path
    app.router.routes.append(_BesidePages(console_mount(nc, reserved=PREFIX), pages))
    errors.install(app)
    app.add_middleware(HeadAsGet, routes=app.router.routes)
    return app


class _BesidePages(Mount):
    """The console, mounted at ``/``, leaving the service's own pages (:data:`_PAGES`) to the service
    whatever the method: a method a page does not take is then the service's 405 naming the methods
    it does, and a HEAD is the page's GET (:class:`~notochord.server.head.HeadAsGet` reads a path some
    route takes HEAD on as that route's), not a console page."""

    def __init__(self, console: Mount, pages: Sequence[BaseRoute]) -> None:
        super().__init__(console.path, app=console.app, name=console.name)
        self._console = console
        self._pages = pages

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and any(page.matches(scope)[0] is not Match.NONE for page in self._pages):
            return Match.NONE, {}
        return self._console.matches(scope)


def _mount_docs(app: FastAPI) -> None:
    app.mount(DOCS_STATIC, StaticFiles(directory=_STATIC_DIR), name="docs-static")

    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - API documentation",
            swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
            # no icon rather than one fetched from elsewhere; no validator badge, which calls out
            swagger_favicon_url="data:,",
            swagger_ui_parameters={"validatorUrl": None},
        )

    app.add_api_route("/docs", docs, methods=["GET"], include_in_schema=False)
