"""The manifest network section and host matching (P-NET-01…09, OD-P01, OD-P04, OD-P10, OD-K54)."""

from __future__ import annotations

import pytest

from notochord.net.hosts import (
    HostEntry,
    NetworkPermission,
    host_matches_url,
    parse_host_entry,
    parse_network_section,
)

PATH = "permissions.network"


def section(hosts: object, **extra: object) -> dict[str, object]:
    return {"hosts": hosts, "reason": "Look up weather forecasts", **extra}


def test_the_verbatim_example_parses() -> None:
    """EX-16, P-NET-01: the documented section is valid and local access defaults to off (P-NET-08)."""
    raw = {"hosts": ["api.open-meteo.com"], "reason": "Look up weather forecasts"}
    permission, problems = parse_network_section(raw, path=PATH, draft=False)
    assert problems == []
    assert permission == NetworkPermission(
        hosts=(HostEntry("api.open-meteo.com"),),
        allow_local_network=False,
        reason="Look up weather forecasts",
    )


VALID_ENTRIES: list[tuple[str, bool, HostEntry]] = [
    ("api.example.com", False, HostEntry("api.example.com")),
    ("api.example.com:8443", False, HostEntry("api.example.com", 8443)),
    ("xn--bcher-kva.de", False, HostEntry("xn--bcher-kva.de")),
    ("a-b.c0.example", False, HostEntry("a-b.c0.example")),
    ("intranet", False, HostEntry("intranet")),
    ("api.example.com:1", False, HostEntry("api.example.com", 1)),
    ("api.example.com:65535", False, HostEntry("api.example.com", 65535)),
    ("localhost", True, HostEntry("localhost")),
    ("localhost:5173", True, HostEntry("localhost", 5173)),
    ("127.0.0.1", True, HostEntry("127.0.0.1")),
    ("93.184.216.34:8080", True, HostEntry("93.184.216.34", 8080)),
    ("[::1]", True, HostEntry("::1")),
    ("[2001:db8::1]:8443", True, HostEntry("2001:db8::1", 8443)),
]


@pytest.mark.parametrize(
    ("text", "allow_local", "expected"), VALID_ENTRIES, ids=[f"{t}-local={a}" for t, a, _ in VALID_ENTRIES]
)
def test_valid_host_entries(text: str, allow_local: bool, expected: HostEntry) -> None:
    """P-NET-03, P-NET-04, P-NET-05, P-NET-06: host names with optional port are accepted."""
    entry, problem = parse_host_entry(text, allow_local_network=allow_local)
    assert problem is None
    assert entry == expected


INVALID_ENTRIES: list[tuple[str, bool, str]] = [
    ("https://api.example.com", True, "is not a host name (no scheme, path or wildcard)"),
    ("api.example.com/v1", True, "is not a host name (no scheme, path or wildcard)"),
    ("*.example.com", True, "is not a host name (no scheme, path or wildcard)"),
    ("api.*.com", True, "is not a host name (no scheme, path or wildcard)"),
    ("user@api.example.com", True, "is not a host name (no scheme, path or wildcard)"),
    ("api.example.com?x=1", True, "is not a host name (no scheme, path or wildcard)"),
    ("api example.com", True, "is not a host name (no scheme, path or wildcard)"),
    ("", True, "is not a host name (no scheme, path or wildcard)"),
    ("Api.Example.com", True, 'must be lowercase: "api.example.com"'),
    ("bücher.de", True, 'must be written in xn-- (punycode) form: "xn--bcher-kva.de"'),
    ("xn--zz.de", True, "invalid punycode label"),
    ("ab--cd.example", True, "hyphens in the third and fourth place"),
    ("-api.example.com", True, "invalid label"),
    ("api_v1.example.com", True, "invalid label"),
    ("api..example.com", True, "invalid label"),
    ("api.example.com.", True, "must not end with a dot"),
    ("api.example.com:0", True, "invalid port"),
    ("api.example.com:65536", True, "invalid port"),
    ("api.example.com:08443", True, "invalid port"),
    ("api.example.com:https", True, "invalid port"),
    ("api.example.com:", True, "invalid port"),
    ("127.0.0.1", False, "IP addresses are allowed only with the local-network flag"),
    ("8.8.8.8:53", False, "IP addresses are allowed only with the local-network flag"),
    ("[::1]", False, "IP addresses are allowed only with the local-network flag"),
    ("localhost", False, "localhost is allowed only with the local-network flag"),
    ("app.localhost:3000", False, "localhost is allowed only with the local-network flag"),
    ("0x7f.1", True, "not a host name or a dotted-decimal IPv4 address"),
    ("2130706433", True, "not a host name or a dotted-decimal IPv4 address"),
    ("1.2.3.4.5", True, "not a host name or a dotted-decimal IPv4 address"),
    ("example.123", True, "its last label is a number"),
    ("[::1", True, "write host or host:port"),
    ("[fe80::1%eth0]", True, "not a valid IPv6 address"),
    ("[0:0:0:0:0:0:0:1]", True, 'short form: "[::1]"'),
    ("a" * 64 + ".example.com", True, "invalid label"),
]


