"""Backup and restore of a whole data directory, while it is in use.

A backup is one gzip-compressed tar file holding ``notochord-backup.json`` (what was copied, with
each file's size and SHA-256) and, under ``vault/``, every file of the data directory:

- every SQLite database (each space, each file history) is copied with SQLite's online backup API,
  so the copy is a consistent snapshot even while other processes write;
- encrypted databases (a gem's private storage, SQLCipher) cannot be read without their key, so
  they are copied byte for byte and the copy is kept only when no write touched the file meanwhile
  (otherwise it is taken again);
- everything else (the master key, gem code and folders, file-history blobs) is copied as it is.

Journal side files (``-wal``, ``-shm``, ``-journal``) are never copied: a snapshot already holds
what was committed. Nor are a space's saved search graphs and full-text indexes (``*.usearch`` and
``*.fulltext`` beside its database): they are rebuilt from the vectors and the full-text table in
the database, and can weigh as much as the database itself. Each
database is consistent on its own; the backup is not one atomic cut across databases, which no
reader relies on.

The master key is in the backup: whoever holds the file can read the vault's gem storage and refs,
so the file is created readable by its owner only (mode 0600) and must be kept as safe as the vault.

``restore`` refuses a data directory that is not empty, checks every file against the manifest
(names and sizes before a byte is unpacked, and whether the disk has room for them; contents
after), and moves the vault into place only when all of it was unpacked. The manifest is read as hostile
input: every path in it must name a file inside the vault, and nothing outside the folder being
unpacked is ever read or written on its say.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from notochord.errors import (
    ConfigurationError,
    ReadOnlyStoreError,
    SpaceNotFoundError,
    StorageError,
    StorageFullError,
)
from notochord.files.full import disk_full
from notochord.files.placing import place_new

__all__ = ["BackupSummary", "backup", "restore"]

FORMAT = "notochord-backup"
VERSION = 1
MANIFEST = "notochord-backup.json"
_ROOT = "vault"
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024  # a record lists a vault's files: far less, however large the vault
_SQLITE_HEADER = b"SQLite format 3\x00"
_SIDE_FILES = ("-wal", "-shm", "-journal")
# saved search graphs and full-text indexes, or ones being written (``….usearch.<pid>.partial``)
_REBUILT = (".usearch", ".fulltext")
_STABLE_COPY_ATTEMPTS = 50
_BUSY_TIMEOUT_S = 30.0
_KEY_BYTES = 32  # what notochord.app reads as the master key; any other size opens no vault
# what reading a damaged .tar.gz raises: zlib's own error is no OSError, and a CRC mismatch is one
_UNREADABLE = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)
# a name this file system will not hold, whatever the folder's permissions
_NAME_REFUSED = (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL)


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


def backup(data_dir: Path, destination: Path) -> BackupSummary:
    """Write a snapshot of the vault at ``data_dir`` to ``destination`` (a new file, or a folder).

    Args:
        data_dir: the vault.
        destination: the backup file to create; if it is an existing folder, a file named
            ``notochord-backup-<UTC time>.tar.gz`` is created in it.

    Raises:
        SpaceNotFoundError: there is no vault at ``data_dir``.
        ConfigurationError: the destination exists, or lies inside the data directory.
        StorageError: a file could not be read or the backup could not be written.
    """
    source = Path(os.path.abspath(data_dir))
    if not (source / "master.key").is_file():
        raise SpaceNotFoundError(f"no vault at {source}; run `notochord init`", path=str(source))
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    target = Path(os.path.abspath(destination.expanduser()))
    stem = f"notochord-backup-{created.replace(':', '')}" if target.is_dir() else None
    if stem is not None:
        target = _free_name(target, stem)
    if target.exists() or target.is_symlink():
        raise ConfigurationError(f"{target} already exists; name a new file for the backup")
    # resolved too: through a symlinked folder the file would still land in the vault, and the
    # next backup would carry this one
    if target.is_relative_to(source) or target.parent.resolve().is_relative_to(source.resolve()):
        raise ConfigurationError(f"{target} is inside the data directory {source}; write the backup elsewhere")
    if not target.parent.is_dir():
        _refuse_non_folder(target, "write the backup into a folder")
        raise ConfigurationError(f"the folder {target.parent} does not exist; create it or name another one")

    entries: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix=".notochord-backup-", dir=target.parent) as staging_name:
            staging = Path(staging_name)
            snapshots = []
            for rel in _files(source):
                copy = _snapshot(source / rel, staging / rel)
                if copy is not None:
                    snapshots.append((rel, copy))
            for rel, copy in snapshots:
                entries.append({"path": rel.as_posix(), "size": copy.stat().st_size, "sha256": _sha256(copy)})
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "created": created,
                "source": str(source),
                "files": entries,
            }
            partial = staging / "backup.tar.gz"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
                _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=2).encode("utf-8"))
                for rel, copy in snapshots:
                    archive.add(copy, arcname=f"{_ROOT}/{rel.as_posix()}", recursive=False)
                raw.flush()
                os.fsync(raw.fileno())
            target = _place(partial, target, stem=stem)
    except OSError as exc:
        raise _written(
            exc, f"the backup {target}", target.parent, StorageError, "name a folder that can be written"
        ) from exc
    return BackupSummary(
        path=target,
        files=len(entries),
        bytes=sum(e["size"] for e in entries),
        spaces=_spaces(e["path"] for e in entries),
        created=created,
    )


def _free_name(folder: Path, stem: str) -> Path:
    """``<stem>.tar.gz`` in ``folder``, or ``<stem>-2.tar.gz``, ``-3``… when taken: two backups made
    within one second both get written."""
    for number in range(1, 1000):
        candidate = folder / (f"{stem}.tar.gz" if number == 1 else f"{stem}-{number}.tar.gz")
        if not (candidate.exists() or candidate.is_symlink()):
            return candidate
    raise ConfigurationError(f"{folder} already holds 999 backups named {stem}; name a new file for the backup")


def _place(partial: Path, target: Path, *, stem: str | None) -> Path:
    """Move the finished backup to ``target`` without ever replacing a file that appeared there
    meanwhile; a backup named by its time (``stem``) takes the next free name instead. Returns
    where it went."""
    while True:
        try:
            place_new(partial, target)
            return target
        except FileExistsError:
            if stem is None:
                raise ConfigurationError(f"{target} already exists; name a new file for the backup") from None
            target = _free_name(target.parent, stem)


def restore(archive_path: Path, data_dir: Path) -> BackupSummary:
    """Unpack the backup ``archive_path`` into ``data_dir``, which must be new or empty.

    Raises:
        ConfigurationError: the file is missing, is not a notochord backup or is damaged (cut
            short, changed, or crafted), or the data directory is not empty or not a folder.
            Nothing is written then.
        StorageFullError: the disk has no room for the vault; nothing is left behind.
        StorageError: the files could not be written.
    """
    source = Path(os.path.abspath(archive_path.expanduser()))
    target = Path(os.path.abspath(data_dir))
    if not source.is_file():
        raise ConfigurationError(f"no backup file at {source}")
    _refuse_non_folder(target, "restore into a new or empty folder (--data-dir or NOTOCHORD_DATA_DIR)")
    if target.exists() and not target.is_dir():
        raise ConfigurationError(
            f"the data directory {target} is a file, not a folder; restore into a new or empty folder "
            "(--data-dir or NOTOCHORD_DATA_DIR)"
        )
    if target.exists() and any(target.iterdir()):
        raise ConfigurationError(
            f"the data directory {target} is not empty; restore into a new or empty folder "
            "(--data-dir or NOTOCHORD_DATA_DIR), or move the current vault away first"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Unpacked on the file system the vault goes to, so that moving it into place is a rename:
        # an existing empty data directory may be a mount point of its own (a volume, a new disk).
        with (
            tempfile.TemporaryDirectory(
                prefix=".notochord-restore-", dir=target if target.exists() else target.parent
            ) as staging_name,
            _open_archive(source) as archive,
        ):
            staging = Path(staging_name)
            manifest = _read_manifest(archive, source)
            members = _members(archive, manifest, source)
            _room_for(manifest, staging, target)
            _unpack(archive, members, staging, source)
            unpacked = staging / _ROOT
            _verify(unpacked, manifest, source)
            os.chmod(unpacked, 0o700)
            os.chmod(unpacked / "master.key", 0o600)
            if target.exists():
                _move_in(unpacked, target)
            else:
                os.replace(unpacked, target)
    except OSError as exc:
        folder = target if target.is_dir() else target.parent
        raise _written(
            exc,
            f"the vault into {target}",
            folder,
            ReadOnlyStoreError,
            "make it writable or restore into another folder",
        ) from exc
    files = manifest["files"]
    return BackupSummary(
        path=target,
        files=len(files),
        bytes=sum(f["size"] for f in files),
        spaces=_spaces(f["path"] for f in files),
        created=str(manifest.get("created", "")),
    )


def _refuse_non_folder(path: Path, fix: str) -> None:
    """Refuse ``path`` when it, or the nearest of its folders that exists, is a broken link or a file."""
    nearest = path
    while not os.path.lexists(nearest) and nearest.parent != nearest:
        nearest = nearest.parent
    if nearest.is_symlink() and not nearest.exists():
        # typically a link to a drive that is not mounted: creating the folder would go nowhere
        raise ConfigurationError(
            f"{nearest} is a link to {os.readlink(nearest)}, which does not exist; mount or create it, or {fix}"
        )
    if nearest != path and not nearest.is_dir():
        raise ConfigurationError(f"{nearest} is a file, not a folder; {fix}")


def _move_in(unpacked: Path, target: Path) -> None:
    """Move the unpacked vault's entries into the existing folder ``target``, all or none.

    The master key goes last: a vault opens only where its key is, so a move cut short by a crash
    leaves folders without a key rather than a key without its spaces. A move that fails or is
    interrupted is taken back, so the folder is empty again and the restore can simply be retried.
    """
    moved: list[Path] = []
    try:
        for child in sorted(unpacked.iterdir(), key=lambda entry: (entry.name == "master.key", entry.name)):
            os.replace(child, target / child.name)
            moved.append(child)
    except BaseException:  # Ctrl-C too: the folder is left as it was found
        for child in reversed(moved):
            with contextlib.suppress(OSError):
                os.replace(target / child.name, child)
        raise


def _written(exc: OSError, what: str, folder: Path, refused: type[StorageError], fix: str) -> StorageError:
    """The error to raise when writing ``what`` into ``folder`` failed with ``exc``, in words."""
    full = disk_full(exc, what)
    if full is not None:
        return full
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    if exc.filename is not None and not Path(os.fsdecode(exc.filename)).is_relative_to(folder):
        # a file of the vault (or the backup) that could not be read, not the folder written to
        return StorageError(f"cannot write {what}: cannot read {os.fsdecode(exc.filename)} ({reason})")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return refused(f"cannot write {what}: the folder {folder} is read-only or may not be written; {fix}")
    return StorageError(f"cannot write {what}: {reason} ({os.fsdecode(exc.filename or folder)})")


# -- taking the snapshot ---------------------------------------------------------------------


def _files(root: Path) -> list[PurePosixPath]:
    """Every regular file under ``root``, relative, without SQLite's side files; symlinks are skipped."""
    found: list[PurePosixPath] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file() or _is_side_file(path):
                continue
            found.append(PurePosixPath(path.relative_to(root).as_posix()))
    return found


