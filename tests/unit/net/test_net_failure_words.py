"""A failed look-up, connection or handshake is reported in plain words, never in the OS's or OpenSSL's
(P-NET-10, OD-P05).

A gem's ``ctx.http.fetch`` and the console show these messages to a gem author or the person: each
names the host, the likely reason in words one can act on, and what to try, without ``[Errno 111]``,
``[SSL: …]`` or a library's phrasing, and keeps the foreign exception as its cause for the log.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
from ipaddress import IPv4Address, IPv6Address

import httpx
import pytest
from net_servers import RecordingServer, ServerCertificates

from notochord.errors import NetworkRequestError
from notochord.net.hosts import HostEntry, NetworkPermission
from notochord.net.policy import NetworkPolicy, UserNetworkRules
from notochord.net.transport import GuardedClient, Resolver, guarded_request

pytestmark = pytest.mark.anyio

NAME = "api.example.test"
PUBLIC = IPv4Address("93.184.216.34")
LOOPBACK = IPv4Address("127.0.0.1")
FOREIGN_WORDING = re.compile(r"Errno|\[SSL|_ssl\.c|Error\b|errno|All connection attempts|Name or service")


def _allowing(host: str, *, local_port: int | None = None) -> NetworkPolicy:
    permission = NetworkPermission(hosts=(HostEntry(host),), allow_local_network=local_port is not None, reason="r")
    local = [f"127.0.0.1:{local_port}"] if local_port is not None else []
    return NetworkPolicy(permission=permission, user_rules=UserNetworkRules.build(local_hosts=local))


def _answering(address: IPv4Address | IPv6Address) -> Resolver:
    async def resolve(_host: str, _port: int) -> list[IPv4Address | IPv6Address]:
        return [address]

    return resolve


def _failing_lookup(error: BaseException) -> Resolver:
    async def resolve(_host: str, _port: int) -> list[IPv4Address | IPv6Address]:
        raise error

    return resolve


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


async def _exchange_failing_with(error: BaseException) -> NetworkRequestError:
    """What a request to ``NAME`` (a public address, allowed) raises when its exchange raises ``error``."""

    def fail(_request: httpx.Request) -> httpx.Response:
        raise error

    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET",
            f"https://{NAME}/",
            policy=_allowing(NAME),
            resolver=_answering(PUBLIC),
            inner=httpx.MockTransport(fail),
        )
    return caught.value


def _assert_plain(failure: NetworkRequestError) -> None:
    assert not FOREIGN_WORDING.search(str(failure)), str(failure)
    assert failure.__cause__ is not None


async def test_a_refused_connection_says_nothing_accepts_connections_there() -> None:
    port = _free_port()
    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET", f"http://{NAME}:{port}/", policy=_allowing(NAME, local_port=port), resolver=_answering(LOOPBACK)
        )
    assert str(caught.value) == (
        f"could not connect to {NAME}: nothing there accepts connections on that port; "
        "check that the service is running and reachable from here"
    )
    _assert_plain(caught.value)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (errno.ENETUNREACH, "this machine has no network route to it"),
        (errno.EHOSTUNREACH, "this machine has no route to that host"),
        (errno.ECONNRESET, "the connection was reset while it was being made"),
        (None, None),
    ],
)
async def test_a_failed_connection_names_the_operating_systems_reason_in_words(
    code: int | None, reason: str | None
) -> None:
    """The reason is read from the error number under httpx's wrapping; an unknown one is left out."""
    cause = OSError(code, "the system's own words") if code is not None else OSError("the system's own words")
    wrapped = httpx.ConnectError("All connection attempts failed")
    wrapped.__cause__ = cause
    failure = await _exchange_failing_with(wrapped)
    because = f": {reason}" if reason else ""
    assert str(failure) == (
        f"could not connect to {NAME}{because}; check that the service is running and reachable from here"
    )
    assert "system's own words" not in str(failure)
    _assert_plain(failure)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "no such name is known"),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), "the name servers did not answer"),
        (UnicodeError("label too long"), "it is not a valid host name"),
        (OSError("resolver exploded"), "the look-up failed"),
    ],
    ids=["unknown-name", "no-answer", "not-a-name", "other"],
)
async def test_a_name_that_does_not_resolve_says_why_in_words(error: BaseException, reason: str) -> None:
    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request("GET", f"https://{NAME}/", policy=_allowing(NAME), resolver=_failing_lookup(error))
    assert str(caught.value).startswith(f"could not resolve {NAME}: {reason}")
    assert str(caught.value).endswith("check the host name")
    _assert_plain(caught.value)


async def test_a_certificate_for_another_name_is_refused_with_openssls_reason_in_words(
    tls_server: RecordingServer, tls_certificates: ServerCertificates
) -> None:
    """The certificate names api.example.test; asked for other.example.test, nothing is sent."""
    other = "other.example.test"
    trust = ssl.create_default_context(cafile=tls_certificates.ca_file)
    rules = _allowing(other, local_port=tls_server.port)
    async with GuardedClient(policy=rules, resolver=_answering(LOOPBACK), verify=trust) as client:
        with pytest.raises(NetworkRequestError) as caught:
            await client.get(f"https://{other}:{tls_server.port}/json")
    message = str(caught.value)
    assert message.startswith(f"the certificate of {other} was refused (Hostname mismatch")
    assert message.endswith(f"the server does not prove it is {other}, so nothing was sent")
    _assert_plain(caught.value)
    assert tls_server.seen == []


async def test_https_to_a_port_that_speaks_plain_http_says_the_secure_connection_failed(
    server: RecordingServer,
) -> None:
    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET",
            f"https://{NAME}:{server.port}/",
            policy=_allowing(NAME, local_port=server.port),
            resolver=_answering(LOOPBACK),
        )
    message = str(caught.value)
    assert message.startswith(f"the secure connection to {NAME} could not be set up")
    assert message.endswith("check that it serves HTTPS on that port")
    _assert_plain(caught.value)


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            httpx.RemoteProtocolError("Server disconnected without sending a response."),
            f"{NAME} closed the connection without sending an answer; check that it serves HTTP at that address",
        ),
        (
            httpx.RemoteProtocolError("Received server _SWITCH_UPGRADE event without a pending proposal"),
            f"{NAME} did not answer in valid HTTP; check that it serves HTTP at that address",
        ),
        (
            httpx.DecodingError("Error -3 while decompressing data: incorrect header check"),
            f"the response of {NAME} could not be decoded: its body does not match the compression it declares",
        ),
        (
            httpx.LocalProtocolError("Illegal header value"),
            f"the request to {NAME} could not be sent as valid HTTP; check its headers",
        ),
    ],
    ids=["remote-closed", "remote-protocol", "decoding", "local-protocol"],
)
async def test_a_broken_exchange_is_told_in_words(error: BaseException, words: str) -> None:
    failure = await _exchange_failing_with(error)
    assert str(failure) == words
    assert failure.__cause__ is error