@pytest.mark.parametrize(
    ("text", "allow_local", "reason"), INVALID_ENTRIES, ids=[t[:40] for t, _, _ in INVALID_ENTRIES]
)
def test_invalid_host_entries_fail_with_the_reason(text: str, allow_local: bool, reason: str) -> None:
    """P-NET-03…06, OD-P01, OD-P04: each malformed entry is reported with why it is wrong."""
    entry, problem = parse_host_entry(text, allow_local_network=allow_local)
    assert entry is None
    assert problem is not None
    assert reason in problem
    assert f'"{text}"' in problem


def test_every_problem_is_listed_with_its_json_path() -> None:
    """OD-P10: all problems at once, each as <json path>: <problem>."""
    raw = {"hosts": ["api.example.com", "https://x.com", 42, "127.0.0.1"], "reason": "", "extra": 1}
    permission, problems = parse_network_section(raw, path=PATH, draft=False)
    assert permission is None
    assert problems == [
        "permissions.network.extra: unknown key (expected hosts, allowLocalNetwork, reason)",
        "permissions.network.reason: must be a non-empty string",
        'permissions.network.hosts[1]: "https://x.com" is not a host name (no scheme, path or wildcard)',
        "permissions.network.hosts[2]: must be a string",
        'permissions.network.hosts[3]: "127.0.0.1" is an IP address; IP addresses are allowed only with '
        "the local-network flag set to true",
    ]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"reason": "r"}, "permissions.network.hosts: is required"),
        ({"hosts": "api.example.com", "reason": "r"}, "permissions.network.hosts: must be a list"),
        ({"hosts": ["api.example.com"]}, "permissions.network.reason: is required"),
        (
            {"hosts": ["api.example.com"], "reason": 5},
            "permissions.network.reason: must be a non-empty string",
        ),
        ({"hosts": [], "reason": "r"}, "permissions.network.hosts: must list at least one host"),
        (
            {"hosts": ["api.example.com"], "reason": "r", "allowLocalNetwork": "yes"},
            "permissions.network.allowLocalNetwork: must be true or false",
        ),
        (["api.example.com"], "permissions.network: must be an object"),
    ],
)
def test_section_shape_problems(raw: object, problem: str) -> None:
    """P-NET-02, P-NET-08, P-NET-09: hosts and reason are required; hosts non-empty without the flag."""
    permission, problems = parse_network_section(raw, path=PATH, draft=False)
    assert permission is None
    assert any(p.startswith(problem) for p in problems), problems


def test_empty_hosts_are_allowed_with_the_local_network_flag() -> None:
    """P-NET-08: with allowLocalNetwork true, hosts may be empty."""
    permission, problems = parse_network_section(section([], allowLocalNetwork=True), path=PATH, draft=False)
    assert problems == []
    assert permission is not None
    assert permission.allow_local_network
    assert permission.hosts == ()


def test_draft_manifest_uses_the_snake_case_flag() -> None:
    """P-NET-17: a Gem Studio draft spells the flag allow_local_network."""
    permission, problems = parse_network_section(
        section(["localhost:5173"], allow_local_network=True), path="network", draft=True
    )
    assert problems == []
    assert permission is not None
    assert permission.allow_local_network


