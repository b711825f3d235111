"""The network decision: gem hosts × user modes × local list × local flag (P-NET-07…22, P-RES-06/07)."""

from __future__ import annotations

import itertools
from ipaddress import IPv4Address, IPv6Address

import pytest

from notochord.errors import ConfigurationError, NetworkPermissionError
from notochord.net.hosts import HostEntry, NetworkPermission
from notochord.net.policy import DenyRule, NetworkPolicy, UserHostEntry, UserNetworkRules

IPAddress = IPv4Address | IPv6Address

PUBLIC = IPv4Address("93.184.216.34")
PUBLIC_2 = IPv4Address("151.101.1.69")
LOOPBACK = IPv4Address("127.0.0.1")
INTERNAL = IPv4Address("10.0.0.5")

GEM_NONE: NetworkPermission | None = None
GEM_API = NetworkPermission(hosts=(HostEntry("api.example.com"),), allow_local_network=False, reason="r")
GEM_API_LOCAL = NetworkPermission(hosts=(HostEntry("api.example.com"),), allow_local_network=True, reason="r")
GEM_LOCAL_ONLY = NetworkPermission(hosts=(), allow_local_network=True, reason="r")
GEM_ALT_PORT = NetworkPermission(hosts=(HostEntry("api.example.com", 8443),), allow_local_network=False, reason="r")

OPEN = UserNetworkRules()
ALLOW_API = UserNetworkRules.build(external_mode="allowlist", external_hosts=["api.example.com"])
ALLOW_OTHER = UserNetworkRules.build(external_mode="allowlist", external_hosts=["other.example.com"])
ALLOW_WILDCARD = UserNetworkRules.build(external_mode="allowlist", external_hosts=["*.example.com"])
BLOCK_API = UserNetworkRules.build(external_mode="blocklist", external_hosts=["api.example.com"])
BLOCK_ADDRESS = UserNetworkRules.build(external_mode="blocklist", external_hosts=["93.184.216.34"])
LOCAL_VITE = UserNetworkRules.build(local_hosts=["localhost:5173"])
LOCAL_LOOPBACK_PORT = UserNetworkRules.build(local_hosts=["127.0.0.1:5173"])
LOCAL_WIKI = UserNetworkRules.build(local_hosts=["wiki.corp.example.com"])
LOCAL_INTERNAL_IP = UserNetworkRules.build(local_hosts=["10.0.0.5"])
ALLOW_API_AND_LOCAL_VITE = UserNetworkRules.build(
    external_mode="allowlist", external_hosts=["api.example.com"], local_hosts=["localhost:5173"]
)

