"""Request scenarios: gem hosts × user rules × redirect chains × DNS answers, through ``ctx.http``.

Every scenario is sent through the real path a gem's request takes: the gem's ``permissions.network``
parsed from its manifest, the user's rules validated as the store validates them, :class:`HttpApi`
(``ctx.http``) and :class:`~notochord.net.transport.GuardedClient`. Names resolve through a fake
resolver that maps test names to addresses and records every lookup; nothing is looked up for real.

The transport that would open connections is a *recording connector*: it sees every request the
guard lets through (with the address it would connect to) and answers it from the scenario's
redirect table. A scenario states how many hops the connector must see, so a refused hop is proved
never to have opened a connection: the connector saw exactly the hops before it. A scenario also
states which names were looked up, so a name refused by the gem's hosts or the user's lists is
proved never to have reached the resolver.

The scenarios whose allowed hops all go to the local machine also run against real servers on
127.0.0.1 (``{port}`` and ``{other}`` stand for their ports), and the servers' own records show the
same hops. Covers P-NET-04, P-NET-07, P-NET-10, P-NET-11, P-NET-12, P-NET-14, P-NET-15, P-NET-16,
P-NET-17, P-NET-19, P-NET-20, P-NET-21, OD-P01…P05; and P-RES-03 at the end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, ip_address
from urllib.parse import urlsplit

import httpx
import pytest
from gemnet_servers import RouteServer
from gemnet_support import gem_manifest

from notochord.errors import NetworkPermissionError, NetworkRequestError
from notochord.gems.api.http import HttpApi, HttpResponse
from notochord.gems.context import CAPABILITIES, GemContext
from notochord.gems.manifest import ResourceSpec, parse_manifest
from notochord.net.policy import DenyRule, ExternalMode
from notochord.net.user_rules import StoredNetworkRules

pytestmark = pytest.mark.anyio

IPAddress = IPv4Address | IPv6Address

PUBLIC = "93.184.215.14"
PUBLIC_2 = "151.101.1.69"
PUBLIC_3 = "151.101.65.69"
PUBLIC_V6 = "2606:4700::6810:84e5"

DNS: dict[str, tuple[str, ...]] = {
    "localhost": ("127.0.0.1", "::1"),
    "api.example.test": (PUBLIC,),
    "cdn.example.test": (PUBLIC_2,),
    "other.example.test": (PUBLIC_3,),
    "xn--mnchen-3ya.test": (PUBLIC,),
    "dual.example.test": (PUBLIC, PUBLIC_V6),
    "v6only.example.test": (PUBLIC_V6,),
    "mixed.example.test": (PUBLIC, "10.0.0.7"),
    "mixed-loop.example.test": ("127.0.0.1", PUBLIC),
    "wiki.corp.test": ("10.0.0.7",),
    "wiki2.corp.test": ("10.0.0.8", "10.0.0.7"),
    "dev.example.test": ("127.0.0.1",),
    "mapped.example.test": ("::ffff:127.0.0.1",),
    "mapped10.example.test": ("::ffff:10.0.0.1",),
    "nat64.example.test": ("64:ff9b::a00:1",),
    "nat64-public.example.test": ("64:ff9b::808:808",),
    "sixtofour.example.test": ("2002:c0a8:101::1",),
    "meta.example.test": ("169.254.169.254",),
    "ula.example.test": ("fd00::1",),
    "cgnat.example.test": ("100.64.0.1",),
    "zero.example.test": ("0.0.0.0",),
    "teredo.example.test": ("2001:0:4136:e378:8000:63bf:3fff:fdd2",),
}
"""What each test name resolves to. A name missing here does not resolve."""


class FakeResolver:
    """Answers from :data:`DNS`, as DNS would (case and one trailing dot do not matter); records lookups."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        name = host.lower().removesuffix(".")
        if name not in DNS:
            raise NetworkRequestError(f"could not resolve {host}: unknown name")
        return [ip_address(a) for a in DNS[name]]


class RecordingConnector:
    """The connector: records every request the guard let through and answers from the redirects."""

    def __init__(self, redirects: Mapping[str, str]) -> None:
        self.redirects = redirects
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = f"{request.headers['host']}{request.url.raw_path.decode('ascii')}"
        location = self.redirects.get(key)
        if location is not None:
            return httpx.Response(302, headers={"Location": location})
        return httpx.Response(200, text=f"reached {key}")

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    @property
    def connected_to(self) -> list[str]:
        return [request.url.host for request in self.requests]


