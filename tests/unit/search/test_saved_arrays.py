"""The container of a space's saved search data: what is written is read back exactly, or not at all.

The saved full-text index and the saved vectors are derived data; a file that does not check out
must come back as ``None`` (the caller then rebuilds from the database), never as wrong arrays.
K-SRCH-03.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from notochord.search import saved_arrays

MAGIC = b"notochord test arrays\n"


def _arrays() -> dict[str, npt.NDArray[Any]]:
    return {
        "ids": np.array([3, 5, 8, 13], dtype=np.int64),
        "lengths": np.array([7, 1, 2], dtype=np.int32),  # 12 bytes: padded to the next 8
        "flags": np.array([True, False, True], dtype=np.bool_),
        "rows": np.linspace(-1, 1, 12, dtype=np.float32),
        "empty": np.zeros(0, dtype=np.uint8),
    }


def _save(path: Path) -> None:
    assert saved_arrays.save(path, {"table": "t", "top": 13}, _arrays(), magic=MAGIC, what="test arrays")


def test_what_is_saved_is_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "space.db.test"
    _save(path)
    loaded = saved_arrays.load(path, magic=MAGIC, what="test arrays")
    assert loaded is not None
    header, arrays = loaded
    assert header == {"table": "t", "top": 13}
    for name, array in _arrays().items():
        assert arrays[name].dtype == array.dtype
        assert arrays[name].tolist() == array.tolist(), name
    assert path.stat().st_mode & 0o777 == 0o600
    assert not list(tmp_path.glob("*.partial"))


def test_room_asked_for_is_allocated_behind_the_saved_values(tmp_path: Path) -> None:
    path = tmp_path / "space.db.test"
    _save(path)
    loaded = saved_arrays.load(
        path, magic=MAGIC, what="test arrays", room=lambda name, length: 64 if name == "rows" else length
    )
    assert loaded is not None
    rows = loaded[1]["rows"]
    assert len(rows) == 64
    assert rows[:12].tolist() == _arrays()["rows"].tolist()


@pytest.mark.parametrize(
    "damage",
    ["one byte of an array flipped", "cut short", "cut inside its header", "another kind of file", "bytes added"],
)
def test_a_damaged_file_is_not_read(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "space.db.test"
    _save(path)
    raw = bytearray(path.read_bytes())
    if damage == "one byte of an array flipped":
        raw[-20] ^= 0x01
    elif damage == "cut short":
        raw = raw[:-9]
    elif damage == "cut inside its header":
        raw = raw[: len(MAGIC) + 20]
    elif damage == "another kind of file":
        raw = bytearray(b"notochord other arrays\n") + raw[len(MAGIC) + 1 :]
    else:
        raw += b"\0" * 8
    path.write_bytes(bytes(raw))
    assert saved_arrays.load(path, magic=MAGIC, what="test arrays") is None


def test_a_header_the_caller_refuses_reads_no_array(tmp_path: Path) -> None:
    """The caller's check comes before the arrays: a refused file is not read (here it could not be)."""
    path = tmp_path / "space.db.test"
    _save(path)
    raw = path.read_bytes()
    meta_end = len(MAGIC) + 8 + int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 8], "little")
    path.write_bytes(raw[:meta_end])  # the arrays gone
    seen: list[dict[str, Any]] = []

    def refuse(header: dict[str, Any]) -> bool:
        seen.append(header)
        return False

    assert saved_arrays.load(path, magic=MAGIC, what="test arrays", accept=refuse) is None
    assert seen == [{"table": "t", "top": 13}]


def test_a_file_written_by_an_earlier_version_is_still_read(tmp_path: Path) -> None:
    """Files of the first format carry a BLAKE2b digest instead of a CRC-32: a restart after an
    upgrade loads them rather than rebuilding."""
    arrays = _arrays()
    layout: dict[str, Any] = {}
    payload = b""
    for name, array in arrays.items():
        data = array.tobytes()
        layout[name] = {"dtype": str(array.dtype), "length": int(array.shape[0]), "offset": len(payload)}
        payload += data + b"\0" * (-len(data) % 8)
    meta = json.dumps(
        {
            "format": 1,
            "header": {"table": "t"},
            "arrays": layout,
            "bytes": len(payload),
            "digest": hashlib.blake2b(payload, digest_size=32).hexdigest(),
        }
    ).encode()
    meta += b" " * (-(len(MAGIC) + 8 + len(meta)) % 8)
    path = tmp_path / "space.db.test"
    path.write_bytes(MAGIC + len(meta).to_bytes(8, "little") + meta + payload)

    loaded = saved_arrays.load(path, magic=MAGIC, what="test arrays")
    assert loaded is not None
    assert loaded[1]["ids"].tolist() == arrays["ids"].tolist()

    path.write_bytes(MAGIC + len(meta).to_bytes(8, "little") + meta + payload[:-1] + b"\x01")
    assert saved_arrays.load(path, magic=MAGIC, what="test arrays") is None
