"""Finding the files ``notochord docs import`` is given, and reading their text.

The rules of the import (which files are taken, which are skipped and why, how a file is named)
are in :mod:`notochord.cli.docs_cmd`; this module finds the candidates and reads the text of the
kinds that are read as they are (Markdown and plain text). A file refused here is refused alone:
its reason goes into the listing and the rest of the import goes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.quotas import MAX_BODY

__all__ = [
    "EXTRACTED",
    "MARKDOWN",
    "NOT_UTF8_NAME",
    "SUFFIXES",
    "SUPPORTED",
    "Candidate",
    "Found",
    "find",
    "is_text",
    "markdown_title",
    "read_text",
]

MARKDOWN = frozenset({".md", ".markdown"})
_PLAIN = frozenset({".txt"})
# read by the extraction the knowledge-base service uses for uploads
EXTRACTED = frozenset({".html", ".htm", ".pdf", ".docx"})
SUFFIXES = MARKDOWN | _PLAIN | EXTRACTED
SUPPORTED = "Markdown (.md, .markdown), text (.txt), HTML (.html, .htm), PDF (.pdf) and Word (.docx)"
_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")

# a UTF-8 character takes at most 4 bytes: anything larger cannot fit, so it is not even read
_MAX_FILE_BYTES = 4 * MAX_BODY


def markdown_title(text: str) -> str | None:
    """The text of the first level-1 ATX heading outside fenced code, or ``None``."""
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _H1.match(line)
        if heading and heading.group(1).strip():
            return heading.group(1).strip()
    return None


@dataclass(frozen=True)
class Candidate:
    path: Path
    relative: str
    """The path relative to the folder given (or the file's name): ``meta.path`` and the key."""


@dataclass
class Found:
    files: list[Candidate]
    skipped: list[dict[str, str]]
    unreadable: list[dict[str, str]]

    def skip(self, path: Path, reason: str) -> None:
        self.skipped.append({"path": str(path), "reason": reason})


def _unsupported(path: Path) -> str:
    """Why ``path`` (found beside the files to import, or named) is not imported."""
    if path.is_symlink() and not path.exists():
        return "not imported: a link to nothing (its target does not exist)"
    if path.exists() and not path.is_file() and not path.is_dir():
        return "not imported: not a file but a pipe, socket or device"
    kind = f"{path.suffix.lower()} files are" if path.suffix else "a file without an extension is"
    return f"not imported: {kind} not supported (supported: {SUPPORTED})"


def _walk(root: Path, folder: Path, found: Found) -> None:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        found.unreadable.append({"path": str(folder), "error": f"cannot list it: {exc.strerror or exc}"})
        return
    for entry in entries:
        if entry.name.startswith("."):
            found.skip(entry, "hidden")
        elif entry.is_dir():
            if entry.is_symlink():
                found.skip(entry, "a link to a folder, not followed")
            else:
                _walk(root, entry, found)
        elif entry.is_file() and entry.suffix.lower() in SUFFIXES:
            target = entry.resolve()
            if entry.is_symlink() and not target.is_relative_to(root.resolve()):
                # a folder from elsewhere (an unpacked archive) may hold "notes.md" pointing at a key
                found.skip(entry, f"not imported: a link to a file outside the folder ({target}), not followed")
            else:
                found.files.append(Candidate(entry, entry.relative_to(root).as_posix()))
        else:
            found.skip(entry, _unsupported(entry))


def find(paths: list[Path]) -> Found:
    found = Found([], [], [])
    for given in paths:
        if given.is_dir():
            _walk(given, given, found)
        elif given.is_file() and given.suffix.lower() in SUFFIXES:
            found.files.append(Candidate(given, given.name))
        elif given.exists() or given.is_symlink():
            found.skip(given, _unsupported(given))
        else:
            found.unreadable.append({"path": str(given), "error": "no such file or folder"})
    return found


NOT_UTF8_NAME = (
    "its name is not UTF-8 text (a \\udcXX in the path stands for a byte that is not): rename it, then import it"
)


def is_text(name: str) -> bool:
    """Whether a file name decoded to text: bytes that are not UTF-8 arrive as lone surrogates."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_text(path: Path) -> str:
    """The file's text, or :class:`KnowledgeValidationError` saying why it cannot be imported."""
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            raise KnowledgeValidationError(f"too large: a document holds at most {MAX_BODY:,} characters")
        raw = path.read_bytes()
    except OSError as exc:
        raise KnowledgeValidationError(f"cannot read it: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KnowledgeValidationError(f"not UTF-8 text (byte {exc.start} is invalid)") from exc
    if "\x00" in text:
        raise KnowledgeValidationError("not text: it contains NUL bytes")
    return text.replace("\r\n", "\n").replace("\r", "\n")
