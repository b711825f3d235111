"""Every tool's entry file is a file inside the gem folder, checked when a gem is installed or upgraded.

A manifest is valid on its own (:mod:`notochord.gems.manifest`); whether the files it names exist
depends on the folder it was read from. The installation keeps a copy of that folder and runs tools
only from the copy, so an entry that is missing, or that leads out of the folder (``..``, an
absolute path, a symbolic link pointing elsewhere), that no system could name (a NUL character, too
long), or that the installation leaves out as clutter (inside ``.git``, ``.venv`` and the
like, or an editor's swap file: :func:`~notochord.gems.package.left_out_kind`) would only fail at
the first run; it is refused at install time instead, every such tool at once, and nothing is
installed.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from notochord.errors import ManifestError
from notochord.gems.manifest import Manifest
from notochord.gems.manifest_fields import has_control_characters
from notochord.gems.package import left_out_problem

__all__ = ["check_tool_entries"]

_SHOWN: Final = 200


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
        where = f"{_field(raw, tool.name)}: tool {tool.name!r}: {_shown(tool.entry)}"
        problem = _entry_problem(root, tool.entry)
        if problem is not None:
            problems.append(f"{where} {problem}")
    if problems:
        raise ManifestError(problems, source=manifest.source)


def _shown(entry: str) -> str:
    """``entry`` as a problem line shows it: quoted when it holds control characters, cut when long."""
    cut = entry if len(entry) <= _SHOWN else f"{entry[:_SHOWN]}…"
    return repr(cut) if has_control_characters(cut) else cut


def _entry_problem(root: Path, entry: str) -> str | None:
    if "\x00" in entry:
        return "is not a path a file can have: it holds a NUL character; correct the path"
    try:
        target = (root / entry).resolve()
        inside = target.is_relative_to(root)
        is_file = inside and target.is_file()
    except RuntimeError:  # a loop of symbolic links
        return "cannot be followed to a file; replace the link with the file"
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return "is not a path a file can have: it is too long for the system; correct the path"
        if exc.errno == errno.ELOOP:
            return "cannot be followed to a file; replace the link with the file"
        return f"cannot be read: {(exc.strerror or 'the system refused').lower()}; check that you may read it"
    if not inside:
        return f"points outside the gem folder {root}; keep the tool's file inside it"
    if not is_file:
        return f"is not a file in the gem folder {root}; add it or correct the path"
    return left_out_problem(target.relative_to(root).parts)
