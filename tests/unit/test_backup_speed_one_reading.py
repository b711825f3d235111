"""A restore reads the backup once, from start to end, and still checks all of it.

Before, the archive was decompressed twice (once to judge its members, once more to unpack them,
gzip having no way back but from the start) and every unpacked file read a third time for its
digest. Now each member is judged against the record before a byte of it is written and its digest
computed as it is written; the vault that comes back is byte for byte the one backed up, and a
backup changed anywhere, its gzip trailer included, is still refused (OD-K47: the vault's files
are read as hostile input, and each space is restored whole or not at all).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest

from notochord.backup import backup, restore
from notochord.backup.compressing import BLOCK_BYTES
from notochord.errors import ConfigurationError

KEY = b"k" * 32


def _vault(folder: Path) -> Path:
    (folder / "spaces").mkdir(parents=True)
    (folder / "master.key").write_bytes(KEY)
    os.chmod(folder / "master.key", 0o600)
    with sqlite3.connect(folder / "spaces" / "personal.db") as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE notes (body BLOB)")
        conn.executemany("INSERT INTO notes VALUES (?)", [(os.urandom(2000),) for _ in range(300)])
    conn.close()
    (folder / "gems" / "g1").mkdir(parents=True)
    # larger than a compressed block, and of a size no block boundary divides
    (folder / "gems" / "g1" / "big.bin").write_bytes(os.urandom(2 * BLOCK_BYTES + 12_345))
    (folder / "gems" / "g1" / "tool.js").write_text("export default async function () {}\n")
    (folder / "gems" / "g1" / "empty").write_bytes(b"")
    os.chmod(folder / "gems" / "g1" / "tool.js", 0o750)
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _rows(database: Path) -> list[Any]:
    conn = sqlite3.connect(database)
    try:
        return conn.execute("SELECT rowid, body FROM notes ORDER BY rowid").fetchall()
    finally:
        conn.close()


def test_a_restored_vault_is_byte_for_byte_the_one_backed_up(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    made = backup(vault, tmp_path / "vault.tar.gz")
    restored = tmp_path / "restored"

    restore(made.path, restored)

    before, after = _files(vault), _files(restored)
    database = "spaces/personal.db"
    assert set(after) == {name for name in before if not name.endswith(("-wal", "-shm"))}
    assert {n: d for n, d in after.items() if n != database} == {n: d for n, d in before.items() if n != database}
    assert _rows(restored / database) == _rows(vault / database)
    assert stat.S_IMODE((restored / "gems" / "g1" / "tool.js").stat().st_mode) == 0o750, "its mode kept"
    assert stat.S_IMODE((restored / "master.key").stat().st_mode) == 0o600


def test_a_restore_reads_the_backup_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = backup(_vault(tmp_path / "vault"), tmp_path / "vault.tar.gz")
    read = [0]
    files: list[Any] = []
    opened = tarfile.open

    class Counted:
        """The backup file, counting the bytes read from it."""

        def __init__(self, path: Path) -> None:
            self._file = path.open("rb")
            files.append(self._file)

        def read(self, size: int = -1, /) -> bytes:
            data = self._file.read(size)
            read[0] += len(data)
            return data

        def write(self, data: bytes, /) -> int:
            raise AssertionError("a restore never writes to the backup")

        def seek(self, offset: int, whence: int = 0, /) -> int:
            return self._file.seek(offset, whence)

        def tell(self) -> int:
            return self._file.tell()

        def close(self) -> None:
            self._file.close()

    def counting(name: Path, mode: str) -> tarfile.TarFile:
        assert mode == "r:gz", "how a restore opens the backup"
        return opened(fileobj=Counted(name), mode="r:gz")

    monkeypatch.setattr(tarfile, "open", counting)

    restore(made.path, tmp_path / "restored")
    for file in files:
        file.close()

    assert made.path.stat().st_size <= read[0] < 1.2 * made.path.stat().st_size


def test_a_backup_whose_gzip_checksum_was_changed_is_refused_as_damaged(tmp_path: Path) -> None:
    """The files' digests are in the record; the record itself is covered by gzip's CRC at the end."""
    made = backup(_vault(tmp_path / "vault"), tmp_path / "vault.tar.gz")
    data = bytearray(made.path.read_bytes())
    data[-8] ^= 0xFF  # the first byte of the CRC-32 of everything compressed
    made.path.write_bytes(bytes(data))
    target = tmp_path / "restored"

    with pytest.raises(ConfigurationError, match="is damaged") as caught:
        restore(made.path, target)

    assert "restore from another copy of the backup" in caught.value.message
    assert not target.exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".notochord-")] == []
