"""The guarded HTTP path against real servers on 127.0.0.1 (P-NET-07, P-NET-11, P-NET-16…22, OD-P05).

Names such as ``api.example.test`` are answered by an injected resolver; public addresses are only
ever handed to a recording in-memory transport, never connected to.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from ipaddress import IPv4Address, IPv6Address
from urllib.parse import quote

import anyio
import httpx
import pytest
from net_servers import RecordingServer, ServerCertificates

from notochord.errors import NetworkPermissionError, NetworkRequestError
from notochord.net.hosts import HostEntry, NetworkPermission
from notochord.net.policy import DenyRule, NetworkPolicy, UserNetworkRules
from notochord.net.transport import (
    GuardedClient,
    GuardedResponse,
    RequestLimits,
    check_url,
    guarded_request,
    system_resolver,
)

pytestmark = pytest.mark.anyio

IPAddress = IPv4Address | IPv6Address
PUBLIC = IPv4Address("93.184.216.34")
LOOPBACK = IPv4Address("127.0.0.1")
NAME = "api.example.test"


class FakeResolver:
    """Answers from a table and records every lookup; ``answers`` gives one answer per lookup."""

    def __init__(
        self,
        table: Mapping[str, Sequence[IPAddress]],
        *,
        answers: Mapping[str, Sequence[Sequence[IPAddress]]] | None = None,
    ) -> None:
        self._table = table
        self._answers = answers or {}
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append((host, port))
        if host in self._answers:
            answers = self._answers[host]
            lookups = sum(1 for h, _ in self.calls if h == host)
            return list(answers[min(lookups, len(answers)) - 1])
        if host not in self._table:
            raise OSError(f"no such name: {host}")
        return list(self._table[host])


class Recorder:
    """An in-memory inner transport that records what it was asked to connect to."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond or (lambda _request: httpx.Response(200, text="ok"))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._respond(request)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def local_gem(*hosts: str) -> NetworkPermission:
    return NetworkPermission(hosts=tuple(HostEntry(h) for h in hosts), allow_local_network=True, reason="r")


def plain_gem(*entries: HostEntry) -> NetworkPermission:
    return NetworkPermission(hosts=entries, allow_local_network=False, reason="r")


def policy(permission: NetworkPermission | None, *, local: list[str] | None = None) -> NetworkPolicy:
    return NetworkPolicy(permission=permission, user_rules=UserNetworkRules.build(local_hosts=local or []))


async def test_allowed_local_target_is_reached(server: RecordingServer) -> None:
    """P-NET-16, P-NET-17, P-NET-21: gem allowLocalNetwork + user lists 127.0.0.1:<port> → reached."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    async with GuardedClient(policy=rules) as client:
        response = await client.get(server.url("/"))
    assert response.status == 200
    assert response.text() == f"hello from {server.port}"
    assert [seen.path for seen in server.seen] == ["/"]


async def test_local_target_not_listed_by_the_user_is_refused_before_connecting(
    server: RecordingServer,
) -> None:
    """P-NET-16, P-NET-19: without the user's list entry nothing reaches the server."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port + 1}"])
    async with GuardedClient(policy=rules) as client:
        with pytest.raises(NetworkPermissionError) as caught:
            await client.get(server.url("/"))
    assert caught.value.rule == DenyRule.USER_LOCAL_LIST
    assert caught.value.host == "127.0.0.1"
    assert server.seen == []


async def test_gem_without_allow_local_network_never_reaches_a_listed_local_address(
    server: RecordingServer,
) -> None:
    """P-NET-20: the user's list does not help a gem that did not declare the flag."""
    rules = policy(plain_gem(HostEntry("api.example.com")), local=[f"127.0.0.1:{server.port}"])
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", server.url("/"), policy=rules)
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert server.seen == []


async def test_resource_download_never_reaches_a_listed_local_address(server: RecordingServer) -> None:
    """P-NET-22, P-RES-07."""
    rules = NetworkPolicy.for_resources(user_rules=UserNetworkRules.build(local_hosts=[f"127.0.0.1:{server.port}"]))
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", server.url("/"), policy=rules)
    assert caught.value.rule == DenyRule.RESOURCES_NEVER_LOCAL
    assert server.seen == []


