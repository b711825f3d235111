"""A crafted backup with a great many members is refused at the first one its record does not list.

A tar header is 512 bytes of mostly zeros: a 6 MB .tar.gz holds a million empty members. Reading
every header before judging any of them kept each in memory (770 MB for that file, and minutes of
work); the record says how many files a backup holds, so the archive is read member by member and
refused as soon as one does not belong (OD-K47: the vault's files are read as hostile input).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from notochord.backup import MANIFEST, restore
from notochord.errors import ConfigurationError

KEY = b"k" * 32
EXTRA = 5000


def _archive(path: Path, *, manifest_first: bool = True) -> Path:
    record = {
        "format": "notochord-backup",
        "version": 1,
        "created": "2026-12-07T03:00:00Z",
        "files": [{"path": "master.key", "size": len(KEY), "sha256": hashlib.sha256(KEY).hexdigest()}],
    }
    members = [("vault/master.key", KEY)] + [(f"vault/unlisted-{n}", b"") for n in range(EXTRA)]
    manifest = (MANIFEST, json.dumps(record).encode("utf-8"))
    ordered = [manifest, *members] if manifest_first else [*members, manifest]
    with tarfile.open(path, mode="w:gz") as archive:
        for name, data in ordered:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_thousands_of_members_the_record_does_not_list_are_not_all_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, all 5,002 headers were read (and kept) before the first was judged."""
    read: list[str] = []
    header = tarfile.TarInfo.fromtarfile

    def counted(tarfile_: tarfile.TarFile) -> Any:
        info = header(tarfile_)
        read.append(info.name)
        return info

    monkeypatch.setattr(tarfile.TarInfo, "fromtarfile", staticmethod(counted))
    target = tmp_path / "restored"

    with pytest.raises(ConfigurationError) as caught:
        restore(_archive(tmp_path / "many.tar.gz"), target)

    assert "is damaged: unlisted-0 is not in the backup's record" in caught.value.message
    assert len(read) < 10, f"{len(read)} headers read"
    assert not target.exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".notochord-")] == []


def test_a_record_that_is_not_the_first_member_is_no_backup_of_ours(tmp_path: Path) -> None:
    """notochord writes the record first; one found only after thousands of members is not looked for."""
    with pytest.raises(ConfigurationError, match="is not a notochord backup"):
        restore(_archive(tmp_path / "late.tar.gz", manifest_first=False), tmp_path / "restored")
