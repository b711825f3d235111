"""The FastAPI application of the knowledge-base service.

``create_app(nc, settings)`` mounts every route under ``/api/knowledge``, with the OpenAPI document
at ``/openapi.json`` and its browsable form at ``/docs``. It is the service's composition root: the
document extractor and each organization space's network rules are handed to the domain here, and
the background embedding of every space starts at the application's start-up
(:meth:`notochord.Notochord.keep_indexed`).
Routes that touch the store are plain ``def`` functions (or hand their store work to the threadpool),
so they never block the event loop. Errors are turned into responses by the one table in
:mod:`notochord.server.errors`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import APIRouter, FastAPI

import notochord
from notochord.app import Notochord
from notochord.gems.api.extract import extract_text
from notochord.kbservice import KbService
from notochord.net.policy import UserNetworkRules
from notochord.server import errors
from notochord.server.auth import Authenticator
from notochord.server.routes import agents, audit, documents, grants, kb, retrieve
from notochord.settings import Settings

__all__ = ["PREFIX", "ROUTERS", "create_app"]

PREFIX = "/api/knowledge"
ROUTERS = (kb.router, documents.router, retrieve.router, agents.router, grants.router, audit.router)
"""Every router of the service, mounted under :data:`PREFIX` in this order."""


def create_app(nc: Notochord, settings: Settings) -> FastAPI:
    """The service over the open data directory ``nc``.

    Raises:
        ConfigurationError: no way to authenticate (no JWT secret or public key, and no trusted
            gateway), or a malformed key or proxy setting.
    """
    authenticator = Authenticator(settings, data_dir=nc.data_dir)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # start-up: embed what is pending in every space now, and what other processes write
        # later, without waiting for a request to open the space (closing ``nc`` stops it)
        nc.keep_indexed()
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="notochord knowledge-base service",
        version=notochord.__version__,
        description="Organization knowledge bases linked to agents for retrieval (REST, JWT bearer).",
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )

    def network_rules(organization_id: str) -> UserNetworkRules:
        return nc.org(organization_id).network_rules.get()

    app.state.kb = KbService(nc, extractor=extract_text, network_rules=network_rules)
    app.state.authenticator = authenticator
    api = APIRouter(prefix=PREFIX)
    for router in ROUTERS:
        api.include_router(router)
    app.include_router(api)
    errors.install(app)
    return app