def _is_side_file(path: Path) -> bool:
    if path.name.endswith(_REBUILT) or any(f"{suffix}." in path.name for suffix in _REBUILT):
        return True
    for suffix in _SIDE_FILES:
        if path.name.endswith(suffix) and path.with_name(path.name.removesuffix(suffix)).exists():
            return True
    return False


def _snapshot(path: Path, copy: Path) -> Path | None:
    """``path`` copied to ``copy``; ``None`` when it was deleted since it was listed.

    A gem run or a file history prunes its files while the vault is in use: a file gone before it
    was copied is simply not part of this snapshot, as if it had been deleted a moment earlier.
    """
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return None
    if header == _SQLITE_HEADER:
        _sqlite_snapshot(path, copy)
    elif path.suffix == ".db":
        _stable_copy(path, copy)
    else:
        try:
            shutil.copy2(path, copy)
        except FileNotFoundError:
            if path.exists():
                raise
            copy.unlink(missing_ok=True)
            return None
    return copy


def _sqlite_snapshot(path: Path, copy: Path) -> None:
    try:
        src = sqlite3.connect(os.fspath(path), timeout=_BUSY_TIMEOUT_S)
        try:
            dst = sqlite3.connect(os.fspath(copy))
            try:
                # One step: the whole database is read inside one read transaction.
                src.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        full = disk_full(exc, f"the snapshot of the database {path}")
        if full is not None:
            raise full from exc
        raise StorageError(
            f"cannot take a snapshot of the database {path}: {exc}; `notochord check` tells whether it is damaged"
        ) from exc
    shutil.copymode(path, copy)


