"""Bringing a backup back into a new or empty data directory, all of it or nothing.

Every file is checked against the backup's record: whether the disk has room for what the record
lists before a byte is unpacked, each file's name and size before a byte of it is written, its
contents (SHA-256) as it is written. The archive is read once, from start to end, into a hidden
staging folder; the vault is moved into place only when all of it was unpacked and checked, and a
restore refused part way leaves nothing. The record is hostile input: every path in it must name a
file inside the vault, and nothing outside the folder being unpacked is ever read or written on its say.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from notochord.backup.places import amount, refuse_non_folder, refuse_unusable_name, written
from notochord.backup.progress import Progress, Told
from notochord.backup.record import (
    ROOT,
    UNREADABLE,
    BackupSummary,
    damaged,
    read_manifest,
    spaces,
)
from notochord.backup.staging import RESTORE_PREFIX, claimed, leftovers
from notochord.errors import ConfigurationError, ReadOnlyStoreError, StorageFullError

__all__ = ["restore"]

_KEY_BYTES = 32  # what notochord.app reads as the master key; any other size opens no vault
# a name this file system will not hold, whatever the folder's permissions
_NAME_REFUSED = (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL)
_FIX = "restore into a new or empty folder (--data-dir or NOTOCHORD_DATA_DIR)"
# what is read from the archive and written at once: the Python around each read then costs nothing
_BLOCK_BYTES = 1 << 20
# what a tar written by notochord holds after its last member: two empty blocks, padded to 10 kB
_TAIL_BYTES = 1 << 20


def restore(archive_path: Path, data_dir: Path, *, progress: Progress | None = None) -> BackupSummary:
    """Unpack the backup ``archive_path`` into ``data_dir``, which must be new or empty.

    What a restore that was killed part way left there is removed first; a restore still running
    into the same place is left alone. ``progress(stage, done, total)`` is called as the files are
    unpacked (the stage ``"unpacking"``), in bytes of the vault.

    Raises:
        ConfigurationError: the file is missing, is not a notochord backup or is damaged (cut
            short, changed, or crafted), the data directory is not empty or not a folder, or
            another restore into it is running. Nothing is written then.
        StorageFullError: the disk has no room for the vault; nothing is left behind.
        StorageError: the files could not be written.
    """
    source = Path(os.path.abspath(archive_path.expanduser()))
    target = Path(os.path.abspath(data_dir))
    refuse_unusable_name(source, "the backup file", "name the backup file by another path")
    refuse_unusable_name(target, "the data directory", _FIX)
    if not source.is_file():
        if source.is_dir():
            raise ConfigurationError(f"{source} is not a backup file but a folder; name the .tar.gz file in it")
        if source.exists():
            # a pipe or a device: read once, it could not be checked before it is unpacked
            raise ConfigurationError(f"{source} is not a backup file (not a regular file); copy it to one first")
        raise ConfigurationError(f"no backup file at {source}")
    refuse_non_folder(target, _FIX)
    if target.exists() and not target.is_dir():
        raise ConfigurationError(f"the data directory {target} is a file, not a folder; {_FIX}")
    try:
        _refuse_occupied(target, leftovers_allowed=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Unpacked on the file system the vault goes to, so that moving it into place is a rename:
        # an existing empty data directory may be a mount point of its own (a volume, a new disk).
        folder = target if target.exists() else target.parent
        with claimed(folder, target):
            _refuse_occupied(target, leftovers_allowed=False)
            manifest = _restore_into(source, target, folder, Told(progress))
    except OSError as exc:
        where = target if target.is_dir() else target.parent
        raise written(
            exc,
            f"the vault into {target}",
            where,
            ReadOnlyStoreError,
            "make it writable or restore into another folder",
        ) from exc
    files = manifest["files"]
    return BackupSummary(
        path=target,
        files=len(files),
        bytes=sum(f["size"] for f in files),
        spaces=spaces(f["path"] for f in files),
        created=manifest["created"],
    )


def _refuse_occupied(target: Path, *, leftovers_allowed: bool) -> None:
    """Refuse a data directory that holds anything. What interrupted restores left is not counted
    while ``leftovers_allowed``: before the folder is held, after which they are gone, or named."""
    if not target.is_dir():
        return
    left = set(leftovers(target))
    content = sorted(name for name in os.listdir(target) if name not in left)
    if content:
        raise ConfigurationError(
            f"the data directory {target} is not empty (it holds {content[0][:80]!r}); {_FIX}, or move the current "
            "vault away first"
        )
    if left and not leftovers_allowed:
        raise ConfigurationError(
            f"the data directory {target} holds {sorted(left)[0]!r}, left by a restore that was interrupted or "
            "is still running; if no restore is running, delete it and retry"
        )


def _restore_into(source: Path, target: Path, folder: Path, told: Told) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix=RESTORE_PREFIX, dir=folder) as staging_name,
        _open_archive(source) as archive,
    ):
        staging = Path(staging_name)
        manifest = read_manifest(archive, source)
        _room_for(manifest, staging, target)
        told.start("unpacking", sum(entry["size"] for entry in manifest["files"]))
        digests = _unpack(archive, manifest, staging, source, told)
        unpacked = staging / ROOT
        _verify(unpacked, manifest, source, digests)
        os.chmod(unpacked, 0o700)
        os.chmod(unpacked / "master.key", 0o600)
        if target.exists():
            _move_in(unpacked, target)
        else:
            os.replace(unpacked, target)
    return manifest


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


@contextlib.contextmanager
def _open_archive(path: Path) -> Iterator[tarfile.TarFile]:
    try:
        archive = tarfile.open(path, mode="r:gz")  # noqa: SIM115  (closed below, once opening succeeded)
    except (EOFError, zlib.error) as exc:
        # a gzip stream that starts well and then ends or goes wrong: the backup, damaged
        raise damaged(path) from exc
    except (tarfile.TarError, OSError) as exc:
        raise ConfigurationError(f"{path} is not a notochord backup (not a .tar.gz file: {exc})") from exc
    with archive:
        yield archive


def _checked(member: tarfile.TarInfo, listed: dict[str, int], found: dict[str, str], source: Path) -> str:
    """The vault path of ``member``, checked against the record before a byte of it is written.

    A member the record does not list, or of another size, could be of any size (a few kilobytes
    of zeros unpack to gigabytes): found only after unpacking, it would already have filled the disk.
    """
    parts = PurePosixPath(member.name).parts
    if not member.isfile() or len(parts) < 2 or parts[0] != ROOT or ".." in parts:
        raise ConfigurationError(f"{source} is not a notochord backup (unexpected entry {member.name[:200]!r})")
    rel = PurePosixPath(*parts[1:]).as_posix()
    if rel not in listed:
        raise ConfigurationError(f"{source} is damaged: {rel[:200]} is not in the backup's record")
    if rel in found or member.size != listed[rel]:
        raise ConfigurationError(f"{source} is damaged: {rel[:200]} differs from the backup's record")
    return rel


def _room_for(manifest: dict[str, Any], staging: Path, target: Path) -> None:
    """Refuse a backup the disk has no room for before writing, rather than filling the disk (and
    failing every other program writing to it) to find out."""
    needed = sum(entry["size"] for entry in manifest["files"])
    usage = shutil.disk_usage(staging)
    free = usage.free
    # a file system that tells no sizes (total 0: some network shares) is found out by writing
    if usage.total > 0 and needed > free:
        raise StorageFullError(
            f"cannot write the vault into {target}: the disk is full (the vault takes {amount(needed)}, "
            f"{amount(free)} are free). Free some space and retry, or restore onto another disk"
        )


def _unpack(
    archive: tarfile.TarFile, manifest: dict[str, Any], staging: Path, source: Path, told: Told
) -> dict[str, str]:
    """Unpack every member into ``staging`` in one reading of the archive; returns each file's SHA-256.

    Members are judged one at a time, as they come (never all read first: a few megabytes of .tar.gz
    hold a million empty members), each before a byte of it is written.
    """
    listed = {entry["path"]: entry["size"] for entry in manifest["files"]}
    digests: dict[str, str] = {}
    while True:
        try:
            member = archive.next()
        except UNREADABLE as exc:
            raise damaged(source) from exc
        if member is None:
            break
        rel = _checked(member, listed, digests, source)
        try:
            # the same rules as extracting with the "data" filter: no way out of the folder, sane modes
            safe = tarfile.data_filter(member, os.fspath(staging))
        except tarfile.FilterError as exc:
            raise ConfigurationError(
                f"{source} is not a notochord backup (unexpected entry {member.name[:200]!r})"
            ) from exc
        digests[rel] = _written(archive, safe, staging, rel, source, told)
    _read_to_the_end(archive, source)
    missing = sorted(set(listed) - set(digests))
    if missing:
        raise ConfigurationError(f"{source} is damaged: {missing[0][:200]} is missing from it")
    return digests


def _written(
    archive: tarfile.TarFile, member: tarfile.TarInfo, staging: Path, rel: str, source: Path, told: Told
) -> str:
    """Write ``member``'s bytes to the new file ``rel`` of the vault unpacked in ``staging``; returns
    their SHA-256."""
    path = staging / ROOT / rel
    digest = hashlib.sha256()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno not in _NAME_REFUSED:
            raise
        raise ConfigurationError(
            f"{source} cannot be unpacked on the file system of {staging.parent}: it does not allow the "
            f"file name {path.name[:80]!r}; restore onto another disk"
        ) from exc
    size = 0
    with os.fdopen(fd, "wb") as out:
        handle = archive.extractfile(member)
        if handle is None:  # pragma: no cover  (members are regular files, checked above)
            raise ConfigurationError(f"{source} is not a notochord backup (unexpected entry {member.name[:200]!r})")
        try:
            while block := handle.read(_BLOCK_BYTES):
                digest.update(block)
                out.write(block)
                size += len(block)
                told.advance(len(block))
        except UNREADABLE as exc:
            raise damaged(source) from exc
    if size != member.size:
        raise damaged(source)
    if member.mode is not None:
        os.chmod(path, member.mode)
    os.utime(path, (member.mtime, member.mtime))
    return digest.hexdigest()


def _read_to_the_end(archive: tarfile.TarFile, source: Path) -> None:
    """Read what follows the last member (a few kilobytes of padding), so that gzip checks the
    stream's CRC and length at its end; past :data:`_TAIL_BYTES` the rest is left unread, as
    reading it could take as long as a vault's worth of zeros."""
    stream = archive.fileobj
    if stream is None:  # pragma: no cover  (an open archive has its file)
        return
    left = _TAIL_BYTES
    try:
        while left > 0 and (block := stream.read(min(left, _BLOCK_BYTES))):
            left -= len(block)
    except UNREADABLE as exc:
        raise damaged(source) from exc


def _verify(unpacked: Path, manifest: dict[str, Any], source: Path, digests: dict[str, str]) -> None:
    """The unpacked vault against the record: every file there, of its size and digest (computed as
    it was written), the master key whole, and nothing else."""
    listed = set()
    for entry in manifest["files"]:
        rel = entry["path"]
        listed.add(rel)
        path = unpacked / rel
        if not path.is_file() or path.stat().st_size != entry["size"] or digests.get(rel) != entry["sha256"]:
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
