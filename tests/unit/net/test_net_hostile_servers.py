"""The guarded HTTP path against servers a gem may reach that answer in hostile or broken ways
(P-NET-10: ``ctx.http.fetch`` and URL downloads share this path).

Each server here is a real TCP listener on 127.0.0.1 that reads one request head and then writes
bytes chosen by the test, so that lying lengths, broken framing, compression bombs and trickling
answers reach the client exactly as a hostile server would send them. Every failure must be a
:class:`~notochord.errors.NetworkRequestError` whose words name the problem, memory must stay within
the response bound, and no answer may hold the request past its deadline.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import pytest

from notochord.errors import NetworkRequestError
from notochord.net.hosts import NetworkPermission
from notochord.net.policy import NetworkPolicy, UserNetworkRules
from notochord.net.transport import GuardedResponse, RequestLimits, guarded_request

pytestmark = pytest.mark.anyio

Script = Callable[[socket.socket], None]
LIMIT = 1_000_000


class ScriptedServer:
    """A listener on 127.0.0.1: per connection, read the request head, then run ``script``."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        # closing a listener does not wake a thread blocked in accept() on Linux: poll instead
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self.requests = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(10)
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = connection.recv(65536)
                    if not data:
                        return
                    head += data
                self.requests += 1
                self._script(connection)
            except OSError:
                return  # the client gave up, as it should when the answer is refused

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self._listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(script: Script) -> ScriptedServer:
        server = ScriptedServer(script)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def sends(raw: bytes) -> Script:
    return lambda connection: connection.sendall(raw)


def _policy(port: int) -> NetworkPolicy:
    permission = NetworkPermission(hosts=(), allow_local_network=True, reason="r")
    return NetworkPolicy(permission=permission, user_rules=UserNetworkRules.build(local_hosts=[f"127.0.0.1:{port}"]))


async def fetch(server: ScriptedServer, *, limit: int = LIMIT, timeout: float = 10.0) -> GuardedResponse:
    limits = RequestLimits(max_response_bytes=limit, timeout=timeout)
    return await guarded_request("GET", server.url(), policy=_policy(server.port), limits=limits)


