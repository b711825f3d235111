"""``GemContext``: what one run of one gem tool receives as ``ctx``.

A gem gets capabilities, not the app: ``ctx`` holds exactly its facades (``knowledge``, ``http``,
``extract``, ``files``, ``storage``, ``data``), each bound to that gem's switches, refs, quotas and
folders. Nothing reachable from it exposes the store, a key or an internal id.

Facades other than ``knowledge`` are built by *capability factories* registered on ``space.gems``
(see :class:`CapabilityRequest`), so each part of the platform plugs in without this module knowing it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notochord.gems.api.knowledge import KnowledgeApi
from notochord.gems.folders import GemFolders

if TYPE_CHECKING:
    import httpx

    from notochord.clock import Clock
    from notochord.gems.manifest import Manifest, ToolSpec
    from notochord.gems.registry import GemRegistry
    from notochord.knowledge.core import KnowledgeCore
    from notochord.net.transport import RequestLimits, Resolver
    from notochord.net.user_rules import NetworkRulesStore

__all__ = ["CAPABILITIES", "CapabilityFactory", "CapabilityRequest", "GemContext", "SpaceServices", "new_run_id"]

_FOLDERS_LOCK = threading.Lock()

CAPABILITIES = ("http", "extract", "files", "storage", "data")


def new_run_id() -> str:
    """``run-<uuid4>`` (OD-K45)."""
    return f"run-{uuid.uuid4()}"


@dataclass(slots=True)
class SpaceServices:
    """The space-level services the capability factories share, one attribute each.

    The space sets them when it is composed (``notochord.app``); a test may set or clear any of them
    (``space.gems.services.http_transport = httpx.MockTransport(…)``). A misspelt name is an
    ``AttributeError``, not a service nobody reads.
    """

    gem_folders: GemFolders | None = None
    """Where each gem's files live (``ctx.files``, ``ctx.storage``, ``ctx.data``); made on first use."""
    network_rules: NetworkRulesStore | None = None
    """The user's network rules, required by ``ctx.http`` and by resource downloads."""
    resolver: Resolver | None = None
    """Name resolution for the guarded HTTP client (default: the system's)."""
    http_transport: httpx.AsyncBaseTransport | None = None
    """The transport under the guarded HTTP client (default: the network)."""
    http_limits: RequestLimits | None = None
    """Size and time limits of one request (default: ``RequestLimits()``)."""

    def folders(self, data_dir: Path, space_name: str) -> GemFolders:
        """The space's gem folders, made here on first use."""
        with _FOLDERS_LOCK:
            if self.gem_folders is None:
                self.gem_folders = GemFolders(data_dir, space_name)
            return self.gem_folders


@dataclass(frozen=True)
class CapabilityRequest:
    """Everything a capability factory may use to build one facade for one run.

    Factories run on the host side; what they return is handed to the gem, so they must return a
    facade that exposes none of this.
    """

    gem_id: str
    manifest: Manifest
    tool: ToolSpec | None
    run_id: str
    conversation: Path | None
    """The conversation's folder (``workspace:``), or ``None`` for calls without a conversation."""
    data_dir: Path
    """The notochord data directory (gem folders live below it)."""
    space_name: str
    core: KnowledgeCore
    registry: GemRegistry
    clock: Clock
    services: SpaceServices
    """Space-level services shared by factories (e.g. the user's network rules)."""

    def folders(self) -> GemFolders:
        """The space's gem folders (:meth:`SpaceServices.folders`)."""
        return self.services.folders(self.data_dir, self.space_name)


CapabilityFactory = Callable[[CapabilityRequest], Any]


class GemContext:
    """The ``ctx`` of one run. ``knowledge`` is ``None`` for a tool without knowledge access (OD-K49)."""

    __slots__ = ("data", "extract", "files", "gem_id", "http", "knowledge", "run_id", "storage", "tool")

    def __init__(
        self,
        *,
        gem_id: str,
        tool: str | None,
        run_id: str,
        knowledge: KnowledgeApi | None,
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        self.gem_id = gem_id
        self.tool = tool
        self.run_id = run_id
        self.knowledge = knowledge
        given = capabilities or {}
        self.http: Any = given.get("http")
        self.extract: Any = given.get("extract")
        self.files: Any = given.get("files")
        self.storage: Any = given.get("storage")
        self.data: Any = given.get("data")

    @property
    def runId(self) -> str:  # noqa: N802  (the seed's name)
        return self.run_id

    def __repr__(self) -> str:
        return f"<GemContext gem={self.gem_id} tool={self.tool} run={self.run_id}>"
