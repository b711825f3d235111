"""notochord: a knowledge vault the user owns.

Gems reach it only through ``ctx.knowledge`` and only as far as the permissions the user switched on;
every write is recorded and can be undone. Start with :func:`open` (the per-user data directory by
default, for example ``~/.local/share/notochord``; ``NOTOCHORD_DATA_DIR`` overrides it)::

    import notochord

    with notochord.open() as nc:
        space = nc.personal
        space.user.facts.put(predicate="location.home.city", value="Utrecht")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from notochord.errors import (
    ClosedError,
    ConfigurationError,
    FileError,
    FilePermissionError,
    GemError,
    KnowledgeError,
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeQuotaError,
    KnowledgeValidationError,
    ManifestError,
    NetworkError,
    NetworkPermissionError,
    NetworkRequestError,
    NotochordError,
    RevertError,
    SpaceNotFoundError,
    StorageError,
)

if TYPE_CHECKING:
    from notochord.app import Notochord, Space, open
    from notochord.settings import Settings

__version__ = "0.1.0"

__all__ = [
    "ClosedError",
    "ConfigurationError",
    "FileError",
    "FilePermissionError",
    "GemError",
    "KnowledgeError",
    "KnowledgeNotFoundError",
    "KnowledgePermissionError",
    "KnowledgeQuotaError",
    "KnowledgeValidationError",
    "ManifestError",
    "NetworkError",
    "NetworkPermissionError",
    "NetworkRequestError",
    "Notochord",
    "NotochordError",
    "RevertError",
    "Settings",
    "Space",
    "SpaceNotFoundError",
    "StorageError",
    "__version__",
    "open",
]


_LAZY = {
    "Notochord": "notochord.app",
    "Space": "notochord.app",
    "open": "notochord.app",
    "Settings": "notochord.settings",
}


def __getattr__(name: str) -> Any:
    # The store and its dependencies load on first use, so that importing notochord (or one of its
    # light modules, such as notochord.errors inside a gem's tool process) stays cheap.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'notochord' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