def _gzip_of_zeros(size: int) -> bytes:
    """A gzip stream of ``size`` zero bytes, built without holding them (it expands about 1000x)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + packer.flush()


def _deflate_of_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + packer.flush()


def _answer(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{header}\r\n" for header in headers)
    return f"HTTP/1.1 200 OK\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


async def _peak_memory_of(server: ScriptedServer) -> tuple[BaseException, int]:
    tracemalloc.start()
    try:
        with pytest.raises(NetworkRequestError) as caught:
            await fetch(server)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return caught.value, peak


# The bound is 1 MB; a decoder holding the whole bomb would use 64 MB or more.
_MEMORY_BOUND = 12 * LIMIT


@pytest.mark.parametrize(
    ("encoding", "bomb"),
    [
        ("gzip", lambda: _gzip_of_zeros(64 << 20)),
        ("deflate", lambda: _deflate_of_zeros(64 << 20)),
        ("gzip, gzip", lambda: gzip.compress(_gzip_of_zeros(64 << 20))),
    ],
    ids=["gzip-1000x", "deflate-1000x", "gzip-in-gzip"],
)
async def test_a_compression_bomb_is_refused_at_the_size_bound_without_inflating_it_in_memory(
    serve: Callable[[Script], ScriptedServer], encoding: str, bomb: Callable[[], bytes]
) -> None:
    """P-NET-10: the size bound applies to the decoded body, and decoding stops at the bound, so a
    small compressed answer that expands a thousandfold never fills memory."""
    server = serve(sends(_answer(bomb(), f"Content-Encoding: {encoding}")))
    error, peak = await _peak_memory_of(server)
    assert str(error) == f"the response of 127.0.0.1 is larger than the limit of {LIMIT} bytes"
    assert peak < _MEMORY_BOUND


async def test_bytes_after_the_end_of_a_compressed_body_count_against_the_bound(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    """P-NET-10: a server that ends the gzip stream and then keeps sending, without a length, must
    not make the client take in more than the bound."""
    trailing = gzip.compress(b"hello") + b"\x00" * (3 * LIMIT)
    raw = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n" + trailing
    server = serve(sends(raw))
    error, peak = await _peak_memory_of(server)
    assert "larger than the limit" in str(error)
    assert peak < _MEMORY_BOUND


async def test_a_body_of_many_stacked_encodings_is_refused_in_words(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    """P-NET-10: each encoding costs a decoder; a server cannot make the client build thousands."""
    body = b"hello"
    for _ in range(40):
        body = gzip.compress(body)
    server = serve(sends(_answer(body, "Content-Encoding: " + ", ".join(["gzip"] * 40))))
    with pytest.raises(NetworkRequestError) as caught:
        await fetch(server)
    assert str(caught.value) == (
        "the response of 127.0.0.1 declares 40 content encodings, more than the 3 that are decoded; "
        "the server's answer cannot be read"
    )


async def test_compressed_bodies_within_the_bound_are_decoded(serve: Callable[[Script], ScriptedServer]) -> None:
    text = b"notochord " * 1000
    server = serve(sends(_answer(gzip.compress(gzip.compress(text)), "Content-Encoding: gzip, GZIP")))
    assert (await fetch(server)).body == text
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    headerless = raw_deflate.compress(text) + raw_deflate.flush()
    for body in (zlib.compress(text), headerless):
        server = serve(sends(_answer(body, "Content-Encoding: deflate")))
        assert (await fetch(server)).body == text


async def test_a_body_of_an_encoding_that_is_not_decoded_is_returned_as_received(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    server = serve(sends(_answer(b"\x1b\x03\x00", "Content-Encoding: br")))
    response = await fetch(server)
    assert response.body == b"\x1b\x03\x00"
    assert response.header("content-encoding") == "br"


async def test_a_body_that_does_not_match_its_compression_is_told_in_words(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    server = serve(sends(_answer(b"this is not gzip at all", "Content-Encoding: gzip")))
    with pytest.raises(NetworkRequestError) as caught:
        await fetch(server)
    assert str(caught.value) == (
        "the response of 127.0.0.1 could not be decoded: its body does not match the compression it declares"
    )


def _trickle(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        connection.sendall(b"x")
        time.sleep(0.05)


def _trickle_headers(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for number in range(1000):
        connection.sendall(b"X-Slow-%d: x\r\n" % number)
        time.sleep(0.05)


@pytest.mark.parametrize("script", [_trickle, _trickle_headers], ids=["body", "headers"])
async def test_an_answer_that_trickles_in_hits_the_deadline_of_the_whole_exchange(
    serve: Callable[[Script], ScriptedServer], script: Script
) -> None:
    """P-NET-10: a byte every so often resets no per-read timer that could keep the request alive:
    the whole exchange has one deadline."""
    server = serve(script)
    with pytest.raises(NetworkRequestError) as caught:
        await fetch(server, timeout=0.5)
    assert str(caught.value) == "request to 127.0.0.1 timed out; try again later or raise the timeout"


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\nContent-Length: 0\r\n\r\n",
            "127.0.0.1 sent response headers larger than 100 KB; such an answer is not read",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
            "127.0.0.1 closed the connection before the whole response arrived (5 of the 100 bytes it "
            "announced); the answer is incomplete, try again later",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            "127.0.0.1 closed the connection before the whole response arrived; the answer is incomplete, "
            "try again later",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
            "127.0.0.1 sent an invalid Content-Length header (repeated with different values, or not a "
            "number); its answer cannot be read",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabcde",
            "127.0.0.1 sent an invalid Content-Length header (repeated with different values, or not a "
            "number); its answer cannot be read",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
            "127.0.0.1 sent a body in malformed chunks (broken chunked transfer encoding); its answer cannot be read",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc\r\n0\r\n\r\n",
            "127.0.0.1 sent a body in malformed chunks (broken chunked transfer encoding); its answer cannot be read",
        ),
        (
            b"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 0\r\n\r\n",
            "127.0.0.1 sent a malformed response header; its answer cannot be read",
        ),
        (
            b"HTTP/1.1 99 Odd\r\nContent-Length: 0\r\n\r\n",
            "127.0.0.1 sent a malformed status line; check that it serves HTTP at that address",
        ),
        (
            b"",
            "127.0.0.1 closed the connection without sending an answer; check that it serves HTTP at that address",
        ),
    ],
    ids=[
        "huge-header",
        "content-length-longer-than-body",
        "chunked-cut-short",
        "conflicting-content-lengths",
        "negative-content-length",
        "chunk-size-not-hex",
        "chunk-longer-than-its-size",
        "nul-in-header",
        "two-digit-status",
        "closed-without-answer",
    ],
)
async def test_a_broken_answer_is_refused_with_words_that_name_what_is_broken(
    serve: Callable[[Script], ScriptedServer], raw: bytes, words: str
) -> None:
    """P-NET-10: the person or gem author learns what the server did wrong, not a parser's jargon."""
    server = serve(sends(raw))
    with pytest.raises(NetworkRequestError) as caught:
        await fetch(server)
    assert str(caught.value) == words
    assert caught.value.__cause__ is not None


