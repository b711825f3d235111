"""A backup's gzip stream is deflated on every core, and is still one ordinary gzip stream.

Compressing is most of a backup's time, so the stream is cut into blocks deflated side by side;
joined in order they must be exactly one gzip member that any reader (Python's ``gzip``, zlib with
its checks, the ``gzip`` tool) unpacks to the bytes written, with the right CRC and length, whatever
the sizes written and however they fall on block boundaries (OD-K47: every space of the vault is
a file of its own, and every one of them is copied whole).
"""

from __future__ import annotations

import gzip
import io
import os
import random
import zlib

import pytest

from notochord.backup.compressing import BLOCK_BYTES, ParallelGzipWriter


def _one_gzip_member(data: bytes) -> bytes:
    """``data`` unpacked with every check zlib makes (CRC and length), refused if it holds more."""
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = unpacker.decompress(data) + unpacker.flush()
    assert unpacker.eof, "the stream ends"
    assert unpacker.unused_data == b"", "one member, nothing after it"
    return out


def _text(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(500)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    return bytes(out[:size])


@pytest.mark.parametrize(
    "size", [0, 1, BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1, 3 * BLOCK_BYTES + 777], ids=lambda n: f"{n}B"
)
@pytest.mark.parametrize("threads", [1, 3])
def test_what_is_written_comes_back_exactly(size: int, threads: int) -> None:
    data = _text(size, seed=size)
    out = io.BytesIO()
    rng = random.Random(size)
    with ParallelGzipWriter(out, level=6, threads=threads) as packed:
        start = 0
        while start < len(data):  # writes of every size, as tarfile's headers and copies make them
            end = start + rng.choice((1, 511, 512, 16_384, BLOCK_BYTES + 5))
            packed.write(data[start:end])
            start = end
        assert packed.tell() == len(data)
    written = out.getvalue()

    assert _one_gzip_member(written) == data
    assert gzip.decompress(written) == data


def test_blocks_compress_about_as_well_as_one_stream() -> None:
    """Each block is primed with the end of the one before, so cutting costs almost nothing."""
    data = _text(4 * BLOCK_BYTES, seed=1)
    out = io.BytesIO()
    with ParallelGzipWriter(out, level=6, threads=2) as packed:
        packed.write(data)
    assert len(out.getvalue()) < 1.01 * len(gzip.compress(data, compresslevel=6))


def test_random_bytes_and_a_failure_part_way() -> None:
    """Incompressible data comes back too; a writer given up part way stops its threads and writes
    no end, so what it left is no gzip stream a reader would take for whole."""
    data = os.urandom(2 * BLOCK_BYTES + 3)
    out = io.BytesIO()
    with ParallelGzipWriter(out, level=6, threads=2) as packed:
        packed.write(data)
    assert _one_gzip_member(out.getvalue()) == data

    cut = io.BytesIO()
    with pytest.raises(KeyboardInterrupt), ParallelGzipWriter(cut, level=6, threads=2) as packed:
        packed.write(data)
        raise KeyboardInterrupt
    with pytest.raises((EOFError, zlib.error, gzip.BadGzipFile)):
        gzip.decompress(cut.getvalue())
    with pytest.raises(ValueError, match="closed"):
        packed.write(b"more")