def _stable_copy(path: Path, copy: Path) -> None:
    """Copy a database this process cannot open (encrypted) at a moment no write touches it.

    These databases keep a rollback journal (gems cannot change that): a writer creates
    ``-journal`` before it changes the file, and every change moves the file's modification time,
    so a copy taken with no journal present and the same stamp before and after holds one
    committed state.
    """
    journal = path.with_name(path.name + "-journal")
    for _ in range(_STABLE_COPY_ATTEMPTS):
        before = _stamp(path)
        if not journal.exists():
            shutil.copy2(path, copy)
            if _stamp(path) == before and not journal.exists():
                return
        time.sleep(0.02)
    raise StorageError(f"{path} kept changing while it was copied; run the backup again when the vault is quieter")


def _stamp(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(time.time())
    archive.addfile(info, _BytesReader(data))


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._offset + size
        chunk = self._data[self._offset : end]
        self._offset += len(chunk)
        return chunk


def _spaces(paths: Iterator[str] | Any) -> tuple[str, ...]:
    names = []
    for rel in paths:
        parts = PurePosixPath(rel).parts
        if len(parts) == 2 and parts[0] == "spaces" and parts[1].endswith(".db"):
            stem = parts[1].removesuffix(".db")
            names.append("personal" if stem == "personal" else "org:" + stem.removeprefix("org-"))
    return tuple(sorted(names))


# -- bringing it back ------------------------------------------------------------------------


@contextlib.contextmanager
def _open_archive(path: Path) -> Iterator[tarfile.TarFile]:
    try:
        archive = tarfile.open(path, mode="r:gz")  # noqa: SIM115  (closed below, once opening succeeded)
    except (EOFError, zlib.error) as exc:
        # a gzip stream that starts well and then ends or goes wrong: the backup, damaged
        raise _damaged(path) from exc
    except (tarfile.TarError, OSError) as exc:
        raise ConfigurationError(f"{path} is not a notochord backup (not a .tar.gz file: {exc})") from exc
    with archive:
        yield archive


def _damaged(source: Path) -> ConfigurationError:
    return ConfigurationError(
        f"{source} is damaged: it cannot be read to its end (it was cut short or changed since it was "
        "written); restore from another copy of the backup"
    )


def _read_manifest(archive: tarfile.TarFile, source: Path) -> dict[str, Any]:
    try:
        # every header, so that a damaged file is told apart from one that holds no record
        archive.getmembers()
    except (*_UNREADABLE, OSError) as exc:
        raise _damaged(source) from exc
    try:
        member = archive.getmember(MANIFEST)
        handle: IO[bytes] | None = archive.extractfile(member)
        if handle is None or member.size > _MAX_MANIFEST_BYTES:
            raise KeyError(MANIFEST)
        record = handle.read()
    except KeyError as exc:
        raise ConfigurationError(f"{source} is not a notochord backup (it has no readable {MANIFEST})") from exc
    except (*_UNREADABLE, OSError) as exc:
        raise _damaged(source) from exc
    try:
        manifest = json.loads(record.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise ConfigurationError(f"{source} is not a notochord backup (it has no readable {MANIFEST})") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), list)
    ):
        raise ConfigurationError(f"{source} is not a notochord backup ({MANIFEST} is not one of ours)")
    if manifest.get("version") != VERSION:
        raise ConfigurationError(
            f"{source} is a notochord backup of format {manifest.get('version')!r}; this version reads format "
            f"{VERSION}: restore it with the version of notochord that wrote it, or a newer one"
        )
    seen: set[str] = set()
    for entry in manifest["files"]:
        if not _listed_file(entry) or entry["path"] in seen:
            shown = entry.get("path") if isinstance(entry, dict) else entry
            raise ConfigurationError(f"{source} is damaged: its {MANIFEST} lists {str(shown)[:200]!r}, not a file")
        seen.add(entry["path"])
    folders = {parent.as_posix() for path in seen for parent in PurePosixPath(path).parents}
    clash = sorted(seen & folders)
    if clash:
        raise ConfigurationError(
            f"{source} is damaged: its {MANIFEST} lists {clash[0][:200]!r} both as a file and as a folder"
        )
    return manifest