async def test_redirect_to_an_unlisted_local_port_is_refused_at_the_hop(
    server: RecordingServer, other_server: RecordingServer
) -> None:
    """P-NET-11: the hop to 127.0.0.1:<other port> is checked as a new request and refused."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    target = other_server.url("/secret")
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", server.url(f"/redirect?to={quote(target, safe='')}"), policy=rules)
    assert caught.value.rule == DenyRule.USER_LOCAL_LIST
    assert [seen.path.split("?")[0] for seen in server.seen] == ["/redirect"]
    assert other_server.seen == []


async def test_redirect_from_an_allowed_external_host_to_loopback_is_refused(server: RecordingServer) -> None:
    """P-NET-11, P-NET-20: an allowed external host cannot bounce a gem into the local network."""
    recorder = Recorder(lambda _r: httpx.Response(302, headers={"Location": server.url("/admin")}))
    rules = policy(plain_gem(HostEntry(NAME)))
    resolver = FakeResolver({NAME: [PUBLIC]})
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", f"https://{NAME}/start", policy=rules, resolver=resolver, inner=recorder.transport)
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert len(recorder.requests) == 1
    assert server.seen == []


async def test_allowed_redirect_is_followed_and_reports_the_final_url(
    server: RecordingServer, other_server: RecordingServer
) -> None:
    """P-NET-11: a hop the policy allows is followed."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}", f"127.0.0.1:{other_server.port}"])
    target = other_server.url("/json")
    response = await guarded_request("GET", server.url(f"/redirect?to={quote(target, safe='')}"), policy=rules)
    assert response.status == 200
    assert response.json() == {"ok": True}
    assert response.url == target
    assert [seen.path for seen in other_server.seen] == ["/json"]


@pytest.mark.parametrize("location", ["ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/"])
async def test_redirect_to_another_scheme_is_refused(server: RecordingServer, location: str) -> None:
    """P-NET-11: the scheme must stay http or https on every hop."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", server.url(f"/redirect?to={quote(location, safe='')}"), policy=rules)
    assert caught.value.rule == DenyRule.SCHEME


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        (IPv4Address("10.0.0.1"), DenyRule.GEM_LOCAL_NETWORK),
        (IPv6Address("::ffff:127.0.0.1"), DenyRule.GEM_LOCAL_NETWORK),
        (IPv4Address("169.254.169.254"), DenyRule.GEM_LOCAL_NETWORK),
        (IPv6Address("64:ff9b::7f00:1"), DenyRule.GEM_LOCAL_NETWORK),
    ],
)
async def test_listed_name_resolving_to_a_local_address_is_refused(
    server: RecordingServer, address: IPAddress, rule: DenyRule
) -> None:
    """P-NET-15, OD-P05: a listed host whose name resolves to a local address is local."""
    rules = policy(plain_gem(HostEntry(NAME, server.port)))
    recorder = Recorder()
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET",
            server.url("/", host=NAME),
            policy=rules,
            resolver=FakeResolver({NAME: [address]}),
            inner=recorder.transport,
        )
    assert caught.value.rule == rule
    assert recorder.requests == []
    assert server.seen == []


async def test_name_resolving_to_mapped_loopback_never_reaches_the_real_server(
    server: RecordingServer,
) -> None:
    """OD-P05: ::ffff:127.0.0.1 is loopback; the real server on 127.0.0.1 sees nothing."""
    rules = policy(plain_gem(HostEntry(NAME, server.port)))
    resolver = FakeResolver({NAME: [IPv6Address("::ffff:127.0.0.1")]})
    with pytest.raises(NetworkPermissionError):
        await guarded_request("GET", server.url("/", host=NAME), policy=rules, resolver=resolver)
    assert server.seen == []


async def test_dns_answer_mixing_public_and_local_addresses_never_connects_to_the_local_one(
    server: RecordingServer,
) -> None:
    """OD-P05: any local address in the answer makes the request local."""
    rules = policy(plain_gem(HostEntry(NAME, server.port)))
    resolver = FakeResolver({NAME: [PUBLIC, LOOPBACK]})
    recorder = Recorder()
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET", server.url("/", host=NAME), policy=rules, resolver=resolver, inner=recorder.transport
        )
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert recorder.requests == []
    assert server.seen == []


async def test_dns_rebinding_between_hops_is_caught_by_resolving_again(server: RecordingServer) -> None:
    """OD-P05, P-NET-11: the name is resolved again on the next hop; the local answer is refused."""
    resolver = FakeResolver({}, answers={NAME: [[PUBLIC], [LOOPBACK]]})
    recorder = Recorder(lambda _r: httpx.Response(302, headers={"Location": f"http://{NAME}:{server.port}/"}))
    rules = policy(plain_gem(HostEntry(NAME), HostEntry(NAME, server.port)))
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request("GET", f"https://{NAME}/", policy=rules, resolver=resolver, inner=recorder.transport)
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert [r.url.host for r in recorder.requests] == [str(PUBLIC)]
    assert resolver.calls == [(NAME, 443), (NAME, server.port)]
    assert server.seen == []


async def test_host_header_keeps_the_name_when_connecting_by_resolved_address(
    server: RecordingServer,
) -> None:
    """OD-P05: the connection goes to the checked address while the Host header names the host."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    resolver = FakeResolver({NAME: [LOOPBACK]})
    response = await guarded_request("GET", server.url("/", host=NAME), policy=rules, resolver=resolver)
    assert response.status == 200
    assert server.seen[0].headers["host"] == f"{NAME}:{server.port}"
    assert response.url == f"http://{NAME}:{server.port}/"


