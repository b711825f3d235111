"""Requests the HTTP parser refuses before the application sees them still carry the console's protections.

A request line or header that is not HTTP (a header without a colon, a space in a header's name) is
answered 400 by the server's HTTP layer itself, and a connection beyond the cap 503, before any
route or middleware runs; those answers went out without the console's Content-Security-Policy,
``X-Frame-Options``, ``nosniff``, ``Referrer-Policy`` and ``no-store``. They now carry them, as
every other answer of the console does.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from console_harness import ConsoleServer, start_console

PROTECTIONS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body the server answers to the raw bytes ``request`` (none: to the
    connection alone)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        if request:
            sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def _assert_protected(headers: dict[str, str]) -> None:
    for name, value in PROTECTIONS.items():
        assert headers.get(name) == value, (name, headers)
    assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), headers


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /gems HTTP/1.1\r\nHost: 127.0.0.1\r\nNot a header\r\n\r\n",
        b"GET /gems HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n",
        b"GET /gems\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"POST /gems HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    ],
    ids=["line-without-colon", "space-in-a-name", "control-character-in-the-target", "two-lengths"],
)
def test_a_request_the_http_parser_refuses_is_400_with_the_console_s_protections(
    console: ConsoleServer, request_bytes: bytes
) -> None:
    """K-UI-12: the parser's 400 carries the console's protections and says nothing of the parser."""
    status, headers, body = _exchange(console.port, request_bytes)
    assert status == 400
    _assert_protected(headers)
    assert headers["content-type"].startswith("text/plain")
    assert body.strip() != b""


def test_a_connection_past_the_cap_is_503_with_the_console_s_protections(tmp_path: Path) -> None:
    """K-UI-12: the server's own 503 for a connection beyond ``http_max_connections`` carries them too."""
    server = start_console(tmp_path / "data", http_max_connections=1)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as holder:
            holder.sendall(b"GET /gems HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # an unfinished head holds it open
            status, headers, _ = _exchange(server.port, b"")
        assert status == 503
        _assert_protected(headers)
    finally:
        server.stop()
