"""``GemContext``: what one run of one gem tool receives as ``ctx``.

A gem gets capabilities, not the app: ``ctx`` holds exactly its facades (``knowledge``, ``http``,
``extract``, ``files``, ``storage``, ``data``), each bound to that gem's switches, refs, quotas and
folders. Nothing reachable from it exposes the store, a key or an internal id.

Facades other than ``knowledge`` are built by *capability factories* registered on ``space.gems``
(see :class:`CapabilityRequest`), so each part of the platform plugs in without this module knowing it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notochord.gems.api.knowledge import KnowledgeApi

if TYPE_CHECKING:
    from notochord.clock import Clock
    from notochord.gems.manifest import Manifest, ToolSpec
    from notochord.gems.registry import GemRegistry
    from notochord.knowledge.core import KnowledgeCore

__all__ = ["CAPABILITIES", "CapabilityFactory", "CapabilityRequest", "GemContext", "new_run_id"]

CAPABILITIES = ("http", "extract", "files", "storage", "data")


def new_run_id() -> str:
    """``run-<uuid4>`` (OD-K45)."""
    return f"run-{uuid.uuid4()}"


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
    services: dict[str, Any]
    """Space-level services shared by factories (e.g. the user's network rules), by name."""


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
