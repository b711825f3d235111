"""Every tool's entry file is a file inside the gem folder, checked when a gem is installed or upgraded.

A manifest is valid on its own (:mod:`notochord.gems.manifest`); whether the files it names exist
depends on the folder it was read from. The installation keeps a copy of that folder and runs tools
only from the copy, so an entry that is missing, or that leads out of the folder (``..``, an
absolute path, a symbolic link pointing elsewhere), would only fail at the first run; it is refused
at install time instead, every such tool at once, and nothing is installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from notochord.errors import ManifestError
from notochord.gems.manifest import Manifest

__all__ = ["check_tool_entries"]


def _field(raw: Mapping[str, object], tool: str) -> str:
    """The JSON path of ``tool``'s entry in the manifest as written."""
    tools = raw.get("tools")
    if isinstance(tools, list):
        for index, item in enumerate(tools):
            if isinstance(item, dict) and item.get("name") == tool:
                return f"tools[{index}].entry"
    return "entry"


def check_tool_entries(manifest: Manifest, raw: Mapping[str, object], folder: Path) -> None:
    """Refuse the manifest unless each tool's ``entry`` is a regular file below ``folder``.

    Raises:
        ManifestError: one problem per tool, naming the tool and its entry path.
    """
    root = folder.resolve()
    problems = []
    for tool in manifest.tools:
        if tool.entry is None:
            continue
        where = f"{_field(raw, tool.name)}: tool {tool.name!r}: {tool.entry}"
        try:
            target = (root / tool.entry).resolve()
        except (OSError, RuntimeError):  # a loop of symbolic links
            problems.append(f"{where} cannot be followed to a file; replace the link with the file")
            continue
        if not target.is_relative_to(root):
            problems.append(f"{where} points outside the gem folder {root}; keep the tool's file inside it")
        elif not target.is_file():
            problems.append(f"{where} is not a file in the gem folder {root}; add it or correct the path")
    if problems:
        raise ManifestError(problems, source=manifest.source)