async def test_https_keeps_the_name_for_sni_and_pins_the_checked_address() -> None:
    """The TLS name (sni_hostname) and Host stay the name; the URL host is the checked address."""
    recorder = Recorder()
    rules = policy(plain_gem(HostEntry(NAME)))
    await guarded_request(
        "GET",
        f"https://{NAME}/v1",
        policy=rules,
        resolver=FakeResolver({NAME: [PUBLIC]}),
        inner=recorder.transport,
    )
    (sent,) = recorder.requests
    assert sent.url.host == str(PUBLIC)
    assert sent.url.scheme == "https"
    assert sent.extensions["sni_hostname"] == NAME
    assert sent.headers["host"] == NAME


async def test_only_addresses_the_user_listed_are_connected_to() -> None:
    """OD-P03: a name answered with an unlisted and a listed local address connects to the listed one."""
    recorder = Recorder()
    rules = policy(local_gem(), local=["127.0.0.1:8080"])
    resolver = FakeResolver({NAME: [IPv4Address("127.0.0.2"), LOOPBACK]})
    await guarded_request("GET", f"http://{NAME}:8080/", policy=rules, resolver=resolver, inner=recorder.transport)
    assert [r.url.host for r in recorder.requests] == ["127.0.0.1"]


async def test_a_refused_name_is_never_looked_up() -> None:
    """P-NET-07: refused before it is sent, and before DNS could carry it anywhere."""
    resolver = FakeResolver({})
    with pytest.raises(NetworkPermissionError):
        await guarded_request(
            "GET",
            "https://secret-data.attacker.test/",
            policy=policy(plain_gem(HostEntry(NAME))),
            resolver=resolver,
        )
    assert resolver.calls == []


async def test_caller_cannot_choose_the_host_header() -> None:
    rules = policy(plain_gem(HostEntry(NAME)))
    with pytest.raises(NetworkRequestError):
        await guarded_request(
            "GET",
            f"https://{NAME}/",
            policy=rules,
            headers={"Host": "internal.example"},
            resolver=FakeResolver({NAME: [PUBLIC]}),
            inner=Recorder().transport,
        )