def test_each_form_names_the_wrong_flag_spelling() -> None:
    """P-NET-17: the other form's spelling is an unknown key, and the problem names the right one."""
    _, packaged = parse_network_section(section(["a.example"], allow_local_network=True), path=PATH, draft=False)
    assert packaged == [
        'permissions.network.allow_local_network: unknown key; in notochord.json the key is "allowLocalNetwork"'
    ]
    _, draft = parse_network_section(section(["a.example"], allowLocalNetwork=True), path="network", draft=True)
    assert draft == [
        'network.allowLocalNetwork: unknown key; in a Gem Studio manifest.json the key is "allow_local_network"'
    ]


def test_an_ip_in_hosts_without_the_flag_fails_even_when_the_flag_is_misspelled() -> None:
    """P-NET-06: a misspelled flag does not count as true."""
    _, problems = parse_network_section(section(["127.0.0.1"], allow_local_network=True), path=PATH, draft=False)
    assert any("hosts[0]" in p and "IP address" in p for p in problems)


def test_absent_section_means_no_network_permission() -> None:
    assert parse_network_section(None, path=PATH, draft=False) == (None, [])


MATCHES: list[tuple[HostEntry, str, int, str, bool]] = [
    (HostEntry("api.example.com"), "api.example.com", 443, "https", True),
    (HostEntry("api.example.com"), "API.Example.COM", 443, "https", True),
    (HostEntry("api.example.com"), "api.example.com.", 443, "https", True),
    (HostEntry("api.example.com"), "api.example.com", 80, "http", True),
    (HostEntry("api.example.com"), "api.example.com", 8443, "https", False),
    (HostEntry("api.example.com"), "api.example.com", 80, "https", False),
    (HostEntry("api.example.com"), "api.example.com", 443, "http", False),
    (HostEntry("api.example.com"), "evil-api.example.com", 443, "https", False),
    (HostEntry("api.example.com"), "api.example.com.evil.test", 443, "https", False),
    (HostEntry("example.com"), "api.example.com", 443, "https", False),
    (HostEntry("api.example.com", 8443), "api.example.com", 8443, "https", True),
    (HostEntry("api.example.com", 8443), "api.example.com", 443, "https", False),
    (HostEntry("api.example.com", 443), "api.example.com", 443, "https", True),
    (HostEntry("api.example.com", 443), "api.example.com", 80, "http", False),
    (HostEntry("xn--bcher-kva.de"), "bücher.de", 443, "https", True),
    (HostEntry("xn--bcher-kva.de"), "BÜCHER.de", 443, "https", True),
    (HostEntry("93.184.216.34"), "93.184.216.34", 443, "https", True),
    (HostEntry("93.184.216.34"), "1572395042", 443, "https", True),
    (HostEntry("2001:db8::1", 8443), "2001:db8:0::1", 8443, "https", True),
]


@pytest.mark.parametrize(("entry", "host", "port", "scheme", "expected"), MATCHES)
def test_host_entry_matching(entry: HostEntry, host: str, port: int, scheme: str, expected: bool) -> None:
    """P-NET-04, OD-P04: case-insensitive, IDNA-encoded, bare entry = scheme's default port only."""
    assert entry.matches(host, port, scheme) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.example.com/doc/1", True),
        ("HTTPS://API.EXAMPLE.COM/doc", True),
        ("https://api.example.com:443/doc", True),
        ("http://api.example.com/doc", True),
        ("https://api.example.com:8443/doc", False),
        ("https://files.example.com:9000/a", True),
        ("https://files.example.com/a", False),
        ("https://other.example.com/", False),
        ("https://user@api.example.com/", False),
        ("ftp://api.example.com/file", False),
        ("not a url", False),
        ("https:///nohost", False),
    ],
)
def test_source_uri_host_check(url: str, expected: bool) -> None:
    """OD-K54, K-DOC-08: a sourceUri on the default port matches a bare entry; others need host:port."""
    entries = (HostEntry("api.example.com"), HostEntry("files.example.com", 9000))
    assert host_matches_url(entries, url) is expected
