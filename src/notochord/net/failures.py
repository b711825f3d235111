"""What a failed look-up, connection or exchange means, in words a gem author or the person can act on.

The operating system, OpenSSL, httpx and h11 each describe a failure in their own terms
(``[Errno 111] Connection refused``, ``[SSL: WRONG_VERSION_NUMBER] wrong version number
(_ssl.c:1006)``, ``All connection attempts failed``). A gem's ``ctx.http`` and the person's console
show :class:`~notochord.errors.NetworkRequestError` messages instead: what failed, with which host,
the likely reason in plain words, and what to try. The foreign exception stays chained as the cause,
for the log.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl

import httpx

from notochord.errors import NetworkRequestError

__all__ = ["lookup_failure", "translate_error"]

_CONNECT_REASONS: dict[int, str] = {
    errno.ECONNREFUSED: "nothing there accepts connections on that port",
    errno.ECONNRESET: "the connection was reset while it was being made",
    errno.ECONNABORTED: "the connection was aborted while it was being made",
    errno.ENETUNREACH: "this machine has no network route to it",
    errno.EHOSTUNREACH: "this machine has no route to that host",
    errno.EHOSTDOWN: "that host is down",
    errno.ETIMEDOUT: "it did not answer in time",
    errno.EADDRNOTAVAIL: "this machine cannot reach that address",
    errno.EACCES: "this machine's rules do not let it connect there",
    errno.EPERM: "this machine's rules do not let it connect there",
}

_LOOKUP_REASONS: dict[int, str] = {
    socket.EAI_NONAME: "no such name is known",
    socket.EAI_AGAIN: "the name servers did not answer; try again later",
    socket.EAI_FAIL: "the name servers failed to answer",
}
if hasattr(socket, "EAI_NODATA"):  # glibc's "no address associated with hostname"
    _LOOKUP_REASONS[socket.EAI_NODATA] = "the name has no address"


def _find_cause(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    current: BaseException | None = exc
    for _ in range(8):  # exception chains are short; the bound guards against cycles
        if current is None:
            return None
        if isinstance(current, kind):
            return current
        current = current.__cause__ or current.__context__
    return None


def _connect_reason(exc: BaseException) -> str | None:
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        if isinstance(current, OSError) and current.errno in _CONNECT_REASONS:
            return _CONNECT_REASONS[current.errno]
        current = current.__cause__ or current.__context__
    return None


def lookup_failure(host: str, exc: BaseException) -> NetworkRequestError:
    """The error for a name that did not resolve, from what the resolver raised."""
    code = exc.errno if isinstance(exc, socket.gaierror) else None
    if isinstance(exc, UnicodeError):
        reason = "it is not a valid host name"
    else:
        reason = _LOOKUP_REASONS.get(code, "the look-up failed") if code is not None else "the look-up failed"
    return NetworkRequestError(f"could not resolve {host}: {reason}; check the host name")


def _tls_failure(host: str, error: ssl.SSLError) -> NetworkRequestError:
    if isinstance(error, ssl.SSLCertVerificationError):
        # OpenSSL's verify message is already plain English ("certificate has expired",
        # "self-signed certificate", "Hostname mismatch, certificate is not valid for 'x'.")
        detail = str(getattr(error, "verify_message", None) or "it was not accepted").rstrip(".")
        return NetworkRequestError(
            f"the certificate of {host} was refused ({detail}); the server does not prove it is {host}, "
            "so nothing was sent"
        )
    # an SSLError made outside the ssl module has no reason attribute
    reason = str(getattr(error, "reason", None) or "").replace("_", " ").lower()
    shown = f" ({reason})" if reason else ""
    return NetworkRequestError(
        f"the secure connection to {host} could not be set up{shown}; check that it serves HTTPS on that port"
    )


# What the HTTP/1.1 parser (h11, through httpcore and httpx) says, and what it means: the parser's
# words are the only thing that tells these apart, so an unknown wording falls back to plain words.
_RECEIVED = re.compile(r"received (\d+) bytes, expected (\d+)")
_CANNOT_BE_READ = "its answer cannot be read"


def _protocol_failure(host: str, said: str) -> NetworkRequestError:
    if said.startswith("Receive buffer too long"):
        return NetworkRequestError(f"{host} sent response headers larger than 100 KB; such an answer is not read")
    if said.startswith("peer closed connection without sending complete message body"):
        counts = _RECEIVED.search(said)
        shown = f" ({counts[1]} of the {counts[2]} bytes it announced)" if counts else ""
        return NetworkRequestError(
            f"{host} closed the connection before the whole response arrived{shown}; the answer is incomplete, "
            "try again later"
        )
    if "Content-Length" in said:
        return NetworkRequestError(
            f"{host} sent an invalid Content-Length header (repeated with different values, or not a number); "
            f"{_CANNOT_BE_READ}"
        )
    if "chunk" in said:
        return NetworkRequestError(
            f"{host} sent a body in malformed chunks (broken chunked transfer encoding); {_CANNOT_BE_READ}"
        )
    if "Transfer-Encoding" in said:
        return NetworkRequestError(f"{host} sent a Transfer-Encoding other than chunked; {_CANNOT_BE_READ}")
    if said.startswith(("illegal header line", "continuation line")):
        return NetworkRequestError(f"{host} sent a malformed response header; {_CANNOT_BE_READ}")
    if said.startswith("illegal status line"):
        return NetworkRequestError(f"{host} sent a malformed status line; check that it serves HTTP at that address")
    if said.startswith("Server disconnected without sending a response"):
        return NetworkRequestError(
            f"{host} closed the connection without sending an answer; check that it serves HTTP at that address"
        )
    return NetworkRequestError(f"{host} did not answer in valid HTTP; check that it serves HTTP at that address")


def translate_error(exc: BaseException, *, host: str) -> NetworkRequestError:
    """Map a foreign exception met while talking to ``host`` to a NetworkRequestError."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return NetworkRequestError(f"request to {host} timed out; try again later or raise the timeout")
    tls_error = _find_cause(exc, ssl.SSLError)
    if isinstance(tls_error, ssl.SSLError):
        return _tls_failure(host, tls_error)
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        reason = _connect_reason(exc)
        because = f": {reason}" if reason else ""
        return NetworkRequestError(
            f"could not connect to {host}{because}; check that the service is running and reachable from here"
        )
    if isinstance(exc, httpx.DecodingError):
        return NetworkRequestError(
            f"the response of {host} could not be decoded: its body does not match the compression it declares"
        )
    if isinstance(exc, httpx.RemoteProtocolError):
        return _protocol_failure(host, str(exc))
    if isinstance(exc, httpx.ProtocolError):
        return NetworkRequestError(f"the request to {host} could not be sent as valid HTTP; check its headers")
    if isinstance(exc, httpx.InvalidURL):
        return NetworkRequestError(f"the URL for {host} is malformed: {exc}")
    # What is left (a read or write cut short, a stream closed under it, …) says nothing a gem or the
    # person could act on beyond this; the foreign exception stays chained as the cause for the log.
    return NetworkRequestError(
        f"the request to {host} failed before a whole answer came back; try again later, "
        f"and if it keeps failing check that {host} is up and reachable"
    )
