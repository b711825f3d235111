"""A gem of one Python tool, ``main``, written from its source and installed: what the tests of the
tool process need and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import notochord

__all__ = ["WRITES_EACH_NAME", "install_one_tool_gem", "one_tool_gem"]

WRITES_EACH_NAME = (
    "async def run(input, ctx):\n"
    "    for name, text in input.items():\n"
    '        await ctx.files.write("workspace:" + name, text)\n'
    "    return sorted(input)\n"
)
"""A tool that writes each name of its input, with the text given, into its conversation folder."""


def one_tool_gem(folder: Path, gem_id: str, source: str) -> Path:
    """Write ``source`` as the tool ``main`` of gem ``gem_id`` in the new ``folder``; the folder."""
    folder.mkdir()
    (folder / "tool.py").write_text(source, encoding="utf-8")
    manifest = {"id": gem_id, "name": gem_id, "version": "1.0.0", "tools": [{"name": "main", "entry": "tool.py"}]}
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def install_one_tool_gem(space: notochord.Space, folder: Path, gem_id: str, source: str) -> None:
    """Write ``source`` as the tool ``main`` of gem ``gem_id`` in ``folder`` and install it in ``space``."""
    space.gems.install(one_tool_gem(folder, gem_id, source))