@pytest.mark.parametrize("length_header", ["1", "0"], ids=["with-content-length", "streamed"])
async def test_response_over_the_size_bound_is_refused(server: RecordingServer, length_header: str) -> None:
    """A response larger than max_response_bytes fails, whether declared or streamed."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    limits = RequestLimits(max_response_bytes=10_000)
    with pytest.raises(NetworkRequestError, match="limit of 10000 bytes"):
        await guarded_request("GET", server.url(f"/big?n=50000&length={length_header}"), policy=rules, limits=limits)
    small = await guarded_request("GET", server.url("/big?n=10000&length=0"), policy=rules, limits=limits)
    assert small.body == b"x" * 10_000


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1\\@api.example.test/",
        "http://api.example.test\\x/",
        "http://user@api.example.test/",
        "http://user:pw@api.example.test/",
        "http://api.example.test/a\x00b",
        "http://api.example.test/\r\nX-Injected: 1",
        "http://api.example.test /",
        "http:///path",
        "http://:80/",
        "http://api.example.test:0/",
        "http://api.example.test:99999/",
        "http://api%2eexample.test/",
        "http://[fe80::1%25eth0]/",
        "http://example.0x10/",
        "http://1.2.3.4.5/",
        "not a url",
    ],
)
async def test_malformed_urls_are_refused_without_a_lookup(url: str) -> None:
    resolver = FakeResolver({NAME: [PUBLIC]})
    recorder = Recorder()
    with pytest.raises(NetworkRequestError):
        await guarded_request(
            "GET", url, policy=policy(plain_gem(HostEntry(NAME))), resolver=resolver, inner=recorder.transport
        )
    assert resolver.calls == []
    assert recorder.requests == []


def test_check_url_normalizes_case_and_idna() -> None:
    """OD-P04: request hosts are IDNA-encoded and lowercased before matching."""
    checked = check_url("HTTPS://Bücher.Example/")
    assert (checked.scheme, checked.host, checked.port) == ("https", "xn--bcher-kva.example", 443)


async def test_inet_aton_spellings_of_loopback_are_local(server: RecordingServer) -> None:
    """OD-P05: 0x7f.1 is 127.0.0.1; it is refused as local, never resolved as a name."""
    resolver = FakeResolver({})
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET",
            f"http://0x7f.1:{server.port}/",
            policy=policy(plain_gem(HostEntry(NAME))),
            resolver=resolver,
        )
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert resolver.calls == []
    assert server.seen == []


async def test_too_many_redirects_fail() -> None:
    recorder = Recorder(lambda r: httpx.Response(302, headers={"Location": str(r.url.copy_with(host=NAME))}))
    limits = RequestLimits(max_redirects=3)
    with pytest.raises(NetworkRequestError, match="too many redirects"):
        await guarded_request(
            "GET",
            f"https://{NAME}/",
            policy=policy(plain_gem(HostEntry(NAME))),
            limits=limits,
            resolver=FakeResolver({NAME: [PUBLIC]}),
            inner=recorder.transport,
        )
    assert len(recorder.requests) == 4


async def test_see_other_turns_a_post_into_a_get_without_body(server: RecordingServer) -> None:
    rules = policy(local_gem(), local=[f"127.0.0.1:{server.port}"])
    target = quote(server.url("/json"), safe="")
    response = await guarded_request(
        "POST", server.url(f"/redirect?status=303&to={target}"), policy=rules, content=b'{"a": 1}'
    )
    assert response.json() == {"ok": True}
    assert [seen.method for seen in server.seen] == ["POST", "GET"]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield int(listener.getsockname()[1])
    listener.close()


async def test_a_silent_server_times_out_as_a_request_error(silent_port: int) -> None:
    rules = policy(local_gem(), local=[f"127.0.0.1:{silent_port}"])
    limits = RequestLimits(timeout=0.3)
    with pytest.raises(NetworkRequestError, match="timed out"):
        await guarded_request("GET", f"http://127.0.0.1:{silent_port}/", policy=rules, limits=limits)


async def test_connection_refused_is_a_request_error() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    rules = policy(local_gem(), local=[f"127.0.0.1:{port}"])
    with pytest.raises(NetworkRequestError, match="could not connect"):
        await guarded_request("GET", f"http://127.0.0.1:{port}/", policy=rules)


def _foreign_exceptions() -> list[BaseException]:
    request = httpx.Request("GET", "https://api.example.test/")
    found: list[BaseException] = []
    pending: list[type[BaseException]] = [
        httpx.HTTPError,
        httpx.StreamError,
        httpx.InvalidURL,
        httpx.CookieConflict,
    ]
    seen: set[type[BaseException]] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if cls is httpx.HTTPStatusError:
            found.append(cls("boom", request=request, response=httpx.Response(500, request=request)))
        else:
            try:
                found.append(cls("boom"))
            except TypeError:
                found.append(cls())
    found += [OSError("boom"), ssl.SSLError("boom"), TimeoutError(), ConnectionResetError("boom")]
    return found


async def _failure(error: BaseException) -> NetworkRequestError:
    """What a gem's request to ``NAME`` raises when its connection raises ``error``."""

    def fail(_request: httpx.Request) -> httpx.Response:
        raise error

    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET",
            f"https://{NAME}/",
            policy=policy(plain_gem(HostEntry(NAME))),
            resolver=FakeResolver({NAME: [PUBLIC]}),
            inner=Recorder(fail).transport,
        )
    return caught.value


@pytest.mark.parametrize("error", _foreign_exceptions(), ids=lambda e: type(e).__name__)
async def test_every_foreign_exception_is_translated(error: BaseException) -> None:
    """STYLE 5: no httpx, socket or ssl exception escapes the guarded path."""
    assert (await _failure(error)).code == "E_NET_REQUEST"


@pytest.mark.parametrize("error", _foreign_exceptions(), ids=lambda e: type(e).__name__)
async def test_no_failed_request_names_an_exception_class_and_each_keeps_its_cause(error: BaseException) -> None:
    """P-NET-10: what a gem's ``ctx.http.fetch`` reports reads as words, not as Python's or httpx's
    class names; the original stays chained for the log."""
    failure = await _failure(error)
    assert type(error).__name__ not in str(failure)
    assert failure.__cause__ is error