def _listed_file(entry: object) -> bool:
    """Whether a manifest entry names a file inside the vault, with a size and a digest."""
    if not isinstance(entry, dict):
        return False
    path, size, digest = entry.get("path"), entry.get("size"), entry.get("sha256")
    if not isinstance(path, str) or not isinstance(digest, str):
        return False
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return False
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith("/")
        and "\x00" not in path
        and PurePosixPath(*parts).as_posix() == path
        and all(part not in (".", "..") for part in parts)
    )


def _members(archive: tarfile.TarFile, manifest: dict[str, Any], source: Path) -> list[tarfile.TarInfo]:
    """The archive's files, each checked against the record before a byte is unpacked.

    A member the record does not list, or of another size, could be of any size (a few kilobytes
    of zeros unpack to gigabytes): found only after unpacking, it would already have filled the disk.
    """
    listed = {entry["path"]: entry["size"] for entry in manifest["files"]}
    members: list[tarfile.TarInfo] = []
    found: set[str] = set()
    for member in archive.getmembers():
        if member.name == MANIFEST:
            continue
        parts = PurePosixPath(member.name).parts
        if not member.isfile() or len(parts) < 2 or parts[0] != _ROOT or ".." in parts:
            raise ConfigurationError(f"{source} is not a notochord backup (unexpected entry {member.name!r})")
        rel = PurePosixPath(*parts[1:]).as_posix()
        if rel not in listed:
            raise ConfigurationError(f"{source} is damaged: {rel[:200]} is not in the backup's record")
        if rel in found or member.size != listed[rel]:
            raise ConfigurationError(f"{source} is damaged: {rel[:200]} differs from the backup's record")
        found.add(rel)
        members.append(member)
    missing = sorted(set(listed) - found)
    if missing:
        raise ConfigurationError(f"{source} is damaged: {missing[0][:200]} is missing from it")
    return members


