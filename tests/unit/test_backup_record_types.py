"""The record inside a backup (``notochord-backup.json``) is read with the types it must have.

JSON's ``true`` is Python's ``True``, which equals ``1``; ``1.0`` equals ``1`` too; a number that
overflows is infinity. A record whose version, sizes, digests or date are of the wrong type was not
written by notochord: it is refused in words before anything is unpacked, never read as the value it
happens to compare equal to (OD-K47: the vault's files are read as hostile input).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from notochord.backup import MANIFEST, restore
from notochord.errors import ConfigurationError

KEY = b"k" * 32
DIGEST = hashlib.sha256(KEY).hexdigest()


def _archive(path: Path, record_text: str) -> Path:
    """A backup holding the master key, its record given as JSON text (so any value can be written)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in [(MANIFEST, record_text.encode("utf-8")), ("vault/master.key", KEY)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    path.write_bytes(packer.compress(out.getvalue()) + packer.flush())
    return path


def _record(*, version: str = "1", size: str = "32", digest: str = json.dumps(DIGEST), created: str = '"x"') -> str:
    created = created if created != '"x"' else '"2026-12-07T03:00:00Z"'
    return (
        f'{{"format": "notochord-backup", "version": {version}, "created": {created}, '
        f'"files": [{{"path": "master.key", "size": {size}, "sha256": {digest}}}]}}'
    )


def _refused(tmp_path: Path, record_text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    from notochord.backup import restoring

    unpacked: list[str] = []
    write = restoring._written

    def watched(archive: tarfile.TarFile, member: tarfile.TarInfo, *args: Any) -> str:
        unpacked.append(member.name)
        return write(archive, member, *args)

    monkeypatch.setattr(restoring, "_written", watched)
    target = tmp_path / "restored"
    with pytest.raises(ConfigurationError) as caught:
        restore(_archive(tmp_path / "crafted.tar.gz", record_text), target)
    assert not target.exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".notochord-")] == []
    assert unpacked == [], "refused before anything was unpacked"
    return caught.value.message


def test_the_record_as_notochord_writes_it_restores(tmp_path: Path) -> None:
    """The control: the same archive with a well-typed record is a backup."""
    assert restore(_archive(tmp_path / "b.tar.gz", _record()), tmp_path / "restored").files == 1


@pytest.mark.parametrize("version", ["true", "1.0", '"1"', "null", "[1]"])
def test_a_version_that_only_compares_equal_to_1_is_not_a_known_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """``"version": true`` was read as version 1 (``True == 1``), and ``1.0`` too."""
    message = _refused(tmp_path, _record(version=version), monkeypatch)

    assert "is not a notochord backup of a known version" in message
    assert version in message


@pytest.mark.parametrize("size", ["true", "false", "-1", "1e400", "32.0", '"32"', "null"])
def test_a_size_that_is_not_a_whole_number_of_bytes_is_refused_as_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: str
) -> None:
    message = _refused(tmp_path, _record(size=size), monkeypatch)

    assert "is damaged" in message
    assert "master.key" in message


@pytest.mark.parametrize(
    "digest",
    [
        pytest.param('"not a digest"', id="words"),
        pytest.param(json.dumps(DIGEST.upper()), id="upper-case"),
        pytest.param(json.dumps(DIGEST[:-1]), id="one-short"),
        pytest.param("true", id="bool"),
        pytest.param("1", id="number"),
    ],
)
def test_a_digest_that_is_no_sha256_is_refused_before_unpacking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digest: str
) -> None:
    """Before, a malformed digest was found only after the whole vault was unpacked and hashed."""
    message = _refused(tmp_path, _record(digest=digest), monkeypatch)

    assert "is damaged" in message


@pytest.mark.parametrize(
    "created",
    [
        pytest.param("true", id="bool"),
        pytest.param("20261207", id="number"),
        pytest.param('{"at": "now"}', id="object"),
        pytest.param(json.dumps("x" * 100_000), id="huge-text"),
        pytest.param(json.dumps("\u001b]0;owned\u0007"), id="terminal-escape"),
    ],
)
def test_a_creation_time_that_is_not_a_time_is_refused_as_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, created: str
) -> None:
    """The creation time is shown to the user after a restore: before, any JSON value was shown as
    it was (an object's Python rendering, a hundred thousand characters)."""
    message = _refused(tmp_path, _record(created=created), monkeypatch)

    assert "is damaged" in message
    assert len(message) < 600
