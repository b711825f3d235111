"""Hostile URLs, from a gem or from a server's redirect, on the guarded HTTP path (P-NET-07, P-NET-10,
P-NET-11, P-NET-13, OD-P05).

A URL that cannot be requested is refused with words naming what is wrong with it, before any
lookup or connection. Those words never repeat a password written into the URL, never run to the
length of a 10 KB URL, and say when the URL came from a server's redirect rather than from the gem.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from urllib.parse import quote

import httpx
import pytest
from net_servers import RecordingServer

from notochord.errors import NetworkPermissionError, NetworkRequestError
from notochord.net.hosts import HostEntry, NetworkPermission
from notochord.net.policy import DenyRule, NetworkPolicy, UserNetworkRules
from notochord.net.transport import RequestLimits, check_url, guarded_request

pytestmark = pytest.mark.anyio

NAME = "api.example.test"
PUBLIC = IPv4Address("93.184.216.34")


class CountingResolver:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPv4Address | IPv6Address]:
        self.calls.append(host)
        return [PUBLIC]


def _never_connect(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"nothing may be sent, yet {request.url} was")


def _gem_policy() -> NetworkPolicy:
    permission = NetworkPermission(hosts=(HostEntry(NAME),), allow_local_network=False, reason="r")
    return NetworkPolicy(permission=permission, user_rules=UserNetworkRules())


def _local_policy(port: int) -> NetworkPolicy:
    permission = NetworkPermission(hosts=(), allow_local_network=True, reason="r")
    return NetworkPolicy(permission=permission, user_rules=UserNetworkRules.build(local_hosts=[f"127.0.0.1:{port}"]))


async def _refusal_of(url: str) -> NetworkRequestError:
    resolver = CountingResolver()
    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET", url, policy=_gem_policy(), resolver=resolver, inner=httpx.MockTransport(_never_connect)
        )
    assert resolver.calls == []
    return caught.value


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:s3cr3t-pw@{NAME}/",
        f"https://:s3cr3t-pw@{NAME}/",
        f"http://user:s3cr3t-pw@{NAME}:99999/",
        f"http://user:s3cr3t-pw@{NAME}/ path",
    ],
)
async def test_a_refused_url_never_repeats_the_password_written_into_it(url: str) -> None:
    """P-NET-10: a gem's error (shown to the person, kept in the run log) must not carry a secret,
    nor the user name, which is often a token."""
    error = await _refusal_of(url)
    assert "s3cr3t-pw" not in str(error)
    assert "***" in str(error)


async def test_a_url_with_a_user_name_is_refused_saying_to_send_credentials_in_a_header() -> None:
    error = await _refusal_of(f"http://user:s3cr3t-pw@{NAME}/")
    assert str(error) == (
        f"malformed URL 'http://***@{NAME}/': user names and passwords in URLs (user@host) are not "
        "allowed; send credentials in a header"
    )


async def test_the_words_about_a_10_kb_url_stay_short_and_name_its_length() -> None:
    url = f"http://{NAME}/" + "a" * 10_000 + " tail"
    error = await _refusal_of(url)
    assert len(str(error)) < 400
    assert f"({len(url)} characters)" in str(error)
    assert "whitespace and control characters are not allowed" in str(error)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", "malformed URL '': the URL is empty; write it in full, as https://host/path"),
        (
            f"{NAME}/v1/items",
            f"malformed URL '{NAME}/v1/items': it has no scheme; write it in full, as https://{NAME}/v1/items",
        ),
        (
            f"//{NAME}/v1",
            f"malformed URL '//{NAME}/v1': it has no scheme; write it in full, as https://{NAME}/v1",
        ),
    ],
    ids=["empty", "no-scheme", "scheme-relative"],
)
async def test_a_url_without_a_scheme_is_malformed_not_a_permission_refusal(url: str, words: str) -> None:
    """P-NET-07: nothing is refused by a rule here; the URL is incomplete, and the words say how to
    complete it."""
    error = await _refusal_of(url)
    assert str(error) == words


async def test_a_url_with_a_character_that_is_not_unicode_is_refused_in_words() -> None:
    error = await _refusal_of(f"http://{NAME}/\ud800")
    assert str(error) == (
        f"malformed URL 'http://{NAME}/\\ud800': it holds a character that is not valid Unicode (a lone "
        "surrogate); percent-encode the bytes meant"
    )


@pytest.mark.parametrize(
    "host",
    ["2130706433", "017700000001", "0x7f.1", "0x7F000001", "127.1", "localhost.", "LOCALHOST", "sub.localhost."],
)
async def test_every_spelling_of_the_local_machine_is_refused_as_local_without_a_lookup(host: str) -> None:
    """P-NET-13, P-NET-20, OD-P05: the decimal, octal and hex forms of an IPv4 address and the
    ``localhost.`` forms are the local machine; a gem without the flag never reaches them."""
    resolver = CountingResolver()
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET",
            f"HTTP://{host}:8080/",
            policy=_gem_policy(),
            resolver=resolver,
            inner=httpx.MockTransport(_never_connect),
        )
    assert caught.value.rule == DenyRule.GEM_LOCAL_NETWORK
    assert resolver.calls == []


def test_check_url_reads_an_uppercase_scheme_and_a_trailing_dot() -> None:
    checked = check_url("HTTPS://API.Example.TEST.:8443/x")
    assert (checked.scheme, checked.host, checked.port) == ("https", "api.example.test.", 8443)


async def _redirect_refusal(server: RecordingServer, location: str) -> NetworkRequestError:
    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET",
            server.url(f"/redirect?to={quote(location, safe='')}"),
            policy=_local_policy(server.port),
        )
    return caught.value


async def test_a_redirect_to_a_url_with_credentials_names_the_redirect_and_hides_the_password(
    server: RecordingServer,
) -> None:
    """P-NET-11: the gem did not write that URL; the words say the server sent it, and the hop is
    not followed."""
    error = await _redirect_refusal(server, f"http://admin:s3cr3t-pw@127.0.0.1:{server.port}/json")
    assert str(error) == (
        f"127.0.0.1 redirected to a malformed URL 'http://***@127.0.0.1:{server.port}/json': user names "
        "and passwords in URLs (user@host) are not allowed; the redirect was not followed"
    )
    assert [seen.path.split("?")[0] for seen in server.seen] == ["/redirect"]


@pytest.mark.parametrize(
    ("location", "problem"),
    [
        ("http://127.0.0.1:99999/", "the port must be a number from 1 to 65535"),
        ("http://[fe80::1%25eth0]/", "'fe80::1%25eth0' is not a valid IPv6 address"),
        ("http://a..example/", "'a..example' is not a valid host name"),
    ],
)
async def test_a_redirect_to_a_malformed_url_says_the_server_sent_it(
    server: RecordingServer, location: str, problem: str
) -> None:
    """P-NET-11."""
    error = await _redirect_refusal(server, location)
    assert str(error) == (
        f"127.0.0.1 redirected to a malformed URL {location!r}: {problem}; the redirect was not followed"
    )


@pytest.mark.parametrize("location", ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,hello"])
async def test_a_redirect_to_another_scheme_names_the_redirect(server: RecordingServer, location: str) -> None:
    """P-NET-11: the scheme rule refuses the hop, and the words say which server asked for it."""
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET", server.url(f"/redirect?to={quote(location, safe='')}"), policy=_local_policy(server.port)
        )
    assert caught.value.rule == DenyRule.SCHEME
    assert str(caught.value).startswith(f"127.0.0.1 redirected to {location!r}, refused: only http and https")


async def test_a_redirect_loop_ends_after_the_hop_limit(server: RecordingServer) -> None:
    """P-NET-11: a Location leading back to the same URL ends as too many redirects."""
    loop = server.url("/redirect?to=%23again")
    with pytest.raises(NetworkRequestError, match=r"too many redirects \(more than 5\)"):
        await guarded_request("GET", loop, policy=_local_policy(server.port), limits=RequestLimits(max_redirects=5))
    assert len(server.seen) == 6


async def test_a_relative_redirect_climbing_above_the_root_stays_on_the_same_host(server: RecordingServer) -> None:
    response = await guarded_request(
        "GET", server.url("/redirect?to=" + quote("../../../../json", safe="")), policy=_local_policy(server.port)
    )
    assert response.json() == {"ok": True}
    assert response.url == server.url("/json")


@pytest.mark.parametrize(
    "url",
    [
        f"http:user:s3cr3t-pw@{NAME}/",
        f"http:///user:s3cr3t-pw@{NAME}/",
        f"http://user:s3cr3t-pw@{NAME}\\@evil.example/",
    ],
    ids=["no-slashes", "three-slashes", "backslash"],
)
async def test_a_password_is_hidden_however_the_authority_is_spelled(url: str) -> None:
    error = await _refusal_of(url)
    assert "s3cr3t-pw" not in str(error)


async def test_a_refused_hop_says_which_host_redirected_there(server: RecordingServer) -> None:
    """P-NET-11: the gem asked for an allowed URL; the refusal of the hop says the server sent it
    elsewhere, and still names the refused host and its rule."""
    target = "http://elsewhere.example.test/x"
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET", server.url(f"/redirect?to={quote(target, safe='')}"), policy=_local_policy(server.port)
        )
    assert caught.value.rule == DenyRule.GEM_HOSTS
    assert caught.value.host == "elsewhere.example.test"
    assert str(caught.value).startswith(f"127.0.0.1 redirected to {target!r}; refused http://elsewhere.example.test:")


async def test_an_answer_with_several_locations_is_refused_naming_that() -> None:
    """P-NET-11: two Location headers leave the next hop undecided; it is not guessed."""

    def two_places(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers=[("Location", "/a"), ("Location", "https://other.example/")])

    with pytest.raises(NetworkRequestError) as caught:
        await guarded_request(
            "GET",
            f"https://{NAME}/",
            policy=_gem_policy(),
            resolver=CountingResolver(),
            inner=httpx.MockTransport(two_places),
        )
    assert str(caught.value) == (
        f"{NAME} redirected to 2 places at once (several Location headers); the redirect was not followed"
    )


@pytest.mark.parametrize(
    "url",
    [f"http://{NAME}:" + "9" * 5000 + "/", "http://" + "é" * 3000 + ".example/", "http://" + "a" * 3000 + ".example/"],
    ids=["long-port", "long-idn-host", "long-host"],
)
async def test_the_words_about_a_long_host_or_port_stay_short(url: str) -> None:
    error = await _refusal_of(url)
    assert len(str(error)) < 600


async def test_a_redirect_to_an_internationalized_host_is_checked_in_its_xn_form(server: RecordingServer) -> None:
    """P-NET-05, P-NET-11, OD-P04: the hop is matched, and refused, as the punycode name it connects to."""
    with pytest.raises(NetworkPermissionError) as caught:
        await guarded_request(
            "GET",
            server.url("/redirect?to=" + quote("http://bücher.example/", safe="")),
            policy=_local_policy(server.port),
        )
    assert caught.value.rule == DenyRule.GEM_HOSTS
    assert caught.value.host == "xn--bcher-kva.example"
