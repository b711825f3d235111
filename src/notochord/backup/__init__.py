"""Backup and restore of a whole data directory, while it is in use.

A backup is one gzip-compressed tar file holding ``notochord-backup.json`` (what was copied, with
each file's size and SHA-256: :mod:`notochord.backup.record`) and, under ``vault/``, every file of
the data directory:

- every SQLite database (each space, each file history) is copied with SQLite's online backup API,
  so the copy is a consistent snapshot even while other processes write;
- encrypted databases (a gem's private storage, SQLCipher) cannot be read without their key, so
  they are copied byte for byte and the copy is kept only when no write touched the file meanwhile
  (otherwise it is taken again);
- everything else (the master key, gem code and folders, file-history blobs) is copied as it is.

Journal side files (``-wal``, ``-shm``, ``-journal``) are never copied: a snapshot already holds
what was committed. Nor are a space's saved search graphs, full-text indexes and vector matrices
(``*.usearch``, ``*.fulltext`` and ``*.matrix`` beside its database): they are rebuilt from the
vectors and the full-text table in the database, and can weigh as much as the database itself. Each
database is consistent on its own; the backup is not one atomic cut across databases, which no
reader relies on.

The copies are staged beside the destination and archived from there, so while it is written a
backup needs about twice the vault's size on that disk; a disk that plainly has less is refused
before anything is copied.

The master key is in the backup: whoever holds the file can read the vault's gem storage and refs,
so the file is created readable by its owner only (mode 0600) and must be kept as safe as the vault.

``restore`` (:mod:`notochord.backup.restoring`) brings a backup back into a new or empty folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tarfile
import time
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from notochord.backup.compressing import ParallelGzipWriter
from notochord.backup.places import amount, refuse_non_folder, refuse_unusable_name, written
from notochord.backup.progress import Progress, Told
from notochord.backup.record import FORMAT, MANIFEST, ROOT, VERSION, BackupSummary, spaces
from notochord.backup.record import sha256 as _sha256
from notochord.backup.restoring import restore
from notochord.backup.staging import owned_staging
from notochord.errors import (
    ConfigurationError,
    SpaceNotFoundError,
    StorageError,
    StorageFullError,
)
from notochord.files.full import disk_full
from notochord.files.placing import place_new

__all__ = ["FORMAT", "MANIFEST", "VERSION", "BackupSummary", "Progress", "backup", "restore"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_SIDE_FILES = ("-wal", "-shm", "-journal")
# saved search graphs and full-text indexes, or ones being written (``….usearch.<pid>.partial``)
_REBUILT = (".usearch", ".fulltext", ".matrix")
# gzip's own default: level 9 takes half as long again for an archive under 1 % smaller
COMPRESS_LEVEL = 6
# what is read from a file and handed to the compressor at once: big enough that the Python around
# each read costs nothing beside the deflating
_COPY_BYTES = 1 << 20
_STABLE_COPY_ATTEMPTS = 50
_BUSY_TIMEOUT_S = 30.0
# what a tar header and a file system block add to each file, at most: an estimate of room, not a count
_PER_FILE_BYTES = 4096


def backup(data_dir: Path, destination: Path, *, progress: Progress | None = None) -> BackupSummary:
    """Write a snapshot of the vault at ``data_dir`` to ``destination`` (a new file, or a folder).

    Args:
        data_dir: the vault.
        destination: the backup file to create; if it is an existing folder, a file named
            ``notochord-backup-<UTC time>.tar.gz`` is created in it.
        progress: called as ``progress(stage, done, total)`` as the work goes on, in bytes of the
            vault: first the stage ``"copying"`` (the snapshot), then ``"compressing"`` (the archive).

    Raises:
        SpaceNotFoundError: there is no vault at ``data_dir``.
        ConfigurationError: the destination exists, lies inside the data directory, or is a path
            the file system cannot look up (a name too long).
        StorageFullError: the disk has no room for the backup: refused before anything is copied
            when that is plain from the vault's size, else when the disk fills; nothing is left.
        StorageError: a file could not be read or the backup could not be written.
    """
    source = Path(os.path.abspath(data_dir))
    refuse_unusable_name(source, "the data directory", "name the folder that holds the vault")
    if not (source / "master.key").is_file():
        raise SpaceNotFoundError.no_vault(str(source))
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    target = Path(os.path.abspath(destination.expanduser()))
    refuse_unusable_name(target, "the backup", "name another path for the backup")
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
        refuse_non_folder(target, "write the backup into a folder")
        raise ConfigurationError(f"the folder {target.parent} does not exist; create it or name another one")

    listed = _files(source)
    _room_for(source, listed, target)
    entries: list[dict[str, Any]] = []
    told = Told(progress)
    try:
        with owned_staging(target.parent) as staging:
            snapshots = []
            told.start("copying", sum(_size(source / rel) for rel in listed))
            for rel in listed:
                copy = _snapshot(source / rel, staging / rel)
                if copy is not None:
                    snapshots.append((rel, copy))
                told.advance(_size(source / rel))
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
            told.start("compressing", sum(e["size"] for e in entries))
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as raw:
                with (
                    ParallelGzipWriter(raw, level=COMPRESS_LEVEL) as packed,
                    tarfile.TarFile(fileobj=packed, mode="w", copybufsize=_COPY_BYTES) as archive,
                ):
                    _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=2).encode("utf-8"))
                    for rel, copy in snapshots:
                        info = archive.gettarinfo(copy, arcname=f"{ROOT}/{rel.as_posix()}")
                        with copy.open("rb") as handle:
                            archive.addfile(info, _Counted(handle, told))
                raw.flush()
                os.fsync(raw.fileno())
            target = _place(partial, target, stem=stem)
    except OSError as exc:
        raise written(
            exc, f"the backup {target}", target.parent, StorageError, "name a folder that can be written"
        ) from exc
    return BackupSummary(
        path=target,
        files=len(entries),
        bytes=sum(e["size"] for e in entries),
        spaces=spaces(e["path"] for e in entries),
        created=created,
    )


def _room_for(source: Path, listed: list[PurePosixPath], target: Path) -> None:
    """Refuse a backup its disk plainly has no room for before copying anything, rather than copying
    gigabytes to find out.

    The vault is copied beside the destination, then archived from there: about twice its size while
    the backup is written (the archive is compressed, but encrypted storage does not shrink). A
    database's write-ahead log is counted with it, since its snapshot holds what the log committed.
    """
    total = 0
    for rel in listed:
        for path in (source / rel, source / f"{rel}-wal"):
            with contextlib.suppress(OSError):  # gone meanwhile: it is not copied either
                total += path.stat().st_size
    needed = 2 * total + _PER_FILE_BYTES * (len(listed) + 1)
    try:
        usage = shutil.disk_usage(target.parent)
    except OSError:
        return  # unknown: the backup finds out as it writes
    if usage.total == 0:
        return  # a file system that tells no sizes (/proc, some network shares): the same
    free = usage.free
    if needed > free:
        raise StorageFullError(
            f"cannot write the backup {target}: the disk is full (a backup of this vault needs about "
            f"{amount(needed)} free in {target.parent} while it is written, {amount(free)} are free). Free "
            "some space and retry, or write the backup onto another disk"
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
                # The staged copy is thrown away once archived, and only the archive is synced: syncing
                # the copy too would wait for the whole database to reach the disk, twice.
                dst.execute("PRAGMA synchronous=OFF")
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone meanwhile: it is not copied either
        return 0


class _Counted:
    """A file being archived, whose reads move the progress on."""

    def __init__(self, handle: IO[bytes], told: Told) -> None:
        self._handle = handle
        self._told = told

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self._told.advance(len(data))
        return data


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
