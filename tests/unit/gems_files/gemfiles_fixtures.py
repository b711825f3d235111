"""The space the gem file and storage tests drive: capabilities registered as the app registers them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import notochord
from notochord.gems.context import CapabilityRequest, GemContext
from notochord.gems.folders import GemFolders


@dataclass
class GemSpace:
    """A space with the files, storage and data capabilities registered, and helpers to use them."""

    space: notochord.Space
    data_dir: Path
    folders: GemFolders
    manifests: Path
    requests: dict[str, CapabilityRequest] = field(default_factory=dict)

    def install(self, gem_id: str) -> None:
        folder = self.manifests / f"{gem_id}-{len(list(self.manifests.glob('*')))}"
        folder.mkdir(parents=True)
        manifest = {
            "id": gem_id,
            "name": f"Gem {gem_id}",
            "version": "1.0.0",
            "description": f"The {gem_id} test gem",
            "tools": [{"name": "main", "entry": "tools/main.mjs"}],
        }
        (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
        (folder / "tools").mkdir()
        (folder / "tools" / "main.mjs").touch()
        self.space.gems.install(folder)

    def uninstall(self, gem_id: str) -> None:
        self.space.gems.uninstall(gem_id)

    def ctx(self, gem_id: str, *, conversation: Path | None = None, run_id: str | None = None) -> GemContext:
        return self.space.gems.context(gem_id, tool="main", conversation=conversation, run_id=run_id)

    def request(self, ctx: GemContext) -> CapabilityRequest:
        """The capability request ``ctx`` was built from, as the runtime holds it."""
        return self.requests[ctx.run_id]
