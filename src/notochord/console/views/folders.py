"""A gem's "Settings › Working folder" as data (P-FILE-29…31, P-FILE-33).

Shown only for a gem with a scheduled or event-triggered SOP (P-FILE-30): those runs have no
conversation, so their ``workspace:`` is the folder the user chooses here, and without one they
have no ``workspace:`` at all (P-FILE-29, P-FILE-27). The choice is checked by the rules of
:mod:`notochord.files.working_folders` (P-FILE-31) when it is made and again at each use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from notochord.app import Space
from notochord.errors import GemError
from notochord.gems.folders import GemFolders
from notochord.gems.manifest import Manifest

__all__ = ["WorkingFolder", "folders_of", "working_folder"]


@dataclass(frozen=True)
class WorkingFolder:
    folder: str | None
    sops: list[tuple[str, str]]
    """The scheduled and event-triggered SOPs that see it, as ``(name, trigger)``."""


def folders_of(space: Space) -> GemFolders:
    found = space.gems.services.gem_folders
    if found is None:
        raise GemError(f"the gem folders of space {space.name} are not available")
    return found


def working_folder(space: Space, gem_id: str, manifest: Manifest) -> WorkingFolder | None:
    """The section for the gem's page, or ``None`` when no SOP of the gem runs without a conversation."""
    background: list[tuple[str, str]] = [(s.name, s.trigger) for s in manifest.sops if s.background]
    if not background:
        return None
    chosen: Path | None = folders_of(space).working_folder(gem_id, core=space.core)
    return WorkingFolder(folder=str(chosen) if chosen is not None else None, sops=background)
