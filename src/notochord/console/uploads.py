"""Uploaded gem packages: unpacked safely into a staging folder until the user confirms the install.

A package is either a ``.zip`` of the gem's folder (its ``notochord.json`` or ``manifest.json`` at
the top, or inside one top-level folder) or a manifest file alone. Unpacking refuses, before writing
anything, absolute paths, ``..``, links, more than :data:`MAX_ENTRIES` entries and more than
:data:`MAX_UNPACKED` bytes in all (declared sizes are checked first, and the bytes actually read are
counted again, so a lying header does not help). A staged upload is named by a random token and is
removed after the install, or after :data:`STAGING_LIFETIME` seconds.
"""

from __future__ import annotations

import io
import lzma
import re
import secrets
import shutil
import stat
import time
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, Final

from notochord.errors import GemError
from notochord.gems.manifest import DRAFT_FILE, PACKAGED_FILE

__all__ = ["MAX_ENTRIES", "MAX_UNPACKED", "STAGING_LIFETIME", "Uploads"]

MAX_ENTRIES: Final = 2000
MAX_UNPACKED: Final = 64 * 1024 * 1024
STAGING_LIFETIME: Final = 3600
_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]{20,64}")
_MANIFESTS: Final = (PACKAGED_FILE, DRAFT_FILE)


class Uploads:
    """The staging area ``<data_dir>/console-uploads``."""

    def __init__(self, data_dir: Path) -> None:
        self._root = data_dir / "console-uploads"

    def stage(self, filename: str, data: bytes) -> tuple[str, Path]:
        """Unpack ``data`` (named ``filename`` by the browser); returns its token and gem folder.

        Raises:
            GemError: the file is not a gem package, or breaks a limit; nothing is kept.
        """
        self._sweep()
        token = secrets.token_urlsafe(24)
        target = self._root / token
        try:
            target.mkdir(parents=True, mode=0o700)
            if filename.lower().endswith(".json"):
                # the file name decides the form, as for a manifest installed from a folder
                name = DRAFT_FILE if filename.lower().endswith(DRAFT_FILE) else PACKAGED_FILE
                (target / name).write_bytes(data)
            elif zipfile.is_zipfile(io.BytesIO(data)):
                _unzip(data, target)
            else:
                raise GemError(f"{filename or 'the file'} is not a gem package: upload a .zip or a notochord.json")
            return token, _gem_folder(target)
        except OSError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise GemError(f"cannot unpack {filename or 'the upload'}: {exc.strerror or exc}") from exc
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise GemError(f"{filename or 'the upload'} is a damaged .zip: {exc}") from exc
        except GemError:
            shutil.rmtree(target, ignore_errors=True)
            raise

    def folder(self, token: str) -> Path:
        """The gem folder of a staged upload.

        Raises:
            GemError: no such upload (unknown token, or it expired); upload the file again.
        """
        target = self._root / token
        if not _TOKEN.fullmatch(token) or not target.is_dir():
            raise GemError("that upload is no longer here; choose the file again")
        return _gem_folder(target)

    def discard(self, token: str) -> None:
        if _TOKEN.fullmatch(token):
            shutil.rmtree(self._root / token, ignore_errors=True)

    def _sweep(self) -> None:
        if not self._root.is_dir():
            return
        cutoff = time.time() - STAGING_LIFETIME
        for entry in self._root.iterdir():
            try:
                if entry.stat().st_mtime < cutoff:
                    shutil.rmtree(entry, ignore_errors=True)
            except OSError:
                continue


def _gem_folder(target: Path) -> Path:
    if any((target / name).is_file() for name in _MANIFESTS):
        return target
    inner = [p for p in target.iterdir() if p.is_dir()]
    if len(inner) == 1 and any((inner[0] / name).is_file() for name in _MANIFESTS):
        return inner[0]
    raise GemError(f"the package has no {PACKAGED_FILE} or {DRAFT_FILE} at its top")


def _read(source: IO[bytes], member: zipfile.ZipInfo) -> bytes:
    """The next bytes of ``member``; a damaged compressed stream is a damaged .zip, whatever the
    decompressor calls it (zlib and lzma raise their own errors, bz2 an ``OSError`` that would read
    as a disk problem)."""
    try:
        return source.read(64 * 1024)
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise zipfile.BadZipFile(f"the compressed data of {member.filename} is damaged") from exc


def _unzip(data: bytes, target: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > MAX_ENTRIES:
            raise GemError(f"the package has more than {MAX_ENTRIES} files")
        if sum(m.file_size for m in members) > MAX_UNPACKED:
            raise GemError(f"the package unpacks to more than {MAX_UNPACKED // (1024 * 1024)} MB")
        planned: list[tuple[zipfile.ZipInfo, Path]] = []
        for member in members:
            name = PurePosixPath(member.filename.replace("\\", "/"))
            if name.is_absolute() or ".." in name.parts or ":" in member.filename:
                raise GemError(f"the package holds a path outside its folder: {member.filename}")
            if stat.S_ISLNK(member.external_attr >> 16):
                raise GemError(f"the package holds a link, which gems may not ship: {member.filename}")
            planned.append((member, target.joinpath(*name.parts)))
        written = 0
        for member, path in planned:
            if member.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, path.open("wb") as sink:
                while chunk := _read(source, member):
                    written += len(chunk)
                    if written > MAX_UNPACKED:
                        raise GemError(f"the package unpacks to more than {MAX_UNPACKED // (1024 * 1024)} MB")
                    sink.write(chunk)
