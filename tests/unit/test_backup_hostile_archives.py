"""Backup files that are damaged or crafted, and places to restore into or back up to that are wrong.

A backup file may have been cut short by a full disk or an interrupted copy, had bytes changed on
the way, or been crafted: its record may list files that cannot coexist, its members may not match
its record, or it may unpack to more than the disk holds. The data directory may be a link to a
drive that is not mounted, lie under a file, or be an empty mount point a restore moves into. Each
is answered with an error of notochord's own tree, in words that say what is wrong and what to do,
and nothing is left behind (OD-K47: the vault's files are read as hostile input).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from notochord.backup import MANIFEST, backup, restore
from notochord.errors import ConfigurationError, StorageError, StorageFullError

KEY = b"k" * 32
BLOB = bytes(range(256)) * 400  # ~100 kB: a member that spans several compressed blocks


def _entry(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _tar(manifest: dict[str, Any], members: list[tuple[str, bytes]]) -> bytes:
    """An uncompressed tar holding ``manifest`` as the record, then ``members`` as they are."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in [(MANIFEST, json.dumps(manifest).encode("utf-8")), *members]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _record(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"format": "notochord-backup", "version": 1, "created": "2026-09-29T08:00:00Z", "files": list(entries)}


def _crafted(path: Path, files: list[tuple[str, bytes]], listed: list[dict[str, Any]] | None = None) -> Path:
    """A backup of ``files`` (under ``vault/``), its record ``listed`` (default: exactly those files)."""
    record = _record(*(listed if listed is not None else [_entry(name, data) for name, data in files]))
    path.write_bytes(_gzip(_tar(record, [(f"vault/{name}", data) for name, data in files])))
    return path


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def _corrupt(path: Path) -> Path:
    """A backup whose compressed data stops decoding part way, as bytes changed on a disk would."""
    whole = _tar(
        _record(_entry("master.key", KEY), _entry("blob", BLOB)), [("vault/master.key", KEY), ("vault/blob", BLOB)]
    )
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    readable = packer.compress(whole[:40_000]) + packer.flush(zlib.Z_FULL_FLUSH)
    path.write_bytes(readable + b"\xff" * 64)  # a block of the reserved type: no decoder takes it
    return path


def _vault(folder: Path) -> Path:
    (folder / "spaces").mkdir(parents=True)
    (folder / "master.key").write_bytes(KEY)
    with sqlite3.connect(folder / "spaces" / "personal.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES (?)", ("carrots and thyme",))
    conn.close()
    (folder / "gems").mkdir()
    (folder / "gems" / "blob.bin").write_bytes(BLOB)
    return folder


def _left_behind(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(".notochord-")]


def _refused_as_damaged(archive: Path, target: Path) -> str:
    with pytest.raises(ConfigurationError) as caught:
        restore(archive, target)
    assert not target.exists() or list(target.iterdir()) == []
    assert _left_behind(target.parent) == []
    assert ".notochord-restore-" not in caught.value.message
    return caught.value.message


# ---------------------------------------------------------------- damaged on the way


def test_a_backup_whose_compressed_data_is_corrupt_is_refused_as_damaged_not_with_a_traceback(tmp_path: Path) -> None:
    """A deflate block that cannot be decoded (bytes changed on a disk or in a transfer) is a damaged
    backup; before, zlib's own error escaped while the record was looked for."""
    message = _refused_as_damaged(_corrupt(tmp_path / "corrupt.tar.gz"), tmp_path / "restored")

    assert "is damaged" in message
    assert "another copy" in message


@pytest.mark.parametrize("kept", [0.3, 0.6, 0.9])
def test_a_backup_cut_short_is_called_damaged_not_something_else(tmp_path: Path, kept: float) -> None:
    """A copy that stopped part way is the backup the user meant, only incomplete: before, it was
    "not a notochord backup (it has no readable notochord-backup.json)"."""
    whole = backup(_vault(tmp_path / "vault"), tmp_path / "whole.tar.gz").path.read_bytes()
    archive = tmp_path / "cut.tar.gz"
    archive.write_bytes(whole[: int(len(whole) * kept)])

    message = _refused_as_damaged(archive, tmp_path / "restored")

    assert "is damaged" in message
    assert "not a notochord backup" not in message


# ---------------------------------------------------------------- crafted


def test_a_record_listing_a_file_inside_another_listed_file_is_refused_as_damaged(tmp_path: Path) -> None:
    """``a`` and ``a/b`` cannot both be files: before, unpacking failed with "Not a directory"
    naming a hidden staging folder, as a storage error (exit code 1)."""
    archive = _crafted(tmp_path / "clash.tar.gz", [("master.key", KEY), ("notes", b"x"), ("notes/today", b"y")])

    message = _refused_as_damaged(archive, tmp_path / "restored")

    assert "is damaged" in message
    assert "notes" in message


