"""The HTTP edge: the FastAPI application of the knowledge-base service (``create_app``)."""

from __future__ import annotations

from notochord.server.app import create_app

__all__ = ["create_app"]
