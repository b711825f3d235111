"""The HTTP edge: the FastAPI application of the knowledge-base service (``create_app``).

``create_app`` loads on first use: the console, which the service mounts, uses pieces of this
package (:mod:`notochord.server.head`) without importing the whole service first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notochord.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from notochord.server.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
