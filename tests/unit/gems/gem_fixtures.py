"""Building blocks for the gem tests: manifests written into temporary folders, installed and switched.

Manifests are written in the packaged form (``notochord.json``) unless a test needs the draft form:
the packaged form names its gem id explicitly, so tests choose ids such as ``gem-a`` and ``weather``.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from notochord import KnowledgeNotFoundError, Space
from notochord.gems.context import GemContext
from notochord.gems.refs import RefCodec, RefType
from notochord.gems.registry import InstalledGem

Json = dict[str, Any]

ALL = ("*all*",)
"""Pass as ``on=`` to switch on every requested permission."""

WEATHER_PERMISSIONS = ("facts.read:self:location.home.*",)
RECIPE_PERMISSIONS = ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create")


@contextlib.contextmanager
def python_process(code: str, *args: str, ready: str) -> Iterator[subprocess.Popen[str]]:
    """A Python process running ``code`` with ``args``, once it has printed the line ``ready``;
    killed when the block ends."""
    process = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == ready
        yield process
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def declaration(
    predicate: str, cardinality: str = "many", description: str = "A test predicate", aliases: Sequence[str] = ()
) -> Json:
    """One ``knowledge.predicates`` entry."""
    entry: Json = {"predicate": predicate, "cardinality": cardinality, "description": description}
    if aliases:
        entry["aliases"] = list(aliases)
    return entry


def packaged_manifest(
    gem_id: str,
    permissions: Sequence[str],
    *,
    predicates: Sequence[Json] = (),
    reason: str | None = None,
    version: str = "1.0.0",
    tools: Sequence[Json] | None = None,
) -> Json:
    """A whole ``notochord.json``; by default one tool ``main`` with ``"knowledge": true``."""
    knowledge: Json = {"permissions": list(permissions)}
    if predicates:
        knowledge["predicates"] = list(predicates)
    if reason is not None:
        knowledge["reason"] = reason
    return {
        "id": gem_id,
        "name": f"Gem {gem_id}",
        "version": version,
        "description": f"The {gem_id} test gem",
        "permissions": {"knowledge": knowledge},
        "tools": list(tools)
        if tools is not None
        else [{"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}}],
    }


def ex01_manifest() -> Json:
    """EX-01 exactly as the source gives it (the recipe gem's draft ``manifest.json``)."""
    return {
        "name": "recipes",
        "description": "Save recipes the user has rated",
        "kind": "tool",
        "entry": "tools/rate.js",
        "knowledge": {
            "permissions": list(RECIPE_PERMISSIONS),
            "predicates": [
                {
                    "predicate": "pref.food.rated",
                    "cardinality": "many",
                    "description": "Dishes you have rated highly, used to recommend similar dishes. "
                    "Example: braised pork",
                    "aliases": ["top-rated dishes"],
                }
            ],
            "reason": "Remember the dishes you like, and save recipes into your knowledge base",
        },
    }


def write_manifest(root: Path, data: Json, *, form: str = "packaged") -> Path:
    """Write ``data`` into a fresh folder under ``root`` and return the folder."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="gem-", dir=root))
    name = "notochord.json" if form == "packaged" else "manifest.json"
    (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    write_entries(folder, data)
    return folder


def write_entries(folder: Path, data: Json) -> None:
    """An empty file for each tool entry the manifest names: install checks they exist."""
    tools = data.get("tools")
    entries = [t.get("entry") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    for entry in [*entries, data.get("entry")]:
        if isinstance(entry, str) and entry and not entry.startswith("/") and ".." not in entry:
            (folder / entry).parent.mkdir(parents=True, exist_ok=True)
            (folder / entry).touch()


def switch(space: Space, gem_id: str, permissions: Iterable[str], *, on: bool = True) -> None:
    """Flip the user's switches of ``permissions`` (all of them when given :data:`ALL`)."""
    wanted = tuple(permissions)
    if wanted == ALL:
        wanted = tuple(p.permission for p in space.gems.permissions(gem_id))
    for permission in wanted:
        space.gems.set_permission(gem_id, permission, on)


def install_gem(
    space: Space,
    root: Path,
    gem_id: str,
    permissions: Sequence[str],
    *,
    on: Iterable[str] = (),
    predicates: Sequence[Json] = (),
    tools: Sequence[Json] | None = None,
    version: str = "1.0.0",
) -> InstalledGem:
    """Install a packaged test gem requesting ``permissions`` and switch on those in ``on``."""
    folder = write_manifest(
        root, packaged_manifest(gem_id, permissions, predicates=predicates, tools=tools, version=version)
    )
    installed = space.gems.install(folder)
    switch(space, gem_id, on)
    return installed


def gem_ctx(
    space: Space,
    root: Path,
    gem_id: str,
    permissions: Sequence[str],
    *,
    on: Iterable[str] = ALL,
    predicates: Sequence[Json] = (),
    run_id: str | None = None,
) -> GemContext:
    """Install a gem (every requested permission on by default) and open a run's ``ctx``."""
    install_gem(space, root, gem_id, permissions, on=on, predicates=predicates)
    return space.gems.context(gem_id, run_id=run_id)


def pairs(items: Iterable[Any]) -> set[tuple[str, Any]]:
    """``{(predicate, value)}`` of profile or lookup results (values must be hashable)."""
    return {(item.predicate, item.value) for item in items}


# ---------------------------------------------------------------------- the ref audit

REF_LIKE = re.compile(r"^(ent|fact|doc|col|chg)_")
INTEGER_FIELDS = frozenset({"count"})
"""The only fields whose value may be an integer: anything else numeric could be an internal id."""
CONTENT_FIELDS = frozenset({"value", "proposed"})
"""A writer's JSON carried verbatim: it may hold numbers, but ref-like strings in it are still checked."""


@dataclass(frozen=True)
class AuditRecord:
    """One value a ``ctx.knowledge`` method returned, with the codecs of every gem installed then."""

    gem_id: str
    method: str
    result: Any
    own: RefCodec
    others: Mapping[str, RefCodec]


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def audit_problems(record: AuditRecord) -> list[str]:
    """Every way ``record.result`` leaks an internal id or a ref not made for the calling gem."""
    problems: list[str] = []
    where = f"{record.gem_id} {record.method}"

    def check_string(text: str, path: str) -> None:
        match = REF_LIKE.match(text)
        if match is None:
            return
        ref_type: RefType = match.group(1)  # type: ignore[assignment]
        try:
            record.own.decode(ref_type, text)
        except KnowledgeNotFoundError:
            problems.append(f"{where} {path}: {text} does not decode with the calling gem's key")
        for other_id, codec in record.others.items():
            try:
                codec.decode(ref_type, text)
            except KnowledgeNotFoundError:
                continue
            problems.append(f"{where} {path}: {text} also decodes with gem {other_id}'s key")

    def walk(node: Any, path: str, field: str | None, content: bool) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "id":
                    problems.append(f"{where} {path}: a field named id")
                walk(value, f"{path}.{key}", key, content or key in CONTENT_FIELDS)
        elif isinstance(node, list | tuple):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]", field, content)
        elif isinstance(node, str):
            check_string(node, path)
        elif isinstance(node, int) and not isinstance(node, bool) and field not in INTEGER_FIELDS and not content:
            problems.append(f"{where} {path}: integer {node} outside a count")

    walk(_plain(record.result), "$", None, False)
    return problems
