"""The record a backup carries (``notochord-backup.json``): what it holds, and reading it back.

The record lists every file of the vault with its size and SHA-256. Reading it, it is hostile input:
each value must have exactly the type notochord writes. JSON's ``true`` is Python's ``True``, which
equals ``1``, and ``1.0`` equals ``1`` too, so comparing values is not enough: a record that only
compares equal to a well-formed one was not written by notochord.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import tarfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from notochord.errors import ConfigurationError

__all__ = [
    "FORMAT",
    "MANIFEST",
    "ROOT",
    "UNREADABLE",
    "VERSION",
    "BackupSummary",
    "damaged",
    "read_manifest",
    "sha256",
    "spaces",
]

FORMAT = "notochord-backup"
VERSION = 1
MANIFEST = "notochord-backup.json"
ROOT = "vault"
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024  # a record lists a vault's files: far less, however large the vault
_MAX_CREATED_CHARS = 64  # the creation time is shown after a restore: a line, not a page
_SHA256 = re.compile(r"[0-9a-f]{64}")
# what reading a damaged .tar.gz raises: zlib's own error is no OSError, and a CRC mismatch is one
UNREADABLE = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


@dataclass(frozen=True)
class BackupSummary:
    """What a backup holds: its file, the number of files and bytes, and the spaces in it."""

    path: Path
    files: int
    bytes: int
    spaces: tuple[str, ...]
    created: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "files": self.files,
            "bytes": self.bytes,
            "spaces": list(self.spaces),
            "created": self.created,
        }


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def spaces(paths: Iterable[str]) -> tuple[str, ...]:
    """The spaces a vault of these files holds, by name (``personal``, ``org:<id>``)."""
    names = []
    for rel in paths:
        parts = PurePosixPath(rel).parts
        if len(parts) == 2 and parts[0] == "spaces" and parts[1].endswith(".db"):
            stem = parts[1].removesuffix(".db")
            names.append("personal" if stem == "personal" else "org:" + stem.removeprefix("org-"))
    return tuple(sorted(names))


def damaged(source: Path) -> ConfigurationError:
    return ConfigurationError(
        f"{source} is damaged: it cannot be read to its end (it was cut short or changed since it was "
        "written); restore from another copy of the backup"
    )


def read_manifest(archive: tarfile.TarFile, source: Path) -> dict[str, Any]:
    """The record of ``archive``, every value of it checked; refused in words when it is not one.

    notochord writes the record as the archive's first member, and only there is it looked for:
    the members after it are judged against it one at a time, never all read first (a few
    megabytes of .tar.gz hold a million empty members).
    """
    try:
        member = archive.next()
        if member is None or member.name != MANIFEST or not member.isfile() or member.size > _MAX_MANIFEST_BYTES:
            raise KeyError(MANIFEST)
        handle: IO[bytes] | None = archive.extractfile(member)
        if handle is None:
            raise KeyError(MANIFEST)
        text = handle.read()
    except KeyError as exc:
        raise ConfigurationError(f"{source} is not a notochord backup (it has no readable {MANIFEST})") from exc
    except (*UNREADABLE, OSError) as exc:
        raise damaged(source) from exc
    try:
        manifest = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ConfigurationError(f"{source} is not a notochord backup (it has no readable {MANIFEST})") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), list)
    ):
        raise ConfigurationError(f"{source} is not a notochord backup ({MANIFEST} is not one of ours)")
    _check_version(manifest.get("version"), source)
    _check_files(manifest["files"], source)
    created = manifest.setdefault("created", "")
    if not isinstance(created, str) or len(created) > _MAX_CREATED_CHARS or not created.isprintable():
        raise ConfigurationError(
            f"{source} is damaged: its {MANIFEST} gives {_shown(created)} as the time it was made, which "
            "is no time; restore from another copy of the backup"
        )
    return manifest


def _shown(value: object) -> str:
    """``value`` as it is written in the record, cut to a few words."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _check_version(version: object, source: Path) -> None:
    # ``type(…) is int``: ``True`` and ``1.0`` both equal 1, and neither is a version notochord writes
    if type(version) is not int:
        raise ConfigurationError(
            f"{source} is not a notochord backup of a known version (its {MANIFEST} gives {_shown(version)} as "
            "its version, which no notochord writes): it was changed since it was written; restore from "
            "another copy of the backup"
        )
    if version != VERSION:
        raise ConfigurationError(
            f"{source} is a notochord backup of format {version}; this version reads format "
            f"{VERSION}: restore it with the version of notochord that wrote it, or a newer one"
        )


def _check_files(entries: list[Any], source: Path) -> None:
    seen: set[str] = set()
    for entry in entries:
        problem = _entry_problem(entry)
        if problem is None and entry["path"] in seen:
            problem = "a second time"
        if problem is not None:
            shown = entry.get("path") if isinstance(entry, dict) else entry
            raise ConfigurationError(f"{source} is damaged: its {MANIFEST} lists {str(shown)[:200]!r} {problem}")
        seen.add(entry["path"])
    folders = {parent.as_posix() for path in seen for parent in PurePosixPath(path).parents}
    clash = sorted(seen & folders)
    if clash:
        raise ConfigurationError(
            f"{source} is damaged: its {MANIFEST} lists {clash[0][:200]!r} both as a file and as a folder"
        )


def _entry_problem(entry: object) -> str | None:
    """What is wrong with a record's entry for one file (``None``: it names a file inside the vault,
    with a size and a digest)."""
    if not isinstance(entry, dict):
        return "where a file's path, size and digest belong"
    path, size, digest = entry.get("path"), entry.get("size"), entry.get("sha256")
    if not isinstance(path, str) or not _inside(path):
        return "as a file, which is no path inside the vault"
    if type(size) is not int or size < 0:
        return f"with the size {_shown(size)}, which is no number of bytes"
    if not isinstance(digest, str) or _SHA256.fullmatch(digest) is None:
        return f"with the digest {_shown(digest)}, which is no SHA-256"
    return None


def _inside(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith("/")
        and "\x00" not in path
        and PurePosixPath(*parts).as_posix() == path
        and all(part not in (".", "..") for part in parts)
    )