@pytest.mark.parametrize(
    "error",
    [
        httpx.ReadError("boom"),
        httpx.WriteError("boom"),
        httpx.CloseError("boom"),
        httpx.ProxyError("boom"),
        httpx.StreamConsumed(),
        OSError("boom"),
        UnicodeError("boom"),
        anyio.BrokenResourceError(),
        anyio.EndOfStream(),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_request_failing_in_another_way_says_plainly_what_failed_and_what_to_do(error: BaseException) -> None:
    """P-NET-10: the request to that host failed, in plain words and with what to do, and nothing of
    the foreign exception's class or wording."""
    failure = await _failure(error)
    assert str(failure) == (
        f"the request to {NAME} failed before a whole answer came back; try again later, "
        f"and if it keeps failing check that {NAME} is up and reachable"
    )
    assert failure.__cause__ is error


async def test_closing_connections_that_fail_to_close_says_so_without_naming_a_request() -> None:
    """P-NET-10: there is no request and no host to name when closing fails, nor a class name."""
    error = OSError("boom")

    class Unclosable(httpx.MockTransport):
        async def aclose(self) -> None:
            raise error

    client = GuardedClient(policy=policy(plain_gem(HostEntry(NAME))), inner=Unclosable(Recorder()))
    with pytest.raises(NetworkRequestError) as caught:
        await client.aclose()
    assert str(caught.value) == (
        "closing the client's open connections failed; the requests already made are not affected, "
        "and the connections close when the process ends"
    )
    assert caught.value.__cause__ is error


async def test_a_failing_resolver_is_a_request_error() -> None:
    with pytest.raises(NetworkRequestError, match="could not resolve"):
        await guarded_request(
            "GET", f"https://{NAME}/", policy=policy(plain_gem(HostEntry(NAME))), resolver=FakeResolver({})
        )


async def test_system_resolver_answers_localhost_names_without_a_lookup() -> None:
    assert await system_resolver("app.localhost", 80) == [LOOPBACK, IPv6Address("::1")]


def test_response_model_decodes_text_and_json() -> None:
    body = json.dumps({"name": "Zoë"}, ensure_ascii=False).encode("latin-1")
    response = GuardedResponse(
        status=200,
        headers=(("content-type", "application/json; charset=ISO-8859-1"),),
        body=body,
        url="https://x/",
    )
    assert response.text() == '{"name": "Zoë"}'
    assert response.json() == {"name": "Zoë"}
    assert response.header("Content-Type") == "application/json; charset=ISO-8859-1"
    with pytest.raises(NetworkRequestError):
        GuardedResponse(status=200, headers=(), body=b"<html>", url="https://x/").json()


async def test_tls_verifies_the_certificate_for_the_name_while_connecting_to_the_address(
    tls_server: RecordingServer, tls_certificates: ServerCertificates
) -> None:
    """OD-P05: connected to 127.0.0.1, TLS still sends and verifies the name (SNI, certificate)."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{tls_server.port}"])
    trust = ssl.create_default_context(cafile=tls_certificates.ca_file)
    async with GuardedClient(policy=rules, resolver=FakeResolver({NAME: [LOOPBACK]}), verify=trust) as client:
        response = await client.get(f"https://{NAME}:{tls_server.port}/json")
    assert response.json() == {"ok": True}
    assert tls_server.seen[0].headers["host"] == f"{NAME}:{tls_server.port}"


async def test_tls_refuses_a_certificate_that_does_not_name_the_requested_host(
    tls_server: RecordingServer, tls_certificates: ServerCertificates
) -> None:
    """The certificate is checked against the requested name, not the address connected to."""
    rules = policy(local_gem(), local=[f"127.0.0.1:{tls_server.port}"])
    trust = ssl.create_default_context(cafile=tls_certificates.ca_file)
    resolver = FakeResolver({"other.example.test": [LOOPBACK]})
    async with GuardedClient(policy=rules, resolver=resolver, verify=trust) as client:
        with pytest.raises(NetworkRequestError, match="certificate"):
            await client.get(f"https://other.example.test:{tls_server.port}/json")
    assert tls_server.seen == []


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("GET\r\nX", None),
        ("GET", {"X-Test": "a\r\nInjected: 1"}),
        ("GET", {"Bad Name": "x"}),
        ("GET", {"X-Test": "emoji \U0001f600"}),
        ("GET", {"Transfer-Encoding": "chunked"}),
    ],
)
async def test_malformed_methods_and_headers_are_refused_before_sending(
    method: str, headers: dict[str, str] | None
) -> None:
    recorder = Recorder()
    with pytest.raises(NetworkRequestError):
        await guarded_request(
            method,
            f"https://{NAME}/",
            policy=policy(plain_gem(HostEntry(NAME))),
            headers=headers,
            resolver=FakeResolver({NAME: [PUBLIC]}),
            inner=recorder.transport,
        )
    assert recorder.requests == []
