"""A knowledge gem for tests: ``recipes``, installed with the permissions asked and switched on."""

from __future__ import annotations

import json
from pathlib import Path

from notochord import Space
from notochord.gems.api.knowledge import KnowledgeApi

__all__ = ["knowledge_gem"]


def knowledge_gem(space: Space, root: Path, permissions: list[str]) -> KnowledgeApi:
    """Install the gem ``recipes`` asking for ``permissions``, switch them on, and return its ``ctx.knowledge``."""
    folder = root / "recipes"
    (folder / "tools").mkdir(parents=True)
    manifest = {
        "id": "recipes",
        "name": "recipes",
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": permissions}},
        "tools": [{"name": "main", "entry": "tools/main.py", "permissions": {"knowledge": True}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "tools" / "main.py").write_text("async def run(input, ctx):\n    return None\n", encoding="utf-8")
    space.gems.install(folder)
    space.gems.set_permissions("recipes", permissions, True)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    return knowledge