def test_a_file_name_too_long_for_the_file_system_is_refused_in_words(tmp_path: Path) -> None:
    """Before: a storage error quoting "File name too long" and the hidden staging folder."""
    archive = _crafted(tmp_path / "long.tar.gz", [("master.key", KEY), ("n" * 300, b"x")])

    message = _refused_as_damaged(archive, tmp_path / "restored")

    assert "cannot be unpacked" in message


@pytest.mark.parametrize(
    ("members", "listed"),
    [
        pytest.param([("master.key", KEY), ("bomb", bytes(8 << 20))], [_entry("master.key", KEY)], id="not-listed"),
        pytest.param(
            [("master.key", KEY), ("bomb", bytes(8 << 20))],
            [_entry("master.key", KEY), _entry("bomb", b"small")],
            id="larger-than-listed",
        ),
        pytest.param([("master.key", KEY), ("master.key", KEY)], [_entry("master.key", KEY)], id="same-file-twice"),
    ],
)
def test_members_that_do_not_match_the_record_are_refused_before_a_byte_of_them_is_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: list[tuple[str, bytes]], listed: list[dict[str, Any]]
) -> None:
    """A member the record does not list, or of another size, could be any size (8 MB of zeros
    compress to 8 kB): it is refused before a byte of it is written, not found after it was unpacked;
    only the master key before it, which matches the record, was written, and that is removed too."""
    from notochord.backup import restoring

    unpacked: list[str] = []
    write = restoring._written

    def watched(archive: tarfile.TarFile, member: tarfile.TarInfo, *args: Any) -> str:
        unpacked.append(member.name)
        return write(archive, member, *args)

    monkeypatch.setattr(restoring, "_written", watched)
    archive = _crafted(tmp_path / "crafted.tar.gz", members, listed)

    message = _refused_as_damaged(archive, tmp_path / "restored")

    assert "is damaged" in message
    assert unpacked == ["vault/master.key"]


def test_a_backup_larger_than_the_free_space_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record says how much the vault takes: a disk with less room is not filled up (which
    would stop every other program writing to it) to find out."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    real = shutil.disk_usage

    def nearly_full(path: str | os.PathLike[str]) -> Any:
        return real(path)._replace(free=1024)

    monkeypatch.setattr(shutil, "disk_usage", nearly_full)
    target = tmp_path / "restored"
    with pytest.raises(StorageFullError, match="the disk is full") as caught:
        restore(archive, target)
    assert "1.0 kB are free" in caught.value.message
    assert not target.exists()
    assert _left_behind(tmp_path) == []


# ---------------------------------------------------------------- where it is restored


def test_restore_into_a_data_directory_that_is_a_broken_link_says_where_it_points(tmp_path: Path) -> None:
    """A data directory linked to a drive that is not mounted: before, "Not a directory" naming a
    hidden staging folder (exit code 1)."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    target = tmp_path / "data"
    target.symlink_to(tmp_path / "unmounted" / "notochord")

    with pytest.raises(ConfigurationError, match="does not exist") as caught:
        restore(archive, target)

    assert str(tmp_path / "unmounted" / "notochord") in caught.value.message
    assert target.is_symlink() and not target.exists()
    assert _left_behind(tmp_path) == []


def test_restore_and_backup_under_a_file_say_the_file_is_not_a_folder(tmp_path: Path) -> None:
    """Before: restore said "File exists" as a storage error (exit code 1), and backup that the
    folder "does not exist"."""
    vault = _vault(tmp_path / "vault")
    archive = backup(vault, tmp_path / "b.tar.gz").path
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")

    with pytest.raises(ConfigurationError, match="is a file, not a folder") as restoring:
        restore(archive, notes / "vault")
    with pytest.raises(ConfigurationError, match="is a file, not a folder") as backing_up:
        backup(vault, notes / "b.tar.gz")

    assert str(notes) in restoring.value.message and str(notes) in backing_up.value.message
    assert notes.read_text() == "mine"


def test_a_restore_that_fails_while_moving_into_an_existing_folder_leaves_it_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty data directory (a mount point) gets the vault one entry at a time: a failure part
    way takes back what was moved, so no half vault (a key without its spaces) is left to open."""
    archive = backup(_vault(tmp_path / "vault"), tmp_path / "b.tar.gz").path
    target = tmp_path / "mount"
    target.mkdir()
    real = os.replace
    into_target: list[str] = []

    def failing_on_the_second(src: Any, dst: Any) -> None:
        if Path(dst).parent == target:
            into_target.append(Path(dst).name)
            if len(into_target) == 2:
                raise OSError(5, "Input/output error", str(dst))
        real(src, dst)

    monkeypatch.setattr(os, "replace", failing_on_the_second)
    with pytest.raises(StorageError):
        restore(archive, target)
    monkeypatch.undo()

    assert len(into_target) == 2
    assert list(target.iterdir()) == []
    assert restore(archive, target).files == 3


# ---------------------------------------------------------------- on the command line


