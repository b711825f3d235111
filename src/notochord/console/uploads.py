"""Uploaded gem packages: unpacked safely into a staging folder until the user confirms the install.

A package is either a ``.zip`` of the gem's folder (its ``notochord.json`` or ``manifest.json`` at
the top, or inside one top-level folder) or a manifest file alone. Unpacking refuses, before writing
anything:

- absolute paths, ``..`` and links;
- a tool whose entry lies in what is left out (below): the gem's own files are never dropped in
  silence;
- more files and folders than a gem folder install copies (:data:`~notochord.gems.package.MAX_ENTRIES`,
  counting the folders the entries imply, but not the one top folder the gem is wrapped in) and
  more bytes (:data:`~notochord.gems.package.MAX_TOTAL_BYTES`): declared sizes are checked first,
  and the bytes actually read are counted again, so a lying header does not help. The limits are the
  folder install's own, so that a package the install screen shows is never refused at install for
  its size;
- a name held twice: unpacking would keep the last one without a word;
- two names that differ only in case (or Unicode form), files or folders: on a disk whose names
  ignore case one would overwrite the other, or be unpacked into the other's folder, before the
  install's own check of the folder could see both.

Well-known clutter (``.git/``, ``__pycache__/``, ``.venv/``, ``__MACOSX/``,
``.DS_Store``, editor swap files: :func:`~notochord.gems.package.left_out_kind`, the folder install's
own list) is neither unpacked nor counted against the limits; :meth:`Uploads.stage` says how many of
each kind it left out.

A staged upload is named by a random token and is removed after the install, or after
:data:`STAGING_LIFETIME` seconds.

Every refusal is an :class:`UploadRefusedError`: its message is the English sentence, and its ``key``
(with ``values``, and ``lines`` for a list of problems) the console's words for it in the reader's
language, never the system's own words about a file or an archive.
"""

from __future__ import annotations

import io
import lzma
import posixpath
import re
import secrets
import shutil
import stat
import time
import unicodedata
import zipfile
import zlib
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import IO, Final, NamedTuple

from notochord.errors import GemError, ManifestError
from notochord.gems.manifest import DRAFT_FILE, PACKAGED_FILE, read_manifest
from notochord.gems.package import MAX_ENTRIES, MAX_TOTAL_BYTES, left_out_kind, left_out_problem

__all__ = ["STAGING_LIFETIME", "StagedUpload", "UploadRefusedError", "Uploads"]

_TOO_LARGE: Final = (
    f"the package unpacks to more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB, the most a gem may hold; "
    "large data belongs in the manifest's resources, downloaded at install"
)
STAGING_LIFETIME: Final = 3600
_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]{20,64}")
_MANIFESTS: Final = (PACKAGED_FILE, DRAFT_FILE)


class UploadRefusedError(GemError):
    """An uploaded package that is refused; nothing of it is kept.

    ``key`` is the console's sentence for it (``upload_*``), ``values`` fill it, and ``lines`` are
    the sentences of each problem listed under it, as ``(key, values)``.
    """

    def __init__(
        self,
        message: str,
        key: str,
        values: dict[str, str] | None = None,
        *,
        lines: tuple[tuple[str, dict[str, str]], ...] = (),
    ) -> None:
        super().__init__(message)
        self.key = key
        self.values = dict(values or {})
        self.lines = lines


