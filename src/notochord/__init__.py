"""notochord: a knowledge vault the user owns.

Gems reach it only through ``ctx.knowledge`` and only as far as the permissions the user switched on;
every write is recorded and can be undone. Start with :func:`open`::

    import notochord

    with notochord.open(".notochord") as nc:
        space = nc.personal
        space.user.facts.put(predicate="location.home.city", value="Utrecht")
"""

from __future__ import annotations

from notochord.app import Notochord, Space, open
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
    NotochordError,
    RevertError,
    StorageError,
)
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
    "Notochord",
    "NotochordError",
    "RevertError",
    "Settings",
    "Space",
    "StorageError",
    "__version__",
    "open",
]
