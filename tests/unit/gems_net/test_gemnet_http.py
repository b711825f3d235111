"""``ctx.http``: every request decided by the gem's network permission AND the user's rules.

External hosts are answered in memory (their names resolve to a public address that is never
contacted); local machine targets are real servers on 127.0.0.1. Covers P-GEN-01, P-NET-04, P-NET-07,
P-NET-11, P-NET-12, P-NET-14…17, P-NET-19…21 and OD-P05.
"""

from __future__ import annotations

import base64
import json
import socket

import httpx
import pytest
import sqlalchemy as sa
from gemnet_servers import RouteServer
from gemnet_support import PUBLIC_ADDRESS, ExternalHosts, FakeResolver, InstallGem

import notochord
from notochord.db.schema import space_meta
from notochord.errors import ConfigurationError, NetworkPermissionError, NetworkRequestError
from notochord.knowledge.writes import USER
from notochord.net.transport import RequestLimits
from notochord.net.user_rules import RULES_KEY, NetworkRulesStore

pytestmark = pytest.mark.anyio

API = "api.example.test"
FORECAST = f"https://{API}/v1/forecast"


@pytest.fixture
def weather(install_gem: InstallGem, resolver: FakeResolver, external: ExternalHosts) -> str:
    """A gem listing api.example.test, which answers a forecast."""
    resolver.point(API, str(PUBLIC_ADDRESS))
    external.serve(FORECAST, httpx.Response(200, json={"temperature": 14.5}))
    return install_gem("weather", hosts=[API])


async def test_gem_without_network_section_is_refused_every_request_before_anything_is_sent(
    net_space: notochord.Space,
    install_gem: InstallGem,
    rules: NetworkRulesStore,
    resolver: FakeResolver,
    server: RouteServer,
) -> None:
    """P-GEN-01: no ``permissions.network``, no request, even to an address the user listed."""
    gem = install_gem("offline")
    rules.add_local(f"127.0.0.1:{server.port}")
    ctx = net_space.gems.context(gem)
    for url in (server.url("/hello"), FORECAST, "not even a url"):
        with pytest.raises(NetworkPermissionError, match="no network permission") as refused:
            await ctx.http.fetch(url)
        assert refused.value.rule == "no-network-permission"
        assert "offline" in refused.value.message
    assert server.seen == []
    assert resolver.asked == []