# (id, gem permission, user rules, scheme, host, port, resolved, expected refusal or None)
MATRIX: list[
    tuple[str, NetworkPermission | None, UserNetworkRules, str, str, int, list[IPAddress], DenyRule | None]
] = [
    # external targets: both the gem and the user must allow (P-NET-07, P-NET-12, P-NET-14)
    ("listed-host-open-user", GEM_API, OPEN, "https", "api.example.com", 443, [PUBLIC], None),
    ("listed-host-case-insensitive", GEM_API, OPEN, "https", "API.EXAMPLE.COM", 443, [PUBLIC], None),
    ("unlisted-host", GEM_API, OPEN, "https", "other.example.com", 443, [PUBLIC], DenyRule.GEM_HOSTS),
    ("listed-host-other-port", GEM_API, OPEN, "https", "api.example.com", 8443, [PUBLIC], DenyRule.GEM_HOSTS),
    (
        "port-entry-default-port",
        GEM_ALT_PORT,
        OPEN,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.GEM_HOSTS,
    ),
    ("port-entry-its-port", GEM_ALT_PORT, OPEN, "https", "api.example.com", 8443, [PUBLIC], None),
    (
        "no-network-permission",
        GEM_NONE,
        OPEN,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.NO_NETWORK_PERMISSION,
    ),
    ("user-allowlist-lists-it", GEM_API, ALLOW_API, "https", "api.example.com", 443, [PUBLIC], None),
    (
        "user-allowlist-lacks-it",
        GEM_API,
        ALLOW_OTHER,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.USER_ALLOWLIST,
    ),
    ("user-allowlist-wildcard", GEM_API, ALLOW_WILDCARD, "https", "api.example.com", 443, [PUBLIC], None),
    (
        "user-blocklist-lists-it",
        GEM_API,
        BLOCK_API,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.USER_BLOCKLIST,
    ),
    (
        "user-blocklist-by-address",
        GEM_API,
        BLOCK_ADDRESS,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.USER_BLOCKLIST,
    ),
    (
        "user-blocklist-other-address",
        GEM_API,
        BLOCK_ADDRESS,
        "https",
        "api.example.com",
        443,
        [PUBLIC_2],
        None,
    ),
    (
        "user-allows-but-gem-does-not",
        GEM_API,
        ALLOW_OTHER,
        "https",
        "other.example.com",
        443,
        [PUBLIC],
        DenyRule.GEM_HOSTS,
    ),
    (
        "local-only-gem-external-host",
        GEM_LOCAL_ONLY,
        OPEN,
        "https",
        "api.example.com",
        443,
        [PUBLIC],
        DenyRule.GEM_HOSTS,
    ),
    ("scheme-ftp", GEM_API, OPEN, "ftp", "api.example.com", 21, [PUBLIC], DenyRule.SCHEME),
    ("scheme-file", GEM_API, OPEN, "file", "api.example.com", 0, [PUBLIC], DenyRule.SCHEME),
    # local targets: the gem's flag AND the user's list (P-NET-16…21)
    ("localhost-vite-listed", GEM_API_LOCAL, LOCAL_VITE, "http", "localhost", 5173, [LOOPBACK], None),
    (
        "localhost-vite-listed-local-only-gem",
        GEM_LOCAL_ONLY,
        LOCAL_VITE,
        "http",
        "localhost",
        5173,
        [LOOPBACK],
        None,
    ),
    (
        "localhost-other-port",
        GEM_API_LOCAL,
        LOCAL_VITE,
        "http",
        "localhost",
        5174,
        [LOOPBACK],
        DenyRule.USER_LOCAL_LIST,
    ),
    (
        "localhost-not-listed",
        GEM_API_LOCAL,
        OPEN,
        "http",
        "localhost",
        5173,
        [LOOPBACK],
        DenyRule.USER_LOCAL_LIST,
    ),
    (
        "localhost-listed-gem-without-flag",
        GEM_API,
        LOCAL_VITE,
        "http",
        "localhost",
        5173,
        [LOOPBACK],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    ("loopback-ip-listed", GEM_API_LOCAL, LOCAL_LOOPBACK_PORT, "http", "127.0.0.1", 5173, [LOOPBACK], None),
    ("loopback-ip-odd-spelling", GEM_API_LOCAL, LOCAL_LOOPBACK_PORT, "http", "0x7f.1", 5173, [], None),
    (
        "loopback-ip-other-port",
        GEM_API_LOCAL,
        LOCAL_LOOPBACK_PORT,
        "http",
        "127.0.0.1",
        80,
        [LOOPBACK],
        DenyRule.USER_LOCAL_LIST,
    ),
    (
        "loopback-ip-without-flag",
        GEM_API,
        LOCAL_LOOPBACK_PORT,
        "http",
        "127.0.0.1",
        5173,
        [LOOPBACK],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    (
        "name-to-loopback-by-address",
        GEM_LOCAL_ONLY,
        LOCAL_LOOPBACK_PORT,
        "http",
        "dev.example.test",
        5173,
        [LOOPBACK],
        None,
    ),
    (
        "internal-name-listed",
        GEM_LOCAL_ONLY,
        LOCAL_WIKI,
        "https",
        "wiki.corp.example.com",
        443,
        [INTERNAL],
        None,
    ),
    (
        "internal-name-listed-any-port",
        GEM_LOCAL_ONLY,
        LOCAL_WIKI,
        "http",
        "wiki.corp.example.com",
        8080,
        [INTERNAL],
        None,
    ),
    (
        "internal-name-unlisted",
        GEM_LOCAL_ONLY,
        OPEN,
        "https",
        "wiki.corp.example.com",
        443,
        [INTERNAL],
        DenyRule.USER_LOCAL_LIST,
    ),
    (
        "internal-name-listed-by-ip",
        GEM_LOCAL_ONLY,
        LOCAL_INTERNAL_IP,
        "https",
        "wiki.corp.example.com",
        443,
        [INTERNAL],
        None,
    ),
    (
        "internal-name-without-flag",
        GEM_API,
        LOCAL_WIKI,
        "https",
        "wiki.corp.example.com",
        443,
        [INTERNAL],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    (
        "listed-host-resolving-internal",
        GEM_API,
        OPEN,
        "https",
        "api.example.com",
        443,
        [INTERNAL],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    (
        "listed-host-rebinding-mixed",
        GEM_API,
        OPEN,
        "https",
        "api.example.com",
        443,
        [PUBLIC, LOOPBACK],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    (
        "listed-host-mapped-loopback",
        GEM_API,
        OPEN,
        "https",
        "api.example.com",
        443,
        [IPv6Address("::ffff:127.0.0.1")],
        DenyRule.GEM_LOCAL_NETWORK,
    ),
    (
        "ip-in-hosts-local-grants-nothing",
        NetworkPermission(hosts=(HostEntry("127.0.0.1", 5173),), allow_local_network=True, reason="r"),
        OPEN,
        "http",
        "127.0.0.1",
        5173,
        [LOOPBACK],
        DenyRule.USER_LOCAL_LIST,
    ),
    (
        "public-ip-in-hosts-is-external",
        NetworkPermission(hosts=(HostEntry("93.184.216.34"),), allow_local_network=True, reason="r"),
        OPEN,
        "https",
        "93.184.216.34",
        443,
        [PUBLIC],
        None,
    ),
    (
        "user-allowlist-does-not-gate-local",
        GEM_LOCAL_ONLY,
        ALLOW_API_AND_LOCAL_VITE,
        "http",
        "localhost",
        5173,
        [LOOPBACK],
        None,
    ),
]


@pytest.mark.parametrize(
    ("permission", "user", "scheme", "host", "port", "resolved", "refusal"),
    [row[1:] for row in MATRIX],
    ids=[row[0] for row in MATRIX],
)
def test_policy_matrix(
    permission: NetworkPermission | None,
    user: UserNetworkRules,
    scheme: str,
    host: str,
    port: int,
    resolved: list[IPAddress],
    refusal: DenyRule | None,
) -> None:
    """P-NET-07, P-NET-12, P-NET-14, P-NET-16…21, OD-P01, OD-P03, OD-P05."""
    policy = NetworkPolicy(permission=permission, user_rules=user)
    if refusal is None:
        policy.check(scheme=scheme, host=host, port=port, resolved=resolved)
        return
    with pytest.raises(NetworkPermissionError) as caught:
        policy.check(scheme=scheme, host=host, port=port, resolved=resolved)
    assert caught.value.rule == refusal
    assert caught.value.code == "E_NET_DENIED"
    assert caught.value.host == host.lower()
    assert host.lower() in caught.value.message
    assert str(refusal) in caught.value.message


@pytest.mark.parametrize(
    ("gem_hosts", "mode", "user_hosts"),
    list(
        itertools.product(
            [(), ("api.example.com",), ("other.example.com",), ("api.example.com", "other.example.com")],
            ["open", "allowlist", "blocklist"],
            [(), ("api.example.com",), ("other.example.com",)],
        )
    ),
)
def test_gem_can_only_narrow_the_users_external_rules(
    gem_hosts: tuple[str, ...], mode: str, user_hosts: tuple[str, ...]
) -> None:
    """P-NET-12: an external request goes through exactly when both the gem and the user allow it."""
    permission = NetworkPermission(hosts=tuple(HostEntry(h) for h in gem_hosts), allow_local_network=False, reason="r")
    user = UserNetworkRules.build(external_mode=mode, external_hosts=user_hosts)
    policy = NetworkPolicy(permission=permission, user_rules=user)
    gem_allows = "api.example.com" in gem_hosts
    user_allows = {
        "open": True,
        "allowlist": "api.example.com" in user_hosts,
        "blocklist": "api.example.com" not in user_hosts,
    }[mode]
    try:
        policy.check(scheme="https", host="api.example.com", port=443, resolved=[PUBLIC])
    except NetworkPermissionError:
        allowed = False
    else:
        allowed = True
    assert allowed is (gem_allows and user_allows)


def test_local_addresses_matched_only_by_address_restrict_the_connection_to_those() -> None:
    """OD-P03, OD-P05: of a listed and an unlisted local address, only the listed one is used."""
    policy = NetworkPolicy(permission=GEM_LOCAL_ONLY, user_rules=LOCAL_INTERNAL_IP)
    other = IPv4Address("10.0.0.6")
    chosen = policy.select(scheme="https", host="wiki.corp.example.com", port=443, resolved=[other, INTERNAL, PUBLIC])
    assert chosen == (INTERNAL,)


def test_a_local_name_listed_by_the_user_may_use_every_resolved_address() -> None:
    policy = NetworkPolicy(permission=GEM_LOCAL_ONLY, user_rules=LOCAL_WIKI)
    other = IPv4Address("10.0.0.6")
    chosen = policy.select(scheme="https", host="wiki.corp.example.com", port=443, resolved=[INTERNAL, other])
    assert chosen == (INTERNAL, other)


RESOURCE_CASES: list[tuple[str, UserNetworkRules, str, int, list[IPAddress], DenyRule | None]] = [
    ("public-open", OPEN, "cdn.example.com", 443, [PUBLIC], None),
    ("public-allowlist-lacks", ALLOW_API, "cdn.example.com", 443, [PUBLIC], DenyRule.USER_ALLOWLIST),
    ("public-allowlist-has", ALLOW_API, "api.example.com", 443, [PUBLIC], None),
    ("public-blocklisted", BLOCK_API, "api.example.com", 443, [PUBLIC], DenyRule.USER_BLOCKLIST),
    ("localhost-even-if-listed", LOCAL_VITE, "localhost", 5173, [LOOPBACK], DenyRule.RESOURCES_NEVER_LOCAL),
    (
        "loopback-ip-even-if-listed",
        LOCAL_LOOPBACK_PORT,
        "127.0.0.1",
        5173,
        [LOOPBACK],
        DenyRule.RESOURCES_NEVER_LOCAL,
    ),
    (
        "internal-name-even-if-listed",
        LOCAL_WIKI,
        "wiki.corp.example.com",
        443,
        [INTERNAL],
        DenyRule.RESOURCES_NEVER_LOCAL,
    ),
    ("rebinding-mixed", OPEN, "cdn.example.com", 443, [PUBLIC, INTERNAL], DenyRule.RESOURCES_NEVER_LOCAL),
    ("metadata-address", OPEN, "169.254.169.254", 80, [], DenyRule.RESOURCES_NEVER_LOCAL),
]


@pytest.mark.parametrize(
    ("user", "host", "port", "resolved", "refusal"),
    [row[1:] for row in RESOURCE_CASES],
    ids=[row[0] for row in RESOURCE_CASES],
)
def test_resource_downloads_never_reach_local_but_obey_user_external_rules(
    user: UserNetworkRules, host: str, port: int, resolved: list[IPAddress], refusal: DenyRule | None
) -> None:
    """P-NET-22, P-RES-04, P-RES-06, P-RES-07."""
    policy = NetworkPolicy.for_resources(user_rules=user)
    scheme = "https" if port == 443 else "http"
    if refusal is None:
        policy.check(scheme=scheme, host=host, port=port, resolved=resolved)
        return
    with pytest.raises(NetworkPermissionError) as caught:
        policy.check(scheme=scheme, host=host, port=port, resolved=resolved)
    assert caught.value.rule == refusal


def test_precheck_refuses_an_unlisted_name_before_any_lookup() -> None:
    """P-NET-07: a gem without the local flag can only reach its hosts, so no lookup is needed to refuse."""
    policy = NetworkPolicy(permission=GEM_API, user_rules=LOCAL_INTERNAL_IP)
    with pytest.raises(NetworkPermissionError) as caught:
        policy.precheck(scheme="https", host="exfil.attacker.test", port=443)
    assert caught.value.rule == DenyRule.GEM_HOSTS


def test_precheck_leaves_a_name_that_may_resolve_to_a_listed_address_to_the_lookup() -> None:
    """OD-P03: with the flag and an address entry, only the lookup can tell."""
    policy = NetworkPolicy(permission=GEM_LOCAL_ONLY, user_rules=LOCAL_INTERNAL_IP)
    policy.precheck(scheme="https", host="wiki.corp.example.com", port=443)


def test_precheck_refuses_localhost_when_no_entry_could_match() -> None:
    policy = NetworkPolicy(permission=GEM_LOCAL_ONLY, user_rules=LOCAL_VITE)
    with pytest.raises(NetworkPermissionError) as caught:
        policy.precheck(scheme="http", host="localhost", port=3000)
    assert caught.value.rule == DenyRule.USER_LOCAL_LIST


def test_refusal_messages_say_what_to_do() -> None:
    """The message names the host, the rule and the fix."""
    policy = NetworkPolicy(permission=GEM_API_LOCAL, user_rules=OPEN)
    with pytest.raises(NetworkPermissionError) as caught:
        policy.check(scheme="http", host="localhost", port=5173, resolved=[LOOPBACK])
    assert 'the user can add "localhost:5173"' in caught.value.message
    with pytest.raises(NetworkPermissionError) as caught:
        policy.check(scheme="https", host="other.example.com", port=8443, resolved=[PUBLIC])
    assert 'the manifest must list "other.example.com:8443"' in caught.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:5173", UserHostEntry("localhost", 5173)),
        ("LOCALHOST", UserHostEntry("localhost")),
        ("127.0.0.1:8080", UserHostEntry("127.0.0.1", 8080, LOOPBACK)),
        ("[::1]:8080", UserHostEntry("::1", 8080, IPv6Address("::1"))),
        ("wiki.corp.example.com", UserHostEntry("wiki.corp.example.com")),
    ],
)
def test_user_local_list_entries_parse(text: str, expected: UserHostEntry) -> None:
    """OD-P03: host or host:port, host a name or an IP."""
    assert UserHostEntry.parse(text, allow_wildcard=False) == expected


@pytest.mark.parametrize("text", ["*.corp.example.com", "http://x", "x:0", "x:70000", "", "a b", "x/y"])
def test_malformed_user_local_entries_are_configuration_errors(text: str) -> None:
    with pytest.raises(ConfigurationError):
        UserHostEntry.parse(text, allow_wildcard=False)


def test_unknown_external_mode_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        UserNetworkRules.build(external_mode="closed")


@pytest.mark.parametrize(
    ("organization", "advice"),
    [
        (None, "notochord network local add localhost:5173"),
        ("acme", "notochord network local add localhost:5173 --org acme"),
    ],
)
def test_an_unlisted_local_target_is_refused_with_the_command_that_edits_the_right_list(
    organization: str | None, advice: str
) -> None:
    """P-NET-14: the refusal tells how to list the target, in the space whose rules refused it."""
    policy = NetworkPolicy(permission=GEM_API_LOCAL, user_rules=OPEN, organization=organization)
    with pytest.raises(NetworkPermissionError) as refused:
        policy.check(scheme="http", host="localhost", port=5173, resolved=[LOOPBACK])
    assert refused.value.rule == DenyRule.USER_LOCAL_LIST
    assert str(refused.value).endswith(f"with: {advice}")
