"""Writing one gzip stream on every core: the deflating of a backup is most of its time.

The stream is cut into blocks that are deflated side by side on worker threads (zlib lets go of
the interpreter while it compresses), as ``pigz`` does: each block is primed with the last 32 KiB
of the one before it, so it compresses almost as well as one long stream, and ends byte-aligned
(a sync flush), so the blocks joined in order are one valid deflate stream. The result is a single
ordinary gzip member that every gzip reader reads; only its CRC and length, written at the end, are
computed in order, over the whole input.
"""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import BinaryIO

__all__ = ["ParallelGzipWriter", "workers"]

BLOCK_BYTES = 1 << 20
_WINDOW = 32 * 1024  # what deflate can refer back to: the dictionary a block is primed with
_HEADER_FLAGS = 0
_OS_UNKNOWN = 255


def workers() -> int:
    """Threads to deflate on: every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on every system
        return max(1, os.cpu_count() or 1)


def _deflate(level: int, block: bytes, primer: bytes) -> bytes:
    if primer:
        compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, primer)
    else:
        compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(block) + compressor.flush(zlib.Z_SYNC_FLUSH)


class ParallelGzipWriter:
    """A write-only binary file that gzips what it is given into ``raw``, on ``threads`` threads.

    Memory is bounded: at most two blocks per thread are in flight. ``close`` writes the end of the
    stream; it does not close ``raw``.
    """

    def __init__(self, raw: BinaryIO, *, level: int, threads: int | None = None) -> None:
        self._raw = raw
        self._level = level
        self._threads = threads or workers()
        self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="backup-deflate")
        self._pending: deque[Future[bytes]] = deque()
        self._buffer = bytearray()
        self._primer = b""
        self._crc = 0
        self._size = 0
        self._closed = False
        mtime = int(time.time()) & 0xFFFFFFFF
        raw.write(struct.pack("<BBBBIBB", 0x1F, 0x8B, zlib.DEFLATED, _HEADER_FLAGS, mtime, 0, _OS_UNKNOWN))

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._closed:
            raise ValueError("write to a closed gzip stream")
        view = memoryview(data)
        self._crc = zlib.crc32(view, self._crc)
        self._size += len(view)
        self._buffer += view
        while len(self._buffer) >= BLOCK_BYTES:
            block = bytes(self._buffer[:BLOCK_BYTES])
            del self._buffer[:BLOCK_BYTES]
            self._submit(block)
        return len(view)

    def read(self, size: int = -1, /) -> bytes:  # noqa: ARG002  (what tarfile's file type asks for)
        raise io.UnsupportedOperation("a gzip stream being written cannot be read")

    def seek(self, pos: int, /) -> int:  # noqa: ARG002
        raise io.UnsupportedOperation("a gzip stream is written from start to end")

    def tell(self) -> int:
        """Bytes written so far, before compression (what ``tarfile`` counts its offsets in)."""
        return self._size

    def flush(self) -> None:
        """Nothing to do before ``close``: a block is deflated once it is whole."""

    def close(self) -> None:
        """Deflate what is left, end the stream, and write its CRC and length."""
        if self._closed:
            return
        try:
            if self._buffer:
                self._submit(bytes(self._buffer))
                self._buffer.clear()
            self._drain(0)
            # an empty last block ends the stream: every block before it ended with a sync flush
            self._raw.write(zlib.compressobj(self._level, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH))
            self._raw.write(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Stop the threads without ending the stream (after a failure, or Ctrl-C)."""
        self._closed = True
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ParallelGzipWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()

    def _submit(self, block: bytes) -> None:
        self._pending.append(self._pool.submit(_deflate, self._level, block, self._primer))
        self._primer = block[-_WINDOW:]
        self._drain(2 * self._threads)

    def _drain(self, keep: int) -> None:
        """Write the finished blocks, in order, until at most ``keep`` are still in flight."""
        while len(self._pending) > keep:
            self._raw.write(self._pending.popleft().result())
