"""The client's messages over stdio: lines of UTF-8 read in bounded pieces.

A line is held only up to :data:`MAX_LINE_BYTES`; past that its bytes are read and dropped up to
its end, so a client sending a line of any length costs the server that much memory at most
(reading the whole line first, as a text file's iterator does, held hundreds of megabytes for a
line of a hundred). Bytes that are not UTF-8 are refused rather than replaced with U+FFFD, which
would store text the client never sent. Only a line feed ends a line: a carriage return is JSON
whitespace, and U+2028, U+2029 and U+0085 are text inside strings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final

import anyio.to_thread
import mcp_types as types

from notochord.mcp_server.words import not_utf8, too_large

__all__ = ["MAX_LINE_BYTES", "Line", "LineProblem", "bounded_lines"]

MAX_LINE_BYTES: Final = 4 * 1024 * 1024
"""One message over stdio. Arguments are held to a quarter of this (the tools' own limit); the rest
is room for the envelope and for text escaped as ``\\uXXXX``, which takes six bytes a character."""
_CHUNK: Final = 64 * 1024


@dataclass(frozen=True)
class Line:
    text: str


@dataclass(frozen=True)
class LineProblem:
    """A line that cannot be handed on: ``code`` and ``message`` of its JSON-RPC error."""

    code: int
    message: str


async def bounded_lines(
    read: Callable[[int], bytes], *, limit: int = MAX_LINE_BYTES
) -> AsyncIterator[Line | LineProblem]:
    """The lines ``read`` (a blocking read of at most n bytes, ``b""`` at the end) yields, decoded,
    or the problem of each line that is too long or not UTF-8; a last line without a line feed too."""
    held = bytearray()
    dropping = False
    while True:
        chunk = await anyio.to_thread.run_sync(read, _CHUNK)
        if not chunk:
            break
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if dropping:
                dropping = False
                yield _too_long(limit)
            elif len(held) + end - start > limit:
                held.clear()
                yield _too_long(limit)
            else:
                held += chunk[start:end]
                yield _decoded(bytes(held))
                held.clear()
            start = end + 1
        if not dropping:
            held += chunk[start:]
            if len(held) > limit:
                # the rest of this line is read and dropped as it comes: never held
                held.clear()
                dropping = True
    if dropping:
        yield _too_long(limit)
    elif held.strip():
        yield _decoded(bytes(held))


def _too_long(limit: int) -> LineProblem:
    # JSON-RPC 2.0: the message may well be JSON, just not one this server reads
    return LineProblem(types.INVALID_REQUEST, too_large(limit))


def _decoded(line: bytes) -> Line | LineProblem:
    try:
        return Line(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        return LineProblem(types.PARSE_ERROR, not_utf8(error))
