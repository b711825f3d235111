"""``GemContext``: what one run of one gem tool receives as ``ctx``.

A gem gets capabilities, not the app: ``ctx`` holds exactly its facades, each bound to the gem's
switches, refs and quotas. Nothing reachable from it exposes the store, a key or an internal id.
"""

from __future__ import annotations

import uuid

from notochord.gems.api.knowledge import KnowledgeApi

__all__ = ["GemContext", "new_run_id"]


def new_run_id() -> str:
    """``run-<uuid4>`` (OD-K45)."""
    return f"run-{uuid.uuid4()}"


class GemContext:
    """The ``ctx`` of one run. ``knowledge`` is ``None`` for a tool without knowledge access (OD-K49)."""

    __slots__ = ("gem_id", "knowledge", "run_id", "tool")

    def __init__(self, *, gem_id: str, tool: str | None, run_id: str, knowledge: KnowledgeApi | None) -> None:
        self.gem_id = gem_id
        self.tool = tool
        self.run_id = run_id
        self.knowledge = knowledge

    @property
    def runId(self) -> str:  # noqa: N802  (the seed's name)
        return self.run_id

    def __repr__(self) -> str:
        return f"<GemContext gem={self.gem_id} tool={self.tool} run={self.run_id}>"
