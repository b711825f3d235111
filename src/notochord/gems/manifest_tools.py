"""The tools and resources of a manifest.

- A tool has a ``name`` (one line of at most 200 characters, unique even when case and Unicode
  form are ignored) and an optional ``entry``. Its ``permissions`` say whether it gets
  ``ctx.knowledge`` (K-MAN-02/05/06, OD-K49): in a draft ``manifest.json`` a list (absent means
  the tool gets it), in a packaged ``notochord.json`` an object of flags (``{"knowledge": true}``).
  A draft with a gem-level ``entry`` and no ``tools`` has one tool named after the entry file's
  stem, which must make such a name.
- Resources (OD-P09): ``url`` (http or https), ``sha256`` written ``sha256:<64 hex digits>``,
  ``description``, optional ``size`` in bytes.
- Unknown keys of tools and resources are tolerated (manifests carry more than this module reads).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import urlsplit

from notochord.gems.manifest_fields import Form, Problems, name_problem, optional_str, required_text

__all__ = ["ResourceSpec", "ToolSpec", "parse_resources", "parse_tools"]

_SHA256_RE: Final = re.compile(r"sha256:([0-9a-fA-F]{64})", re.ASCII)


@dataclass(frozen=True)
class ToolSpec:
    """One tool. ``knowledge`` says whether it gets ``ctx.knowledge`` (K-MAN-02/05/06, OD-K49);
    ``capabilities`` lists the names in its ``permissions`` (draft list, or packaged keys set)."""

    name: str
    entry: str | None
    knowledge: bool
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceSpec:
    """A file downloaded at install from a fixed URL and checked against ``sha256`` (P-RES, OD-P09)."""

    url: str
    sha256: str  # lowercase hex digest, without the "sha256:" label
    description: str
    size: int | None = None


def _tool_capabilities(raw: object, path: str, form: Form, problems: Problems) -> tuple[bool, tuple[str, ...]]:
    """``(knowledge, capabilities)`` of one tool's ``permissions`` field (OD-K49)."""
    if form == "draft":
        if raw is None:
            return True, ()
        if not isinstance(raw, list):
            problems.add(path, 'must be a list in manifest.json (for example ["knowledge", "network"])')
            return False, ()
        names: list[str] = []
        for index, item in enumerate(raw):
            if isinstance(item, str):
                names.append(item)
            else:
                problems.add(f"{path}[{index}]", "must be a string")
        return "knowledge" in names, tuple(dict.fromkeys(names))
    if raw is None:
        return False, ()
    if not isinstance(raw, dict):
        problems.add(path, 'must be an object in notochord.json (for example {"knowledge": true})')
        return False, ()
    flag = raw.get("knowledge", False)
    if not isinstance(flag, bool):
        problems.add(f"{path}.knowledge", "must be true or false")
        flag = False
    return flag, tuple(key for key, value in raw.items() if value is not False and value is not None)


def parse_tools(data: Mapping[str, object], form: Form, problems: Problems) -> tuple[ToolSpec, ...]:
    raw = data.get("tools")
    entry = optional_str(data, "entry", "entry", problems) if form == "draft" else None
    if raw is None:
        if entry is None:
            return ()
        stem = PurePosixPath(entry).stem
        if not stem or name_problem(stem) is not None:
            problems.add("entry", f"cannot name a tool after {entry!r}; give a file path such as tools/rate.js")
            return ()
        return (ToolSpec(stem, entry, True),)
    if not isinstance(raw, list):
        problems.add("tools", "must be a list of tools")
        return ()
    tools: list[ToolSpec] = []
    seen: dict[str, int] = {}
    alike: dict[str, tuple[int, str]] = {}
    for index, item in enumerate(raw):
        path = f"tools[{index}]"
        if not isinstance(item, dict):
            problems.add(path, "must be an object with name and entry")
            continue
        name = required_text(item, "name", f"{path}.name", problems)
        tool_entry = optional_str(item, "entry", f"{path}.entry", problems)
        knowledge, capabilities = _tool_capabilities(item.get("permissions"), f"{path}.permissions", form, problems)
        if name is None:
            continue
        named = name_problem(name)
        if named is not None:
            problems.add(f"{path}.name", named)
            continue
        if name in seen:
            problems.add(f"{path}.name", f"duplicate tool name {name!r} (first at tools[{seen[name]}])")
            continue
        # names that differ only in case or Unicode form look the same to whoever picks the tool
        key = unicodedata.normalize("NFKC", name).casefold()
        if key in alike:
            first, first_name = alike[key]
            problems.add(
                f"{path}.name",
                f"duplicate tool name {name!r}: it differs from tools[{first}].name {first_name!r} only in "
                "case or Unicode form; give the tools names that read differently",
            )
            continue
        seen[name] = index
        alike[key] = (index, name)
        tools.append(ToolSpec(name, tool_entry, knowledge, capabilities))
    return tuple(tools)


def _resource(raw: object, path: str, problems: Problems) -> ResourceSpec | None:
    if not isinstance(raw, dict):
        problems.add(path, "must be an object with url, sha256 and description")
        return None
    before = len(problems.items)
    url = required_text(raw, "url", f"{path}.url", problems)
    if url is not None:
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            problems.add(f"{path}.url", f"{url!r} must be an http or https URL with a host")
    digest: str | None = None
    checksum = required_text(raw, "sha256", f"{path}.sha256", problems)
    if checksum is not None:
        match = _SHA256_RE.fullmatch(checksum)
        if match is None:
            problems.add(f"{path}.sha256", "must be written sha256:<64 hexadecimal digits>")
        else:
            digest = match.group(1).lower()
    description = required_text(raw, "description", f"{path}.description", problems)
    size = raw.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        problems.add(f"{path}.size", "must be a whole number of bytes")
        size = None
    if len(problems.items) > before or url is None or digest is None or description is None:
        return None
    return ResourceSpec(url, digest, description, size)


def parse_resources(raw: object, problems: Problems) -> tuple[ResourceSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add("resources", "must be a list of resources")
        return ()
    found = (_resource(item, f"resources[{index}]", problems) for index, item in enumerate(raw))
    return tuple(r for r in found if r is not None)