REQUEST_ERROR = "request-error"


@dataclass(frozen=True)
class Scenario:
    """One request: who asks (gem), what the user allows, where it goes, and what must happen."""

    id: str
    url: str
    hosts: tuple[str, ...] | None = ("api.example.test",)
    """The gem's ``permissions.network.hosts``; None: the gem has no network section."""
    allow_local: bool = False
    mode: ExternalMode = "open"
    external: tuple[str, ...] = ()
    local: tuple[str, ...] = ()
    redirects: Mapping[str, str] = field(default_factory=dict)
    """``<Host header><path>`` → Location of a redirect answered there."""
    refused: DenyRule | str | None = None
    """The refusing rule, :data:`REQUEST_ERROR`, or None when the request succeeds."""
    hops: int = 1
    """How many requests reach the connector (or the real servers)."""
    lookups: tuple[str, ...] = ()
    """The names sent to the resolver, in order."""
    via: tuple[str, ...] = ()
    """When given, the addresses the connector was asked to connect to, in order."""
    real: bool = False
    """Also run against real servers on 127.0.0.1."""

    def fill(self, port: int, other: int) -> Scenario:
        def sub(text: str) -> str:
            return text.replace("{port}", str(port)).replace("{other}", str(other))

        return dataclasses.replace(
            self,
            url=sub(self.url),
            hosts=None if self.hosts is None else tuple(sub(h) for h in self.hosts),
            external=tuple(sub(e) for e in self.external),
            local=tuple(sub(e) for e in self.local),
            redirects={sub(k): sub(v) for k, v in self.redirects.items()},
        )


API = "https://api.example.test"
LOCAL_ONLY: tuple[str, ...] = ()