def _too_large() -> UploadRefusedError:
    return UploadRefusedError(_TOO_LARGE, "upload_too_large", {"mib": str(MAX_TOTAL_BYTES // (1024 * 1024))})


def _too_many() -> UploadRefusedError:
    return UploadRefusedError(_TOO_MANY, "upload_too_many", {"max": str(MAX_ENTRIES)})


class StagedUpload(NamedTuple):
    """An unpacked upload: its token, its gem folder, and what was left out (kind → how many)."""

    token: str
    folder: Path
    left_out: dict[str, int]


class Uploads:
    """The staging area ``<data_dir>/console-uploads``."""

    def __init__(self, data_dir: Path) -> None:
        self._root = data_dir / "console-uploads"

    def stage(self, filename: str, data: bytes) -> StagedUpload:
        """Unpack ``data`` (named ``filename`` by the browser); returns its token, its gem folder and
        what was left out.

        Raises:
            UploadRefusedError: the file is not a gem package, or breaks a limit; nothing is kept.
            ManifestError: a tool's entry is in what was left out; nothing is kept.
        """
        self._sweep()
        token = secrets.token_urlsafe(24)
        target = self._root / token
        left_out: Counter[str] = Counter()
        try:
            target.mkdir(parents=True, mode=0o700)
            if filename.lower().endswith(".json"):
                # the file name decides the form, as for a manifest installed from a folder
                name = DRAFT_FILE if filename.lower().endswith(DRAFT_FILE) else PACKAGED_FILE
                (target / name).write_bytes(data)
            elif zipfile.is_zipfile(io.BytesIO(data)):
                _unzip(data, target, left_out)
            else:
                raise UploadRefusedError(
                    f"{filename or 'the file'} is not a gem package: upload a .zip or a notochord.json",
                    "upload_not_package",
                    {"file": filename},
                )
            folder = _gem_folder(target)
            if left_out:
                _check_entries_kept(folder)
            return StagedUpload(token, folder, dict(left_out))
        except OSError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise UploadRefusedError(
                f"cannot unpack {filename or 'the upload'}: {exc.strerror or exc}", "upload_unpack", {"file": filename}
            ) from exc
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise UploadRefusedError(
                f"{filename or 'the upload'} is a damaged .zip: {exc}", "upload_damaged", {"file": filename}
            ) from exc
        except (GemError, ManifestError):
            shutil.rmtree(target, ignore_errors=True)
            raise

    def folder(self, token: str) -> Path:
        """The gem folder of a staged upload.

        Raises:
            UploadRefusedError: no such upload (unknown token, or it expired); upload the file again.
        """
        target = self._root / token
        if not _TOKEN.fullmatch(token) or not target.is_dir():
            raise UploadRefusedError("that upload is no longer here; choose the file again", "upload_gone")
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


def _check_entries_kept(folder: Path) -> None:
    """Refuse the package if a tool's entry is in what unpacking left out; an invalid manifest is
    left for the install screen to report.

    Raises:
        ManifestError: naming each such tool and why its file is never installed.
    """
    try:
        manifest, _ = read_manifest(folder)
    except ManifestError:
        return
    problems = []
    for index, tool in enumerate(manifest.tools):
        if tool.entry is None:
            continue
        parts = PurePosixPath(posixpath.normpath(tool.entry.replace("\\", "/"))).parts
        problem = left_out_problem(parts)
        if problem is not None:
            field = f"tools[{index}].entry" if manifest.form == "packaged" else "entry"
            problems.append(f"{field}: tool {tool.name!r}: {tool.entry} {problem}")
    if problems:
        raise ManifestError(problems, source=manifest.source)


def _gem_folder(target: Path) -> Path:
    if any((target / name).is_file() for name in _MANIFESTS):
        return target
    inner = [p for p in target.iterdir() if p.is_dir()]
    if len(inner) == 1 and any((inner[0] / name).is_file() for name in _MANIFESTS):
        return inner[0]
    raise UploadRefusedError(f"the package has no {PACKAGED_FILE} or {DRAFT_FILE} at its top", "upload_no_manifest")


def _read(source: IO[bytes], member: zipfile.ZipInfo) -> bytes:
    """The next bytes of ``member``; a damaged compressed stream is a damaged .zip, whatever the
    decompressor calls it (zlib and lzma raise their own errors, bz2 an ``OSError`` that would read
    as a disk problem)."""
    try:
        return source.read(64 * 1024)
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise zipfile.BadZipFile(f"the compressed data of {member.filename} is damaged") from exc


def _fold(name: str) -> str:
    """``name`` as a system whose file names ignore case (and Unicode form) sees it, as the folder
    install's check folds it."""
    return unicodedata.normalize("NFC", name).casefold()


_TOO_MANY: Final = (
    f"the package holds more than {MAX_ENTRIES} files and folders, the most a gem may hold; "
    "pack only the folder that holds the gem's manifest and its own files"
)


def _left_out(member: zipfile.ZipInfo, parts: tuple[str, ...], left_out: Counter[str], seen: set[str]) -> bool:
    """Whether ``member`` is clutter or inside it; each left-out path is counted once in ``left_out``."""
    for index, part in enumerate(parts):
        kind = left_out_kind(part, folder=index < len(parts) - 1 or member.is_dir())
        if kind is not None:
            path = "/".join(parts[: index + 1])
            if path not in seen:
                seen.add(path)
                left_out[kind] += 1
            return True
    return False


def _plan(members: list[zipfile.ZipInfo], left_out: Counter[str]) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    """Each member with the parts of its path, once every name and the count are known good;
    clutter is counted in ``left_out`` instead.

    Raises:
        UploadRefusedError: a path outside the folder, a link, too many files and folders, or names held
            twice or differing only in case (every such pair named at once).
    """
    planned: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    # every path unpacking makes, files and the folders they imply: folded form -> path
    made: dict[str, str] = {}
    seen: set[tuple[str, ...]] = set()
    problems: dict[str, tuple[str, dict[str, str]]] = {}
    skipped: set[str] = set()
    for member in members:
        name = PurePosixPath(member.filename.replace("\\", "/"))
        if name.is_absolute() or ".." in name.parts or ":" in member.filename:
            raise UploadRefusedError(
                f"the package holds a path outside its folder: {member.filename}",
                "upload_outside",
                {"path": member.filename},
            )
        parts = name.parts
        if not parts or _left_out(member, parts, left_out, skipped):
            continue  # clutter is not unpacked, so a link there (an editor's lock file) does no harm
        if stat.S_ISLNK(member.external_attr >> 16):
            raise UploadRefusedError(
                f"the package holds a link, which gems may not ship: {member.filename}",
                "upload_link",
                {"path": member.filename},
            )
        if parts in seen:
            said = f"{name} is in it twice, and unpacking would keep only the last one: pack the gem's folder again"
            problems.setdefault(said, ("upload_twice", {"path": str(name)}))
        seen.add(parts)
        planned.append((member, parts))
        folded = tuple(_fold(part) for part in parts)
        # the deepest first: a path already made was made with every folder holding it
        for depth in range(len(parts), 0, -1):
            path, key = "/".join(parts[:depth]), "/".join(folded[:depth])
            twin = made.get(key)
            if twin is None:
                made[key] = path
                if len(made) > MAX_ENTRIES + 1:
                    raise _too_many()
                continue
            if twin != path:
                said = (
                    f"{twin} and {path} differ only in case; a system whose file names ignore case keeps "
                    "only one of them: rename one"
                )
                problems.setdefault(said, ("upload_case", {"first": twin, "second": path}))
            break
    # the one top folder a gem is wrapped in is the gem folder itself, not one of its entries
    wrapped = len({path.split("/", 1)[0] for path in made.values()}) == 1 and any("/" in p for p in made.values())
    if len(made) - wrapped > MAX_ENTRIES:
        raise _too_many()
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise UploadRefusedError(
            f"the package cannot be installed:\n{lines}", "upload_cannot_install", lines=tuple(problems.values())
        )
    return planned


def _unzip(data: bytes, target: Path, left_out: Counter[str]) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        planned = _plan(archive.infolist(), left_out)
        if sum(member.file_size for member, _ in planned) > MAX_TOTAL_BYTES:
            raise _too_large()
        written = 0
        for member, parts in planned:
            path = target.joinpath(*parts)
            if member.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, path.open("xb") as sink:
                while chunk := _read(source, member):
                    written += len(chunk)
                    if written > MAX_TOTAL_BYTES:
                        raise _too_large()
                    sink.write(chunk)