def _cli(*args: str) -> Any:
    from notochord.cli import app

    return CliRunner().invoke(app, list(args), env={"NOTOCHORD_EMBEDDER": "none"})


def test_backup_to_a_folder_that_does_not_exist_is_refused_not_written_as_a_file(tmp_path: Path) -> None:
    """``backup /mnt/usb/`` with nothing mounted there: before, a file named ``usb`` was written."""
    vault = _vault(tmp_path / "vault")
    missing = tmp_path / "usb"

    done = _cli("--data-dir", str(vault), "backup", f"{missing}{os.sep}", "--json")

    assert done.exit_code == 2, done.output
    assert f"the folder {missing} does not exist" in json.loads(done.stderr)["error"]["message"]
    assert not missing.exists()
    assert _cli("--data-dir", str(vault), "backup", f"{tmp_path}{os.sep}").exit_code == 0


def test_restore_of_a_corrupt_backup_answers_json_with_exit_code_2(tmp_path: Path) -> None:
    archive = _corrupt(tmp_path / "corrupt.tar.gz")
    target = tmp_path / "restored"

    done = _cli("--data-dir", str(target), "restore", str(archive), "--json")

    assert done.exit_code == 2, done.output
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "E_CONFIG"
    assert "is damaged" in error["message"]
    assert not target.exists()


def test_two_backups_into_one_folder_within_a_second_are_both_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup named by the time (to the second) takes the next free name when that one is taken,
    instead of refusing the second of two backups made in one second."""
    import notochord.backup as backup_module

    vault = _vault(tmp_path / "vault")
    folder = tmp_path / "backups"
    folder.mkdir()

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Frozen:
            return cls(2026, 12, 7, 3, 0, 0, tzinfo=UTC)

    monkeypatch.setattr(backup_module, "datetime", Frozen)
    first, second, third = (backup(vault, folder) for _ in range(3))
    assert [p.name for p in (first.path, second.path, third.path)] == [
        "notochord-backup-2026-12-07T030000Z.tar.gz",
        "notochord-backup-2026-12-07T030000Z-2.tar.gz",
        "notochord-backup-2026-12-07T030000Z-3.tar.gz",
    ]
    for made in (first, second, third):
        assert restore(made.path, tmp_path / f"restored-{made.path.name}").files == first.files


def test_a_file_appearing_at_the_backups_name_while_it_is_written_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backup is put in place by a rename that never replaces: another program's file that
    appeared at the name meanwhile is kept, and the backup is refused in words."""
    import notochord.backup as backup_module
    from notochord.backup.record import sha256 as real_sha256

    vault = _vault(tmp_path / "vault")
    target = tmp_path / "vault.tar.gz"

    def someone_writes_the_file_first(path: Path) -> str:
        if not target.exists():
            target.write_bytes(b"another program's file")
        return real_sha256(path)

    monkeypatch.setattr(backup_module, "_sha256", someone_writes_the_file_first)
    with pytest.raises(ConfigurationError, match="already exists; name a new file for the backup"):
        backup(vault, target)
    assert target.read_bytes() == b"another program's file"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".notochord-backup-")] == []


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_restore_from_something_that_is_not_a_file_says_what_it_is(tmp_path: Path, kind: str) -> None:
    """Before: "no backup file at PATH", as if nothing were there."""
    source = tmp_path / "backup.tar.gz"
    if kind == "folder":
        source.mkdir()
    else:
        os.mkfifo(source)
    target = tmp_path / "restored"

    with pytest.raises(ConfigurationError) as caught:
        restore(source, target)

    assert f"{source} is not a backup file" in caught.value.message
    assert ("a folder" if kind == "folder" else "not a regular file") in caught.value.message
    assert not target.exists()


def test_paths_with_a_name_too_long_for_the_file_system_are_refused_in_words(tmp_path: Path) -> None:
    """A backup file, data directory or folder named longer than the file system allows: before, an
    OSError ("File name too long") escaped from every one of these calls."""
    vault = _vault(tmp_path / "vault")
    archive = backup(vault, tmp_path / "b.tar.gz").path
    long = "n" * 300
    calls: dict[str, Callable[[], object]] = {
        "backup to a long file name": lambda: backup(vault, tmp_path / f"{long}.tar.gz"),
        "backup into a long folder name": lambda: backup(vault, tmp_path / long / "b.tar.gz"),
        "backup of a long data directory": lambda: backup(tmp_path / long, tmp_path / "c.tar.gz"),
        "restore into a long data directory": lambda: restore(archive, tmp_path / long),
        "restore from a long file name": lambda: restore(tmp_path / long, tmp_path / "restored"),
    }
    for what, call in calls.items():
        with pytest.raises(ConfigurationError) as caught:
            call()
        assert "name is too long" in caught.value.message, what
        assert long[:20] in caught.value.message, what
    assert sorted(os.listdir(tmp_path)) == ["b.tar.gz", "vault"]
