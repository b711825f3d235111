"""A gem of one Python tool, ``main``, written from its source and installed: what the tests of the
tool process need and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import notochord

__all__ = ["install_one_tool_gem"]


def install_one_tool_gem(space: notochord.Space, folder: Path, gem_id: str, source: str) -> None:
    """Write ``source`` as the tool ``main`` of gem ``gem_id`` in ``folder`` and install it in ``space``."""
    folder.mkdir()
    (folder / "tool.py").write_text(source, encoding="utf-8")
    manifest = {"id": gem_id, "name": gem_id, "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(folder)
