"""Reading a response body within its size bound, decoding its ``Content-Encoding`` as it arrives.

Rules:

- The bound applies to the decoded body AND to the bytes received: a body that expands a
  thousandfold (a gzip or deflate bomb, or gzip inside gzip) is refused at the bound, and so is a
  server that ends its compressed stream and keeps sending. Bytes received may exceed the bound by a
  small allowance for the framing of a compressed body that does not compress.
- Decoding is incremental and each step yields at most :data:`STEP` bytes per layer, so memory holds
  at most the bound plus one step per layer, whatever the compression ratio.
- ``gzip`` (``x-gzip``), ``deflate`` (with or without its zlib header) and ``identity`` are decoded,
  in the reverse of the order they are listed. A body listing any other coding (``br``, ``zstd``,
  ``compress``) is returned as received: it cannot be decoded here, and its header says what it is.
  At most :data:`MAX_CODINGS` layers are decoded; more is refused, each layer costing a decoder.
- Bytes after the end of a compressed stream are counted and dropped, never kept.
- Every failure is a :class:`~notochord.errors.NetworkRequestError`; the foreign exception is chained.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import httpx

from notochord.errors import NetworkRequestError

__all__ = ["MAX_CODINGS", "STEP", "read_bounded"]

STEP = 64 * 1024
MAX_CODINGS = 3
_GZIP_BITS = 16 + zlib.MAX_WBITS
_WBITS = {"gzip": _GZIP_BITS, "x-gzip": _GZIP_BITS, "deflate": zlib.MAX_WBITS}
_BODILESS_STATUSES = frozenset({204, 304})


class _Layer:
    """One coding, decoded at most :data:`STEP` bytes at a time."""

    def __init__(self, coding: str) -> None:
        self._deflate = coding == "deflate"
        self._started = False
        self._inflater = zlib.decompressobj(_WBITS[coding])

    def _inflate(self, data: bytes) -> bytes:
        try:
            return self._inflater.decompress(data, STEP)
        except zlib.error:
            if not (self._deflate and not self._started):
                raise
            # Servers disagree on whether "deflate" carries the zlib header; read it as raw deflate
            # when the header is missing, as browsers do.
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflater.decompress(data, STEP)
        finally:
            self._started = True

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while not self._inflater.eof:
            out = self._inflate(pending)
            pending = self._inflater.unconsumed_tail
            if out:
                yield out
            # A full step may leave output inside the inflater even with no input left: go on
            # until a step comes back short.
            if not pending and len(out) < STEP:
                return


def _through(layers: tuple[_Layer, ...], data: bytes) -> Iterator[bytes]:
    if not layers:
        yield data
        return
    for piece in layers[0].feed(data):
        yield from _through(layers[1:], piece)


def _layers(response: httpx.Response, host: str) -> tuple[_Layer, ...]:
    codings = [
        value.strip().lower()
        for value in response.headers.get_list("content-encoding", split_commas=True)
        if value.strip() and value.strip().lower() != "identity"
    ]
    if any(coding not in _WBITS for coding in codings):
        return ()
    if len(codings) > MAX_CODINGS:
        raise NetworkRequestError(
            f"the response of {host} declares {len(codings)} content encodings, more than the {MAX_CODINGS} "
            "that are decoded; the server's answer cannot be read"
        )
    return tuple(_Layer(coding) for coding in reversed(codings))


def _too_large(host: str, limit: int) -> NetworkRequestError:
    return NetworkRequestError(f"the response of {host} is larger than the limit of {limit} bytes")


async def read_bounded(response: httpx.Response, *, host: str, limit: int, method: str) -> bytes:
    """The whole decoded body of ``response`` to a ``method`` request, refused past ``limit`` bytes.

    The ``Content-Length`` of an answer that has no body (to HEAD, or 204, 304) is the size of a body
    never sent, so it is not held against the limit.

    Raises:
        NetworkRequestError: the body (received or decoded) is over the limit, it does not match the
            compression it declares, or it declares too many encodings.
    """
    if response.is_stream_consumed:
        # An in-memory response (an injected transport's) arrives already read and decoded by httpx.
        if len(response.content) > limit:
            raise _too_large(host, limit)
        return response.content
    layers = _layers(response, host)
    # deflate's worst case adds a few bytes per 16 KB block to a body that does not compress
    received_limit = limit + (limit // 64 + 1024 if layers else 0)
    declared = response.headers.get("content-length")
    bodiless = method == "HEAD" or response.status_code in _BODILESS_STATUSES
    if (
        not bodiless
        and declared is not None
        and declared.isascii()
        and declared.isdigit()
        and int(declared) > received_limit
    ):
        raise NetworkRequestError(f"the response of {host} is {declared} bytes, over the limit of {limit} bytes")
    chunks: list[bytes] = []
    received = 0
    total = 0
    async for raw in response.aiter_raw():
        received += len(raw)
        if received > received_limit:
            raise _too_large(host, limit)
        try:
            for piece in _through(layers, raw):
                total += len(piece)
                if total > limit:
                    raise _too_large(host, limit)
                chunks.append(piece)
        except zlib.error as exc:
            raise NetworkRequestError(
                f"the response of {host} could not be decoded: its body does not match the compression it declares"
            ) from exc
    return b"".join(chunks)