def _room_for(manifest: dict[str, Any], staging: Path, target: Path) -> None:
    """Refuse a backup the disk has no room for before writing, rather than filling the disk (and
    failing every other program writing to it) to find out."""
    needed = sum(entry["size"] for entry in manifest["files"])
    free = shutil.disk_usage(staging).free
    if needed > free:
        raise StorageFullError(
            f"cannot write the vault into {target}: the disk is full (the vault takes {needed} bytes, {free} "
            "bytes are free). Free some space and retry, or restore onto another disk"
        )


def _unpack(archive: tarfile.TarFile, members: list[tarfile.TarInfo], staging: Path, source: Path) -> None:
    try:
        # The "data" filter refuses absolute paths, links out of the folder and special files.
        archive.extractall(staging, members=members, filter="data")
    except _UNREADABLE as exc:
        raise _damaged(source) from exc
    except OSError as exc:
        if exc.errno not in _NAME_REFUSED:
            raise
        name = os.path.basename(os.fsdecode(exc.filename or ""))
        raise ConfigurationError(
            f"{source} cannot be unpacked on the file system of {staging.parent}: it does not allow the "
            f"file name {name[:80]!r}; restore onto another disk"
        ) from exc


def _verify(unpacked: Path, manifest: dict[str, Any], source: Path) -> None:
    listed = set()
    for entry in manifest["files"]:
        rel = str(entry.get("path", ""))
        listed.add(rel)
        path = unpacked / rel
        if not path.is_file() or path.stat().st_size != entry["size"] or _sha256(path) != entry["sha256"]:
            raise ConfigurationError(f"{source} is damaged: {rel} is missing or differs from the backup's record")
    if "master.key" not in listed:
        raise ConfigurationError(f"{source} is not a complete notochord backup (it has no master key)")
    if (unpacked / "master.key").stat().st_size != _KEY_BYTES:
        raise ConfigurationError(
            f"{source} is damaged: its master key is not {_KEY_BYTES} bytes, so the vault could not be opened"
        )
    extra = {p.relative_to(unpacked).as_posix() for p in unpacked.rglob("*") if p.is_file()} - listed
    if extra:
        raise ConfigurationError(f"{source} is damaged: {sorted(extra)[0]} is not in the backup's record")
