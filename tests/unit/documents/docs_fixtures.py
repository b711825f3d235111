"""Building blocks for the document, collection and search tests.

- :func:`fake_embedder` loads the deterministic ``HashedNgramEmbedder`` of ``tests/unit/search/fakes.py``
  by path, so this folder runs alone as well as in the whole suite.
- :func:`manifest` writes a packaged ``notochord.json`` (optionally with a ``permissions.network``
  section); :func:`recipes_manifest` is EX-01 exactly as given, in its draft form.
- :func:`gem` installs a gem, switches on the permissions a test names and returns its
  ``ctx.knowledge``.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from notochord import Space
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.search.embeddings import Embedder

__all__ = [
    "ALL",
    "RECIPE_PERMISSIONS",
    "col_ref",
    "doc_id",
    "dump",
    "fake_embedder",
    "gem",
    "knowledge",
    "manifest",
    "recipes_manifest",
    "titles",
    "write_manifest",
]

ALL = ("*all*",)
"""Pass as ``on=`` to switch on every requested permission."""

RECIPE_PERMISSIONS = ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create")

_FAKES = Path(__file__).resolve().parents[1] / "search" / "fakes.py"


def fake_embedder() -> Embedder:
    """A fresh ``HashedNgramEmbedder`` (128 dimensions, multilingual)."""
    spec = importlib.util.spec_from_file_location("documents_search_fakes", _FAKES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    embedder = module.HashedNgramEmbedder()
    assert isinstance(embedder, Embedder)
    return embedder


def manifest(gem_id: str, permissions: Sequence[str], *, hosts: Sequence[str] | None = None) -> dict[str, Any]:
    """A whole packaged ``notochord.json`` requesting ``permissions`` (and network ``hosts``)."""
    sections: dict[str, Any] = {"knowledge": {"permissions": list(permissions)}}
    if hosts is not None:
        sections["network"] = {"hosts": list(hosts), "reason": "Import pages the user saves"}
    return {
        "id": gem_id,
        "name": f"Gem {gem_id}",
        "version": "1.0.0",
        "description": f"The {gem_id} test gem",
        "permissions": sections,
        "tools": [{"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}}],
    }


def recipes_manifest() -> dict[str, Any]:
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


def write_manifest(root: Path, data: dict[str, Any], *, draft: bool = False) -> Path:
    """Write ``data`` into a fresh folder under ``root``; return the folder."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="gem-", dir=root))
    name = "manifest.json" if draft else "notochord.json"
    (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    # install checks that each tool's entry file exists
    for entry in [data.get("entry"), *(t.get("entry") for t in data.get("tools", []))]:
        if isinstance(entry, str):
            (folder / entry).parent.mkdir(parents=True, exist_ok=True)
            (folder / entry).touch()
    return folder


def knowledge(space: Space, gem_id: str) -> KnowledgeApi:
    """A new run's ``ctx.knowledge`` of an installed gem."""
    api = space.gems.context(gem_id).knowledge
    assert api is not None
    return api


def gem(
    space: Space,
    root: Path,
    gem_id: str,
    permissions: Sequence[str],
    *,
    on: Iterable[str] = ALL,
    hosts: Sequence[str] | None = None,
) -> KnowledgeApi:
    """Install a packaged gem, switch on ``on`` (every requested permission by default)."""
    space.gems.install(write_manifest(root, manifest(gem_id, permissions, hosts=hosts)))
    wanted = tuple(on)
    if wanted == ALL:
        wanted = tuple(permissions)
    for permission in wanted:
        space.gems.set_permission(gem_id, permission, True)
    return knowledge(space, gem_id)


async def col_ref(api: KnowledgeApi, name: str) -> str:
    """The ref of the one collection named ``name`` that the gem can see."""
    found = [c.ref for c in await api.collections.list() if c.name == name]
    assert len(found) == 1, f"expected one visible collection {name!r}, found {len(found)}"
    return found[0]


def doc_id(api: KnowledgeApi, ref: str) -> int:
    """The internal id behind one of the gem's document refs (for the user's host API)."""
    return api.refs.decode("doc", ref)


def dump(result: Any) -> Any:
    """A result model (or a list of them) as its documented camelCase JSON."""
    if isinstance(result, list):
        return [dump(r) for r in result]
    return result.model_dump(by_alias=True)


def titles(hits: Iterable[Any]) -> list[str]:
    return [h.title for h in hits]
