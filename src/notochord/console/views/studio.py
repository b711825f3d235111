"""Gem Studio › Knowledge (K-UI-14, P-KVAL-07): a draft manifest checked by install's own checks.

The text is checked exactly as an install reads a file: it is written to a scratch ``manifest.json``
(Studio's draft form) or ``notochord.json`` (the packaged form) and read back with
:func:`~notochord.gems.manifest.load_manifest`, so the mistakes listed are install's, word for word.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from notochord.access.sentences import Lang, sentence
from notochord.errors import ManifestError
from notochord.gems.manifest import DRAFT_FILE, PACKAGED_FILE, load_manifest

__all__ = ["MAX_DRAFT", "StudioCheck", "check_draft"]

MAX_DRAFT: Final = 256 * 1024
"""Characters of manifest text checked; a longer text is refused with one mistake."""


@dataclass(frozen=True)
class StudioCheck:
    problems: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    reason: str | None = None
    empty: bool = False


def check_draft(text: str, *, form: Literal["draft", "packaged"], lang: Lang) -> StudioCheck:
    """Install's checks on ``text``; with no mistakes, the permissions as the user will read them."""
    if not text.strip():
        return StudioCheck(empty=True)
    if len(text) > MAX_DRAFT:
        return StudioCheck(problems=[f"$: the manifest is longer than {MAX_DRAFT // 1024} KB"])
    name = DRAFT_FILE if form == "draft" else PACKAGED_FILE
    with tempfile.TemporaryDirectory(prefix="notochord-studio-") as scratch:
        path = Path(scratch) / name
        path.write_text(text, encoding="utf-8")
        try:
            manifest = load_manifest(path)
        except ManifestError as error:
            return StudioCheck(problems=list(error.problems))
    describe = manifest.knowledge.describe_predicate
    return StudioCheck(
        sentences=[sentence(p, lang=lang, describe_predicate=describe) for p in manifest.knowledge.permissions],
        reason=manifest.knowledge.reason,
    )