async def test_listed_external_host_is_reached_at_its_checked_address_with_its_name(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    """P-NET-07 (allowed side), OD-P05: the connection goes to the resolved, checked address."""
    response = await net_space.gems.context(weather).http.fetch(FORECAST)
    assert response.status == 200
    assert response.ok
    assert response.json() == {"temperature": 14.5}
    assert response.header("Content-Type") == "application/json"
    assert response.url == FORECAST
    (sent,) = external.received
    assert sent.url.host == str(PUBLIC_ADDRESS)
    assert sent.headers["host"] == API


async def test_options_object_as_the_javascript_shim_sends_it_sets_method_headers_and_body(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    external.serve(f"https://{API}/v1/notes", httpx.Response(201, text="created"))
    response = await net_space.gems.context(weather).http.fetch(
        f"https://{API}/v1/notes",
        {"method": "post", "headers": {"Content-Type": "application/json", "X-Key": "k1"}, "body": '{"a":1}'},
    )
    assert (response.status, response.text()) == (201, "created")
    (sent,) = external.received
    assert sent.method == "POST"
    assert sent.content == b'{"a":1}'
    assert sent.headers["x-key"] == "k1"


async def test_keyword_form_sends_bytes_and_reads_bytes(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    external.serve(f"https://{API}/upload", httpx.Response(200, content=b"\x00\x01binary"))
    response = await net_space.gems.context(weather).http.fetch(
        f"https://{API}/upload", method="PUT", body=b"\xff\xfe", headers={"X-Mode": "raw"}
    )
    assert response.bytes() == b"\x00\x01binary"
    wire = response.to_wire()
    assert json.loads(json.dumps(wire))["status"] == 200
    assert base64.b64decode(wire["bodyBase64"]) == b"\x00\x01binary"
    assert external.received[0].content == b"\xff\xfe"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://other.example.test/v1", id="unlisted-name"),
        pytest.param(f"https://{API}:8443/v1", id="listed-name-on-another-port"),
        pytest.param(f"https://sub.{API}/v1", id="subdomain-of-a-listed-name"),
    ],
)
async def test_unlisted_host_is_refused_before_it_is_resolved_or_contacted(
    net_space: notochord.Space, weather: str, external: ExternalHosts, resolver: FakeResolver, url: str
) -> None:
    """P-NET-07, P-NET-04: a host (or port) the manifest does not list is refused before sending."""
    resolver.point("other.example.test", str(PUBLIC_ADDRESS))
    with pytest.raises(NetworkPermissionError, match=r"permissions\.network\.hosts") as refused:
        await net_space.gems.context(weather).http.fetch(url)
    assert refused.value.rule == "gem-hosts"
    assert resolver.asked == []
    assert external.received == []


async def test_user_blocklist_narrows_what_the_gem_may_reach(
    net_space: notochord.Space, weather: str, external: ExternalHosts, rules: NetworkRulesStore
) -> None:
    """P-NET-12, P-NET-14: the gem lists the host, the user blocks it: refused."""
    rules.set_external("blocklist", [API])
    with pytest.raises(NetworkPermissionError, match="blocklist") as refused:
        await net_space.gems.context(weather).http.fetch(FORECAST)
    assert refused.value.rule == "user-blocklist"
    assert refused.value.host == API
    assert external.received == []


async def test_user_allowlist_must_also_name_the_host(
    net_space: notochord.Space, weather: str, external: ExternalHosts, rules: NetworkRulesStore
) -> None:
    """P-NET-12, P-NET-14: in allowlist mode a host the gem lists still needs the user's entry."""
    ctx = net_space.gems.context(weather)
    rules.set_external("allowlist", ["weather.example.org"])
    with pytest.raises(NetworkPermissionError) as refused:
        await ctx.http.fetch(FORECAST)
    assert refused.value.rule == "user-allowlist"
    rules.set_external("allowlist", ["*.example.test"])
    assert (await ctx.http.fetch(FORECAST)).status == 200
    assert len(external.received) == 1


async def test_a_change_of_the_user_rules_applies_to_the_very_next_request_of_the_same_ctx(
    net_space: notochord.Space, weather: str, external: ExternalHosts, rules: NetworkRulesStore
) -> None:
    """P-NET-12: the rules are read for every request, not when the ctx was made."""
    ctx = net_space.gems.context(weather)
    assert (await ctx.http.fetch(FORECAST)).status == 200
    NetworkRulesStore(net_space.core).set_external("blocklist", [API])  # another handle, same store
    with pytest.raises(NetworkPermissionError):
        await ctx.http.fetch(FORECAST)
    rules.set_external("open")
    assert (await ctx.http.fetch(FORECAST)).status == 200
    assert len(external.received) == 2


async def test_user_local_list_and_allow_local_network_reach_a_real_local_server(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> None:
    """P-NET-16, P-NET-17, P-NET-19: local access needs the gem's flag and the user's entry."""
    server.route("/status", b"all good", content_type="text/plain; charset=utf-8")
    gem = install_gem("dev-tools", hosts=[], allow_local=True)
    ctx = net_space.gems.context(gem)
    with pytest.raises(NetworkPermissionError, match="Local machine and internal network") as refused:
        await ctx.http.fetch(server.url("/status"))
    assert refused.value.rule == "user-local-list"
    assert server.seen == []

    rules.add_local(f"127.0.0.1:{server.port}")
    response = await ctx.http.fetch(server.url("/status"))
    assert (response.status, response.text()) == (200, "all good")
    assert [s.path for s in server.seen] == ["/status"]

    rules.remove_local(f"127.0.0.1:{server.port}")
    with pytest.raises(NetworkPermissionError):
        await ctx.http.fetch(server.url("/status"))
    assert len(server.seen) == 1


async def test_local_entry_for_one_port_does_not_open_another_port(
    net_space: notochord.Space,
    install_gem: InstallGem,
    rules: NetworkRulesStore,
    server: RouteServer,
    other_server: RouteServer,
) -> None:
    """OD-P03: ``host:port`` matches only that port."""
    gem = install_gem("dev-tools", hosts=[], allow_local=True)
    rules.add_local(f"127.0.0.1:{server.port}")
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(gem).http.fetch(other_server.url("/"))
    assert refused.value.rule == "user-local-list"
    assert other_server.seen == []


async def test_localhost_with_port_as_in_the_spec_example(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> None:
    """P-NET-21: only after the user adds ``localhost:<port>`` can the gem open it."""
    server.route("/", b"<h1>dev server</h1>", content_type="text/html")
    gem = install_gem("preview", hosts=[], allow_local=True)
    ctx = net_space.gems.context(gem)
    url = server.url("/", host="localhost")
    with pytest.raises(NetworkPermissionError):
        await ctx.http.fetch(url)
    rules.add_local(f"localhost:{server.port}")
    assert (await ctx.http.fetch(url)).text() == "<h1>dev server</h1>"
    assert server.seen[0].headers["host"] == f"localhost:{server.port}"


async def test_gem_without_allow_local_network_cannot_reach_a_local_address_the_user_listed(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> None:
    """P-NET-20."""
    gem = install_gem("weather", hosts=[API])
    rules.add_local(f"127.0.0.1:{server.port}")
    with pytest.raises(NetworkPermissionError, match="allowLocalNetwork") as refused:
        await net_space.gems.context(gem).http.fetch(server.url("/"))
    assert refused.value.rule == "gem-local-network"
    assert server.seen == []


async def test_listed_name_resolving_to_a_local_address_is_treated_as_local(
    net_space: notochord.Space,
    install_gem: InstallGem,
    rules: NetworkRulesStore,
    resolver: FakeResolver,
    server: RouteServer,
) -> None:
    """P-NET-15, OD-P05: a listed name that resolves to 127.0.0.1 needs the local rules too."""
    resolver.point(API, "127.0.0.1")
    server.route("/v1", b"internal answer")
    url = server.url("/v1", host=API)
    plain = install_gem("plain", hosts=[f"{API}:{server.port}"])
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(plain).http.fetch(url)
    assert refused.value.rule == "gem-local-network"
    assert server.seen == []

    local = install_gem("local", hosts=[f"{API}:{server.port}"], allow_local=True)
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(local).http.fetch(url)
    assert refused.value.rule == "user-local-list"

    rules.add_local(f"{API}:{server.port}")
    response = await net_space.gems.context(local).http.fetch(url)
    assert response.text() == "internal answer"
    assert server.seen[0].headers["host"] == f"{API}:{server.port}"


async def test_redirect_to_a_local_server_the_user_has_not_listed_is_refused_before_contact(
    net_space: notochord.Space,
    install_gem: InstallGem,
    rules: NetworkRulesStore,
    server: RouteServer,
    other_server: RouteServer,
) -> None:
    """P-NET-11: each hop is checked as a new request."""
    server.redirect("/go", other_server.url("/secret"))
    gem = install_gem("dev-tools", hosts=[], allow_local=True)
    rules.add_local(f"127.0.0.1:{server.port}")
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(gem).http.fetch(server.url("/go"))
    assert refused.value.rule == "user-local-list"
    assert [s.path for s in server.seen] == ["/go"]
    assert other_server.seen == []


async def test_redirect_from_an_external_host_into_the_local_machine_is_refused(
    net_space: notochord.Space, weather: str, external: ExternalHosts, server: RouteServer
) -> None:
    """P-NET-11, P-NET-20: a listed external host cannot lead the gem to 127.0.0.1."""
    external.serve(f"https://{API}/jump", httpx.Response(302, headers={"Location": server.url("/admin")}))
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(weather).http.fetch(f"https://{API}/jump")
    assert refused.value.rule == "gem-local-network"
    assert len(external.received) == 1
    assert server.seen == []


async def test_redirect_to_an_unlisted_external_host_is_refused_without_resolving_it(
    net_space: notochord.Space, weather: str, external: ExternalHosts, resolver: FakeResolver
) -> None:
    """P-NET-11, P-NET-07."""
    external.serve(f"https://{API}/moved", httpx.Response(301, headers={"Location": "https://elsewhere.example.test/"}))
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(weather).http.fetch(f"https://{API}/moved")
    assert refused.value.rule == "gem-hosts"
    assert refused.value.host == "elsewhere.example.test"
    assert "elsewhere.example.test" not in resolver.asked


async def test_redirect_within_a_listed_host_is_followed(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    external.serve(f"https://{API}/old", httpx.Response(308, headers={"Location": "/v1/forecast"}))
    response = await net_space.gems.context(weather).http.fetch(f"https://{API}/old")
    assert response.json() == {"temperature": 14.5}
    assert response.url == FORECAST


async def test_response_larger_than_the_bound_is_refused(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> None:
    net_space.gems.services.http_limits = RequestLimits(max_response_bytes=1000)
    server.route("/big", b"x" * 5000)
    gem = install_gem("dev-tools", hosts=[], allow_local=True)
    rules.add_local("127.0.0.1")
    with pytest.raises(NetworkRequestError, match="limit of 1000 bytes"):
        await net_space.gems.context(gem).http.fetch(server.url("/big"))


async def test_connection_failure_is_a_network_request_error_and_no_httpx_error_escapes(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore
) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gem = install_gem("dev-tools", hosts=[], allow_local=True)
    rules.add_local(f"127.0.0.1:{port}")
    with pytest.raises(NetworkRequestError, match="could not connect") as failed:
        await net_space.gems.context(gem).http.fetch(f"http://127.0.0.1:{port}/")
    assert not isinstance(failed.value, httpx.HTTPError)


@pytest.mark.parametrize(
    ("options", "keywords", "message"),
    [
        pytest.param({"mode": "cors"}, {}, "not supported", id="unknown-option"),
        pytest.param({"redirect": "manual"}, {}, 'always "follow"', id="manual-redirect"),
        pytest.param({"method": "GET"}, {"method": "POST"}, "given twice", id="twice"),
        pytest.param({"body": {"a": 1}}, {}, "json.dumps", id="object-body"),
        pytest.param({}, {"timeout": -1}, "positive number", id="negative-timeout"),
        pytest.param({"headers": {"Host": "evil.example"}}, {}, "Host header", id="host-header"),
        pytest.param({"headers": {"X-A": None}}, {}, "string value", id="header-without-value"),
    ],
)
async def test_malformed_fetch_arguments_are_refused_with_what_to_do(
    net_space: notochord.Space,
    weather: str,
    external: ExternalHosts,
    options: dict[str, object],
    keywords: dict[str, object],
    message: str,
) -> None:
    with pytest.raises(NetworkRequestError, match=message):
        await net_space.gems.context(weather).http.fetch(FORECAST, options, **keywords)
    assert external.received == []


async def test_a_shorter_timeout_is_accepted_and_a_longer_one_cannot_raise_the_bound(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    ctx = net_space.gems.context(weather)
    assert (await ctx.http.fetch(FORECAST, timeout=5)).status == 200
    assert (await ctx.http.fetch(FORECAST, {"timeout": 10_000})).status == 200
    assert ctx.http.limits.timeout == RequestLimits().timeout


async def test_damaged_user_rules_refuse_the_request_rather_than_fall_back_to_open(
    net_space: notochord.Space, weather: str, external: ExternalHosts
) -> None:
    with net_space.core.store.write(actor=USER, run_id=None) as tx:
        tx.conn.execute(sa.insert(space_meta).values(key=RULES_KEY, value='{"format": 1}'))
    with pytest.raises(ConfigurationError, match="network rules are damaged"):
        await net_space.gems.context(weather).http.fetch(FORECAST)
    assert external.received == []


def test_ctx_http_without_the_user_rules_is_a_configuration_error(
    net_space: notochord.Space, install_gem: InstallGem
) -> None:
    gem = install_gem("weather", hosts=[API])
    net_space.gems.services.network_rules = None
    with pytest.raises(ConfigurationError, match="network_rules"):
        net_space.gems.context(gem)