async def test_a_body_longer_than_its_content_length_is_cut_at_the_announced_length(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    server = serve(sends(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdefgh"))
    assert (await fetch(server)).body == b"abc"


async def test_thousands_of_headers_within_the_header_bound_are_kept(
    serve: Callable[[Script], ScriptedServer],
) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % number for number in range(3000))
    server = serve(sends(b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 2\r\n\r\nok"))
    response = await fetch(server)
    assert response.body == b"ok"
    assert response.header("x-h2999") == "v"


@pytest.mark.parametrize("charset", ["rot13", "base64", "zlib", "bz2", "idna", "punycode", "undefined", "no-such"])
def test_a_declared_charset_that_is_no_text_encoding_reads_as_utf8(charset: str) -> None:
    """P-NET-10: a server's charset parameter never makes text() or json() fail with a codec error
    (and never runs a decompressing codec); the body is read as UTF-8, bad bytes replaced."""
    response = GuardedResponse(
        status=200,
        headers=(("content-type", f"application/json; charset={charset}"),),
        body='{"name": "Bücher"}'.encode() + b"\xff",
        url="http://api.example.test/",
    )
    assert response.text() == '{"name": "Bücher"}\ufffd'
    with pytest.raises(NetworkRequestError, match="is not JSON"):
        response.json()
    assert GuardedResponse(
        status=200, headers=(("content-type", f"text/plain; charset={charset}"),), body=b'{"a": 1}', url="x"
    ).json() == {"a": 1}


@pytest.mark.parametrize(
    ("method", "head"),
    [
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 50000000\r\n\r\n"),
        ("GET", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50000000\r\n\r\n"),
        ("GET", b"HTTP/1.1 204 No Content\r\nContent-Length: 50000000\r\n\r\n"),
    ],
    ids=["head", "not-modified", "no-content"],
)
async def test_an_answer_without_a_body_is_not_refused_for_the_length_it_announces(
    serve: Callable[[Script], ScriptedServer], method: str, head: bytes
) -> None:
    """P-NET-10: a HEAD answer (or a 304, or a 204) announces the size of a body it never sends; asking
    how large a file is must work for a file larger than the bound."""
    server = serve(sends(head))
    limits = RequestLimits(max_response_bytes=LIMIT)
    response = await guarded_request(method, server.url(), policy=_policy(server.port), limits=limits)
    assert response.body == b""
    assert response.header("content-length") == "50000000"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "it is nested too deeply"),
        (b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, "it is nested too deeply"),
        (b"1" * 5000, "Exceeds the limit"),
    ],
    ids=["deep-arrays", "deep-objects", "huge-integer"],
)
def test_json_a_server_made_hard_to_read_is_refused_in_words(body: bytes, words: str) -> None:
    """P-NET-10: json() raises only NetworkRequestError, whatever the body; Python's JSON reader
    gives up on deep nesting with a RecursionError that must not reach the gem."""
    response = GuardedResponse(status=200, headers=(), body=body, url="http://api.example.test/")
    with pytest.raises(NetworkRequestError) as caught:
        response.json()
    assert str(caught.value).startswith("the response of http://api.example.test/ is not JSON")
    assert words in str(caught.value)