SCENARIOS: list[Scenario] = [
    # -- gem hosts × user rules, one request to an external host (P-NET-07, P-NET-12, P-NET-14) --
    Scenario("listed-host-user-open", f"{API}/v1", lookups=("api.example.test",), via=(PUBLIC,)),
    Scenario(
        "listed-host-on-user-allowlist",
        f"{API}/v1",
        mode="allowlist",
        external=("api.example.test",),
        lookups=("api.example.test",),
    ),
    Scenario(
        "listed-host-on-user-allowlist-wildcard",
        f"{API}/v1",
        mode="allowlist",
        external=("*.example.test",),
        lookups=("api.example.test",),
    ),
    Scenario(
        "listed-host-missing-from-user-allowlist",
        f"{API}/v1",
        mode="allowlist",
        external=("cdn.example.test",),
        refused=DenyRule.USER_ALLOWLIST,
        hops=0,
    ),
    Scenario(
        "listed-host-on-user-blocklist",
        f"{API}/v1",
        mode="blocklist",
        external=("api.example.test",),
        refused=DenyRule.USER_BLOCKLIST,
        hops=0,
    ),
    Scenario(
        "listed-host-blocklisted-by-its-address",
        f"{API}/v1",
        mode="blocklist",
        external=(PUBLIC,),
        refused=DenyRule.USER_BLOCKLIST,
        hops=0,
        lookups=("api.example.test",),
    ),
    Scenario(
        "listed-host-under-blocklisted-wildcard",
        f"{API}/v1",
        mode="blocklist",
        external=("*.example.test",),
        refused=DenyRule.USER_BLOCKLIST,
        hops=0,
    ),
    Scenario(
        "listed-host-blocklist-names-another",
        f"{API}/v1",
        mode="blocklist",
        external=("cdn.example.test",),
        lookups=("api.example.test",),
    ),
    Scenario("unlisted-host", "https://cdn.example.test/", refused=DenyRule.GEM_HOSTS, hops=0),
    Scenario(
        "unlisted-host-even-on-user-allowlist",
        "https://cdn.example.test/",
        mode="allowlist",
        external=("cdn.example.test",),
        refused=DenyRule.GEM_HOSTS,
        hops=0,
    ),
    Scenario(
        "gem-without-network-section",
        f"{API}/v1",
        hosts=None,
        refused=DenyRule.NO_NETWORK_PERMISSION,
        hops=0,
    ),
    Scenario(
        "port-entry-does-not-cover-default-port",
        f"{API}/v1",
        hosts=("api.example.test:8443",),
        refused=DenyRule.GEM_HOSTS,
        hops=0,
    ),
    Scenario(
        "port-entry-covers-its-port",
        f"{API}:8443/v1",
        hosts=("api.example.test:8443",),
        lookups=("api.example.test",),
    ),
    Scenario("bare-entry-covers-http-default-port", "http://api.example.test/v1", lookups=("api.example.test",)),
    Scenario(
        "bare-entry-does-not-cover-other-port", "http://api.example.test:8080/", refused=DenyRule.GEM_HOSTS, hops=0
    ),
    Scenario(
        "idn-host-matches-its-punycode-entry",
        "https://münchen.test/",
        hosts=("xn--mnchen-3ya.test",),
        lookups=("xn--mnchen-3ya.test",),
    ),
    Scenario("host-case-does-not-matter", "https://API.Example.TEST/v1", lookups=("api.example.test",)),
    Scenario("trailing-dot-is-the-same-host", "https://api.example.test./v1", lookups=("api.example.test.",)),
    Scenario(
        "dual-stack-external-uses-the-first-address",
        "https://dual.example.test/",
        hosts=("dual.example.test",),
        lookups=("dual.example.test",),
        via=(PUBLIC,),
    ),
    Scenario(
        "ipv6-only-external",
        "https://v6only.example.test/",
        hosts=("v6only.example.test",),
        lookups=("v6only.example.test",),
        via=(PUBLIC_V6,),
    ),
    Scenario(
        "public-ip-literal-listed-with-the-flag",
        f"https://{PUBLIC}/",
        hosts=(PUBLIC,),
        allow_local=True,
        via=(PUBLIC,),
    ),
    Scenario("public-ip-literal-not-listed", f"https://{PUBLIC}/", refused=DenyRule.GEM_HOSTS, hops=0),
    Scenario(
        "user-allowlist-entry-with-the-port",
        f"{API}/",
        mode="allowlist",
        external=("api.example.test:443",),
        lookups=("api.example.test",),
    ),
    Scenario(
        "user-allowlist-entry-for-another-port",
        f"{API}/",
        mode="allowlist",
        external=("api.example.test:8443",),
        refused=DenyRule.USER_ALLOWLIST,
        hops=0,
    ),
    Scenario("ftp-scheme", "ftp://api.example.test/file", refused=DenyRule.SCHEME, hops=0),
    Scenario("file-scheme", "file:///etc/passwd", refused=DenyRule.SCHEME, hops=0),
    Scenario(
        "listed-name-that-does-not-resolve",
        "https://nowhere.example.test/",
        hosts=("nowhere.example.test",),
        refused=REQUEST_ERROR,
        hops=0,
        lookups=("nowhere.example.test",),
    ),
    # -- DNS answers: a listed name is local when ANY answer is local (P-NET-15, OD-P05) ----------
    Scenario(
        "listed-name-resolving-to-a-private-address",
        "https://wiki.corp.test/",
        hosts=("wiki.corp.test",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        lookups=("wiki.corp.test",),
    ),
    Scenario(
        "name-resolving-to-a-public-and-a-private-address",
        "https://mixed.example.test/",
        hosts=("mixed.example.test",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        lookups=("mixed.example.test",),
    ),
    Scenario(
        "public-and-private-answer-with-the-flag-but-nothing-listed",
        "https://mixed.example.test/",
        hosts=("mixed.example.test",),
        allow_local=True,
        refused=DenyRule.USER_LOCAL_LIST,
        hops=0,
        lookups=("mixed.example.test",),
    ),
    Scenario(
        "public-and-private-answer-connects-only-to-the-listed-private-address",
        "https://mixed.example.test/",
        hosts=("mixed.example.test",),
        allow_local=True,
        local=("10.0.0.7",),
        lookups=("mixed.example.test",),
        via=("10.0.0.7",),
    ),
    Scenario(
        "loopback-first-then-public-answer",
        "https://mixed-loop.example.test/",
        hosts=("mixed-loop.example.test",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        lookups=("mixed-loop.example.test",),
    ),
    *(
        Scenario(
            f"listed-name-resolving-to-{label}",
            f"https://{name}/",
            hosts=(name,),
            refused=DenyRule.GEM_LOCAL_NETWORK,
            hops=0,
            lookups=(name,),
        )
        for label, name in [
            ("mapped-loopback", "mapped.example.test"),
            ("mapped-private", "mapped10.example.test"),
            ("nat64-private", "nat64.example.test"),
            ("6to4-private", "sixtofour.example.test"),
            ("cloud-metadata", "meta.example.test"),
            ("unique-local-v6", "ula.example.test"),
            ("shared-cgnat", "cgnat.example.test"),
            ("this-network", "zero.example.test"),
            ("teredo", "teredo.example.test"),
        ]
    ),
    Scenario(
        "nat64-of-a-public-address-is-external",
        "https://nat64-public.example.test/",
        hosts=("nat64-public.example.test",),
        lookups=("nat64-public.example.test",),
        via=("64:ff9b::808:808",),
    ),
    Scenario(
        "internal-name-the-user-listed",
        "https://wiki.corp.test/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("wiki.corp.test",),
        lookups=("wiki.corp.test",),
        via=("10.0.0.7",),
    ),
    Scenario(
        "internal-name-with-two-answers-uses-only-the-listed-one",
        "https://wiki2.corp.test/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("10.0.0.7",),
        lookups=("wiki2.corp.test",),
        via=("10.0.0.7",),
    ),
    Scenario(
        "user-lists-the-address-for-another-port",
        "https://wiki.corp.test/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("10.0.0.7:8080",),
        refused=DenyRule.GEM_HOSTS,
        hops=0,
    ),
    Scenario(
        "user-lists-the-address-but-the-gem-lacks-the-flag",
        "https://wiki.corp.test/",
        hosts=("wiki.corp.test",),
        local=("10.0.0.7",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        lookups=("wiki.corp.test",),
    ),
    # -- local machine targets (P-NET-16, P-NET-17, P-NET-19, P-NET-20, P-NET-21) -----------------
    Scenario(
        "localhost-port-the-user-listed",
        "http://localhost:{port}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("localhost:{port}",),
        lookups=("localhost",),
        via=("127.0.0.1",),
        real=True,
    ),
    Scenario(
        "localhost-port-the-user-did-not-list",
        "http://localhost:{other}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("localhost:{port}",),
        refused=DenyRule.USER_LOCAL_LIST,
        hops=0,
        real=True,
    ),
    Scenario(
        "localhost-listed-but-gem-lacks-the-flag",
        "http://localhost:{port}/",
        local=("localhost:{port}",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        real=True,
    ),
    Scenario(
        "inet-aton-spelling-of-a-listed-loopback",
        "http://127.1:{port}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}",),
        via=("127.0.0.1",),
        real=True,
    ),
    Scenario(
        "hex-spelling-of-loopback-without-the-flag",
        "http://0x7f.1:{port}/",
        local=("127.0.0.1:{port}",),
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=0,
        real=True,
    ),
    Scenario(
        "ipv6-loopback-the-user-listed",
        "http://[::1]:8080/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("[::1]:8080",),
        via=("::1",),
    ),
    Scenario(
        "mapped-loopback-literal-matches-the-ipv4-entry",
        "http://[::ffff:127.0.0.1]:{port}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}",),
        via=("127.0.0.1",),
        real=True,
    ),
    Scenario(
        "name-resolving-to-a-listed-loopback-address",
        "http://dev.example.test:{port}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}",),
        lookups=("dev.example.test",),
        via=("127.0.0.1",),
        real=True,
    ),
    Scenario(
        "subdomain-of-localhost-is-not-the-listed-localhost",
        "http://app.localhost:{port}/",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("localhost:{port}",),
        refused=DenyRule.USER_LOCAL_LIST,
        hops=0,
        real=True,
    ),
    # -- redirect chains: every hop checked as a new request (P-NET-11) ---------------------------
    Scenario(
        "redirect-within-the-listed-host",
        f"{API}/start",
        redirects={"api.example.test/start": f"{API}/next"},
        hops=2,
        lookups=("api.example.test", "api.example.test"),
    ),
    Scenario(
        "redirect-to-another-listed-host",
        f"{API}/start",
        hosts=("api.example.test", "cdn.example.test"),
        redirects={"api.example.test/start": "https://cdn.example.test/file"},
        hops=2,
        lookups=("api.example.test", "cdn.example.test"),
        via=(PUBLIC, PUBLIC_2),
    ),
    Scenario(
        "redirect-to-an-unlisted-host",
        f"{API}/start",
        redirects={"api.example.test/start": "https://other.example.test/"},
        refused=DenyRule.GEM_HOSTS,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-http-127-1",
        f"{API}/start",
        redirects={"api.example.test/start": "http://127.1/"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-http-127-1-with-the-flag-but-not-listed",
        f"{API}/start",
        allow_local=True,
        redirects={"api.example.test/start": "http://127.1/"},
        refused=DenyRule.USER_LOCAL_LIST,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-http-127-1-that-the-user-listed",
        f"{API}/start",
        allow_local=True,
        local=("127.0.0.1:80",),
        redirects={"api.example.test/start": "http://127.1/"},
        hops=2,
        lookups=("api.example.test",),
        via=(PUBLIC, "127.0.0.1"),
    ),
    Scenario(
        "redirect-to-mapped-private-literal",
        f"{API}/start",
        redirects={"api.example.test/start": "http://[::ffff:10.0.0.1]/"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-mapped-private-literal-the-user-listed",
        f"{API}/start",
        allow_local=True,
        local=("10.0.0.1",),
        redirects={"api.example.test/start": "http://[::ffff:10.0.0.1]/"},
        hops=2,
        lookups=("api.example.test",),
        via=(PUBLIC, "10.0.0.1"),
    ),
    Scenario(
        "redirect-to-file-etc-passwd",
        f"{API}/start",
        redirects={"api.example.test/start": "file:///etc/passwd"},
        refused=DenyRule.SCHEME,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-ftp",
        f"{API}/start",
        redirects={"api.example.test/start": "ftp://api.example.test/file"},
        refused=DenyRule.SCHEME,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-changes-the-port",
        f"{API}/start",
        redirects={"api.example.test/start": f"{API}:8443/admin"},
        refused=DenyRule.GEM_HOSTS,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-changes-to-a-listed-port",
        f"{API}/start",
        hosts=("api.example.test", "api.example.test:8443"),
        redirects={"api.example.test/start": f"{API}:8443/admin"},
        hops=2,
        lookups=("api.example.test", "api.example.test"),
    ),
    Scenario(
        "redirect-changes-a-local-port",
        "http://127.0.0.1:{port}/start",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}",),
        redirects={"127.0.0.1:{port}/start": "http://127.0.0.1:{other}/secret"},
        refused=DenyRule.USER_LOCAL_LIST,
        real=True,
    ),
    Scenario(
        "redirect-to-localhost-listed-only-by-address-connects-to-that-address",
        "http://127.0.0.1:{port}/start",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}", "127.0.0.1:{other}"),
        redirects={"127.0.0.1:{port}/start": "http://localhost:{other}/done"},
        hops=2,
        lookups=("localhost",),
        via=("127.0.0.1", "127.0.0.1"),
        real=True,
    ),
    Scenario(
        "redirect-from-local-to-listed-loopback-by-another-spelling",
        "http://127.0.0.1:{port}/start",
        hosts=LOCAL_ONLY,
        allow_local=True,
        local=("127.0.0.1:{port}", "127.0.0.1:{other}"),
        redirects={"127.0.0.1:{port}/start": "http://2130706433:{other}/done"},
        hops=2,
        via=("127.0.0.1", "127.0.0.1"),
        real=True,
    ),
    Scenario(
        "redirect-from-local-to-an-external-host-the-gem-lists",
        "http://127.0.0.1:{port}/start",
        allow_local=True,
        local=("127.0.0.1:{port}",),
        redirects={"127.0.0.1:{port}/start": f"{API}/v1"},
        hops=2,
        lookups=("api.example.test",),
        via=("127.0.0.1", PUBLIC),
    ),
    Scenario(
        "https-to-http-on-the-listed-host",
        f"{API}/start",
        redirects={"api.example.test/start": "http://api.example.test/plain"},
        hops=2,
        lookups=("api.example.test", "api.example.test"),
    ),
    Scenario(
        "redirect-to-a-listed-name-resolving-to-private",
        f"{API}/start",
        hosts=("api.example.test", "mixed.example.test"),
        redirects={"api.example.test/start": "https://mixed.example.test/"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test", "mixed.example.test"),
    ),
    Scenario(
        "redirect-to-cloud-metadata",
        f"{API}/start",
        redirects={"api.example.test/start": "http://169.254.169.254/latest/meta-data/"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-decimal-loopback",
        f"{API}/start",
        redirects={"api.example.test/start": "http://2130706433/"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-localhost-with-a-trailing-dot",
        f"{API}/start",
        redirects={"api.example.test/start": "http://localhost./"},
        refused=DenyRule.GEM_LOCAL_NETWORK,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-a-user-blocklisted-host",
        f"{API}/start",
        hosts=("api.example.test", "cdn.example.test"),
        mode="blocklist",
        external=("cdn.example.test",),
        redirects={"api.example.test/start": "https://cdn.example.test/"},
        refused=DenyRule.USER_BLOCKLIST,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-to-a-host-missing-from-the-user-allowlist",
        f"{API}/start",
        hosts=("api.example.test", "cdn.example.test"),
        mode="allowlist",
        external=("api.example.test",),
        redirects={"api.example.test/start": "https://cdn.example.test/"},
        refused=DenyRule.USER_ALLOWLIST,
        lookups=("api.example.test",),
    ),
    Scenario(
        "three-hop-chain-across-listed-hosts",
        f"{API}/a",
        hosts=("api.example.test", "cdn.example.test"),
        redirects={
            "api.example.test/a": "https://cdn.example.test/b",
            "cdn.example.test/b": f"{API}/c",
        },
        hops=3,
        lookups=("api.example.test", "cdn.example.test", "api.example.test"),
    ),
    Scenario(
        "third-hop-into-the-local-machine",
        f"{API}/a",
        hosts=("api.example.test", "cdn.example.test"),
        redirects={
            "api.example.test/a": "https://cdn.example.test/b",
            "cdn.example.test/b": "http://localhost/",
        },
        refused=DenyRule.GEM_LOCAL_NETWORK,
        hops=2,
        lookups=("api.example.test", "cdn.example.test"),
    ),
    Scenario(
        "relative-redirect",
        f"{API}/a/start",
        redirects={"api.example.test/a/start": "../next"},
        hops=2,
        lookups=("api.example.test", "api.example.test"),
    ),
    Scenario(
        "protocol-relative-redirect-to-an-unlisted-host",
        f"{API}/start",
        redirects={"api.example.test/start": "//other.example.test/x"},
        refused=DenyRule.GEM_HOSTS,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-with-backslashes",
        f"{API}/start",
        redirects={"api.example.test/start": "https:\\\\127.0.0.1\\admin"},
        refused=REQUEST_ERROR,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-with-userinfo-hiding-loopback",
        f"{API}/start",
        redirects={"api.example.test/start": "https://api.example.test@127.0.0.1/"},
        refused=REQUEST_ERROR,
        lookups=("api.example.test",),
    ),
    Scenario(
        "redirect-loop-stops-after-the-bound",
        f"{API}/loop",
        redirects={"api.example.test/loop": f"{API}/loop"},
        refused=REQUEST_ERROR,
        hops=11,
        lookups=("api.example.test",) * 11,
    ),
]


def _rules(scenario: Scenario) -> StoredNetworkRules:
    """The user's rules, validated exactly as the store validates what the user typed."""
    return StoredNetworkRules(scenario.mode, scenario.external, scenario.local)


def _api(scenario: Scenario, resolver: FakeResolver, connector: httpx.AsyncBaseTransport | None) -> HttpApi:
    if scenario.hosts is None:
        data = gem_manifest("scenario")
    else:
        data = gem_manifest("scenario", hosts=list(scenario.hosts), allow_local=scenario.allow_local)
    manifest = parse_manifest(data, form="packaged")
    rules = _rules(scenario).to_rules()
    return HttpApi(
        gem_id="scenario",
        permission=manifest.network,
        rules=lambda: rules,
        resolver=resolver,
        transport=connector,
    )


async def _send(api: HttpApi, scenario: Scenario) -> HttpResponse | None:
    """Send the request; check the refusal it must meet, if any."""
    if scenario.refused is None:
        return await api.fetch(scenario.url)
    if scenario.refused == REQUEST_ERROR:
        with pytest.raises(NetworkRequestError):
            await api.fetch(scenario.url)
        return None
    with pytest.raises(NetworkPermissionError) as caught:
        await api.fetch(scenario.url)
    assert caught.value.rule == scenario.refused, caught.value.message
    assert caught.value.code == "E_NET_DENIED"
    return None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
async def test_scenario_through_the_recording_connector(scenario: Scenario) -> None:
    """P-NET-07, P-NET-11, P-NET-12, P-NET-15, P-NET-16, P-NET-19, P-NET-20: refused hops never connect."""
    scenario = scenario.fill(5173, 5174)
    resolver = FakeResolver()
    connector = RecordingConnector(scenario.redirects)
    response = await _send(_api(scenario, resolver, connector.transport), scenario)

    assert len(connector.requests) == scenario.hops, connector.connected_to
    assert tuple(resolver.asked) == scenario.lookups
    if scenario.via:
        assert tuple(connector.connected_to) == scenario.via
    if response is not None:
        assert response.status == 200
        assert response.text().startswith("reached ")
    # Whatever went through was pinned to an address the guard chose: never a name, never a spelling
    # the connection layer would read differently.
    for sent in connector.requests:
        assert ip_address(sent.url.host) is not None
        assert sent.url.host == str(ip_address(sent.url.host))


REAL = [s for s in SCENARIOS if s.real]


@pytest.mark.parametrize("scenario", REAL, ids=[s.id for s in REAL])
async def test_local_scenario_against_real_servers_on_127_0_0_1(
    scenario: Scenario, server: RouteServer, other_server: RouteServer
) -> None:
    """P-NET-16, P-NET-19…21: the servers themselves see exactly the allowed hops, nothing more."""
    scenario = scenario.fill(server.port, other_server.port)
    by_port = {server.port: server, other_server.port: other_server}
    for key, location in scenario.redirects.items():
        parts = urlsplit(f"http://{key}")
        assert parts.port is not None
        by_port[parts.port].redirect(parts.path, location)
    for target in (scenario.url, *scenario.redirects.values()):
        parts = urlsplit(target)
        if parts.port in by_port and parts.path not in by_port[parts.port].routes:
            by_port[parts.port].route(parts.path, b"reached")
    resolver = FakeResolver()
    response = await _send(_api(scenario, resolver, None), scenario)

    assert len(server.seen) + len(other_server.seen) == scenario.hops
    assert tuple(resolver.asked) == scenario.lookups
    if response is not None:
        assert response.status == 200
        assert response.text() == "reached"


def test_there_are_at_least_50_distinct_request_scenarios() -> None:
    """Acceptance: 50+ scenarios, with the named redirect and DNS cases among them."""
    ids = [s.id for s in SCENARIOS]
    assert len(set(ids)) == len(ids)
    assert len(SCENARIOS) >= 50
    targets = {location for s in SCENARIOS for location in s.redirects.values()}
    assert {"http://127.1/", "http://[::ffff:10.0.0.1]/", "file:///etc/passwd"} <= targets
    assert any(s.id == "redirect-changes-the-port" for s in SCENARIOS)
    assert any(len(DNS.get(s.lookups[0], ())) > 1 and s.refused is not None for s in SCENARIOS if s.lookups)
    assert sum(1 for s in SCENARIOS if s.refused is not None) >= 25
    assert sum(1 for s in SCENARIOS if s.refused is None) >= 15


# -- P-RES-03: the gem's code can neither change a resource URL nor handle its download -----------


def test_gem_code_gets_no_handle_on_resource_downloads() -> None:
    """P-RES-03: ``ctx`` offers no resources capability; the URL lives only in the frozen manifest."""
    assert "resources" not in CAPABILITIES
    assert not any("resource" in name or "download" in name for name in GemContext.__slots__)
    manifest = parse_manifest(
        gem_manifest(
            "tagger",
            resources=[
                {
                    "url": "https://files.example.test/model.bin",
                    "sha256": "sha256:" + "0" * 64,
                    "description": "the model",
                }
            ],
        ),
        form="packaged",
    )
    (spec,) = manifest.resources
    assert isinstance(spec, ResourceSpec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.url = "http://127.0.0.1/evil"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.resources = ()  # type: ignore[misc]
