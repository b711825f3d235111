"""A small gem for the Runs pages' tests: its one tool records a food the user likes and writes a
note into the conversation's folder, so a run has both knowledge changes and file changes."""

from __future__ import annotations

import json
from pathlib import Path

import notochord

GEM = "noter"
LIKES = "facts.write:self:pref.food.*"

TOOL = """
async def run(input, ctx):
    await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value=input.get("food", "soup"))
    await ctx.files.write("workspace:notes/food.md", "# " + input.get("food", "soup") + "\\n")
    return {"noted": True}
"""


def write_gem(root: Path, *, sops: list[dict[str, str]] | None = None, gem_id: str = GEM) -> Path:
    """The gem's folder under ``root``; ``sops`` go into its manifest as they are."""
    folder = root / f"{gem_id}-source"
    folder.mkdir(parents=True)
    (folder / "note.py").write_text(TOOL, encoding="utf-8")
    manifest: dict[str, object] = {
        "id": gem_id,
        "name": gem_id,
        "version": "1.0.0",
        "permissions": {
            "knowledge": {
                "permissions": ["facts.read:self:pref.food.*", LIKES],
                "reason": "Remember what you like",
            }
        },
        "tools": [{"name": "note", "entry": "note.py", "permissions": {"knowledge": True}}],
    }
    if sops is not None:
        manifest["sops"] = sops
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def installed(space: notochord.Space, root: Path) -> None:
    space.gems.install(write_gem(root))
    grant(space)


def run_once(space: notochord.Space, conversation: Path, food: str = "soup") -> str:
    """Run the tool for real in its own process; the run's id."""
    conversation.mkdir(parents=True, exist_ok=True)
    record = space.gems.runner.run_sync(GEM, "note", input={"food": food}, conversation=conversation)
    assert record.status == "succeeded", f"{record.error}\n{record.log}"
    return record.id


def grant(space: notochord.Space) -> None:
    """Switch on the gem's permissions (it is installed already)."""
    space.gems.set_permission(GEM, "facts.read:self:pref.food.*", True)
    space.gems.set_permission(GEM, LIKES, True)
