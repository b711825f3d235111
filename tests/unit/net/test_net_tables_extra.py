"""More table rows: address spellings and their class, and manifest ``hosts`` entries.

Together with the tables of ``test_net_addresses`` and ``test_net_hosts`` these make the acceptance
tables: at least 150 address spellings with their class (P-NET-13, P-NET-15, OD-P02) and at least 60
manifest ``hosts`` cases (P-NET-03…06, OD-P01, OD-P04). Every row here is new: the last tests prove
that none repeats a row of the other tables.

The rows aim at what an attacker would type: a private address in octal, hexadecimal or as one
number; an IPv6 form that carries an IPv4 address; the first and last address of each local range
and their neighbours outside it; and host entries that smuggle a scheme, a path, a port or a
look-alike name past the manifest check.
"""

from __future__ import annotations

import pytest
from test_net_addresses import CLASSIFICATION_TABLE
from test_net_hosts import INVALID_ENTRIES, MATCHES, VALID_ENTRIES

from notochord.net.addresses import AddressClass, classify_host_name, classify_ip, parse_ip_literal
from notochord.net.hosts import HostEntry, parse_host_entry, parse_network_section

LOCAL = AddressClass.LOCAL
EXTERNAL = AddressClass.EXTERNAL

# (spelling as it may appear in a URL host, the address it denotes, expected class)
MORE_SPELLINGS: list[tuple[str, str, AddressClass]] = [
    # loopback, spelled every way inet_aton reads it
    ("127.0.0.0", "127.0.0.0", LOCAL),
    ("127.127.127.127", "127.127.127.127", LOCAL),
    ("0x7f000001", "127.0.0.1", LOCAL),
    ("0x7f.0x00.0x00.0x01", "127.0.0.1", LOCAL),
    ("0177.1", "127.0.0.1", LOCAL),
    ("0177.0.1", "127.0.0.1", LOCAL),
    ("00000177.0.0.1", "127.0.0.1", LOCAL),
    ("127.0.0.01", "127.0.0.1", LOCAL),
    ("127.0x0.0.1", "127.0.0.1", LOCAL),
    ("127.000.000.001", "127.0.0.1", LOCAL),
    ("2130706434", "127.0.0.2", LOCAL),
    ("0x7f.0xffffff", "127.255.255.255", LOCAL),
    ("127.16777215", "127.255.255.255", LOCAL),
    ("0x7f.1.", "127.0.0.1", LOCAL),
    # private ranges, their edges and their disguises
    ("10.255.255.255", "10.255.255.255", LOCAL),
    ("0xa.0.0.1", "10.0.0.1", LOCAL),
    ("012.1", "10.0.0.1", LOCAL),
    ("0xa000001", "10.0.0.1", LOCAL),
    ("10.0.1", "10.0.0.1", LOCAL),
    ("172.16.1", "172.16.0.1", LOCAL),
    ("0xac.0x10.0.1", "172.16.0.1", LOCAL),
    ("2886729729", "172.16.0.1", LOCAL),
    ("192.168.0.1", "192.168.0.1", LOCAL),
    ("3232235521", "192.168.0.1", LOCAL),
    ("0300.0250.0.1", "192.168.0.1", LOCAL),
    ("192.168.65535", "192.168.255.255", LOCAL),
    ("0xc0a80001", "192.168.0.1", LOCAL),
    # the cloud metadata address in its disguises
    ("0251.0376.0251.0376", "169.254.169.254", LOCAL),
    ("169.254.43518", "169.254.169.254", LOCAL),
    ("0xa9fea9fe", "169.254.169.254", LOCAL),
    ("2852039166", "169.254.169.254", LOCAL),
    # shared, this-network, special purpose, multicast, reserved
    ("100.64.0.0", "100.64.0.0", LOCAL),
    ("100.100.100.100", "100.100.100.100", LOCAL),
    ("0.0.0.1", "0.0.0.1", LOCAL),
    ("0x0", "0.0.0.0", LOCAL),
    ("000.000.000.000", "0.0.0.0", LOCAL),
    ("192.0.0.170", "192.0.0.170", LOCAL),
    ("198.18.255.255", "198.18.255.255", LOCAL),
    ("233.252.0.1", "233.252.0.1", LOCAL),
    ("255.255.255.254", "255.255.255.254", LOCAL),
    ("250.1.2.3", "250.1.2.3", LOCAL),
    # public IPv4: look-alikes of private ranges and the neighbours of every local range
    ("0254.0xa9.0xa9.0376", "172.169.169.254", EXTERNAL),
    ("010.010.010.010", "8.8.8.8", EXTERNAL),
    ("8.8.4.4", "8.8.4.4", EXTERNAL),
    ("9.9.9.9", "9.9.9.9", EXTERNAL),
    ("1.0.0.1", "1.0.0.1", EXTERNAL),
    ("0x8080808", "8.8.8.8", EXTERNAL),
    ("0x1.0x1.0x1.0x1", "1.1.1.1", EXTERNAL),
    ("16843009", "1.1.1.1", EXTERNAL),
    ("1.1.257", "1.1.1.1", EXTERNAL),
    ("9.255.255.255", "9.255.255.255", EXTERNAL),
    ("126.255.255.255", "126.255.255.255", EXTERNAL),
    ("128.0.0.0", "128.0.0.0", EXTERNAL),
    ("169.253.255.255", "169.253.255.255", EXTERNAL),
    ("169.255.0.0", "169.255.0.0", EXTERNAL),
    ("192.167.255.255", "192.167.255.255", EXTERNAL),
    ("192.0.1.1", "192.0.1.1", EXTERNAL),
    ("192.0.3.0", "192.0.3.0", EXTERNAL),
    ("198.51.99.255", "198.51.99.255", EXTERNAL),
    ("198.51.101.0", "198.51.101.0", EXTERNAL),
    ("203.0.112.255", "203.0.112.255", EXTERNAL),
    ("203.0.114.0", "203.0.114.0", EXTERNAL),
    ("192.88.98.255", "192.88.98.255", EXTERNAL),
    ("192.52.193.1", "192.52.193.1", EXTERNAL),
    ("192.175.48.1", "192.175.48.1", EXTERNAL),
    ("1.2.3.4", "1.2.3.4", EXTERNAL),
    ("0x5db8d822", "93.184.216.34", EXTERNAL),
    # IPv6 unspecified and loopback in other spellings
    ("::0", "::", LOCAL),
    ("0:0:0:0:0:0:0:0", "::", LOCAL),
    ("::0.0.0.1", "::1", LOCAL),
    ("::0.0.0.0", "::", LOCAL),
    # IPv4-mapped, -translated and -compatible forms carrying a local address
    ("[::ffff:7f00:1]", "::ffff:7f00:1", LOCAL),
    ("::ffff:a00:1", "::ffff:10.0.0.1", LOCAL),
    ("::ffff:c0a8:101", "::ffff:192.168.1.1", LOCAL),
    ("::ffff:a9fe:a9fe", "::ffff:169.254.169.254", LOCAL),
    ("::ffff:0.0.0.0", "::ffff:0.0.0.0", LOCAL),
    ("::ffff:100.64.0.1", "::ffff:100.64.0.1", LOCAL),
    ("0:0:0:0:0:ffff:127.0.0.1", "::ffff:127.0.0.1", LOCAL),
    ("::FFFF:127.0.0.1", "::ffff:127.0.0.1", LOCAL),
    ("::ffff:0:a00:1", "::ffff:0:10.0.0.1", LOCAL),
    # NAT64 and 6to4 carrying a local address
    ("64:ff9b::10.0.0.1", "64:ff9b::a00:1", LOCAL),
    ("64:ff9b::c0a8:101", "64:ff9b::c0a8:101", LOCAL),
    ("64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe", LOCAL),
    ("64:ff9b:1:abcd::1", "64:ff9b:1:abcd::1", LOCAL),
    ("2002:a00:1::", "2002:a00:1::", LOCAL),
    ("2002:a9fe:a9fe::1", "2002:a9fe:a9fe::1", LOCAL),
    ("2002:7f00:1:ffff::", "2002:7f00:1:ffff::", LOCAL),
    # unique local, link-local, multicast, documentation, IETF blocks, outside 2000::/3
    ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LOCAL),
    ("fc00::", "fc00::", LOCAL),
    ("fe80::abcd%lo", "fe80::abcd", LOCAL),
    ("febf:ffff::1", "febf:ffff::1", LOCAL),
    ("ff0e::1", "ff0e::1", LOCAL),
    ("ff02::fb", "ff02::fb", LOCAL),
    ("2001:db8:ffff::1", "2001:db8:ffff::1", LOCAL),
    ("2001:0DB8::1", "2001:db8::1", LOCAL),
    ("2001:1::1", "2001:1::1", LOCAL),
    ("2001:10::1", "2001:10::1", LOCAL),
    ("2001:20::1", "2001:20::1", LOCAL),
    ("2001:1ff:ffff::1", "2001:1ff:ffff::1", LOCAL),
    ("100::", "100::", LOCAL),
    ("1::1", "1::1", LOCAL),
    ("8000::1", "8000::1", LOCAL),
    ("e000::1", "e000::1", LOCAL),
    ("3fff:fff::1", "3fff:fff::1", LOCAL),
    # public IPv6, including the neighbours of the local blocks inside 2000::/3
    ("2001:200::1", "2001:200::1", EXTERNAL),
    ("2001:4860:4860::8844", "2001:4860:4860::8844", EXTERNAL),
    ("2001:db9::1", "2001:db9::1", EXTERNAL),
    ("2001:db7:ffff::1", "2001:db7:ffff::1", EXTERNAL),
    ("3fff:1000::1", "3fff:1000::1", EXTERNAL),
    ("2a03:2880:f12f:83:face:b00c:0:25de", "2a03:2880:f12f:83:face:b00c:0:25de", EXTERNAL),
    ("2600::", "2600::", EXTERNAL),
    ("[2606:4700:4700::1001]", "2606:4700:4700::1001", EXTERNAL),
    # embedding forms carrying a public address
    ("::ffff:1.1.1.1", "::ffff:1.1.1.1", EXTERNAL),
    ("::ffff:101:101", "::ffff:1.1.1.1", EXTERNAL),
    ("::ffff:0:1.1.1.1", "::ffff:0:101:101", EXTERNAL),
    ("::9.9.9.9", "::909:909", EXTERNAL),
    ("64:ff9b::101:101", "64:ff9b::1.1.1.1", EXTERNAL),
    ("2002:101:101::1", "2002:101:101::1", EXTERNAL),
]


@pytest.mark.parametrize(("spelling", "address", "expected"), MORE_SPELLINGS, ids=[row[0] for row in MORE_SPELLINGS])
def test_each_spelling_denotes_its_address_and_lands_in_its_class(
    spelling: str, address: str, expected: AddressClass
) -> None:
    """P-NET-13, P-NET-15, OD-P02, OD-P05: read as the system would, then put in exactly one class."""
    parsed = parse_ip_literal(spelling)
    assert parsed is not None, f"{spelling} must be read as an address, never looked up as a name"
    assert parsed == parse_ip_literal(address)
    assert classify_ip(parsed) is expected
    assert classify_host_name(spelling) is expected


def test_the_address_tables_hold_at_least_150_distinct_spellings() -> None:
    """Acceptance: at least 150 address spellings with their class, none counted twice."""
    existing = {spelling for spelling, _ in CLASSIFICATION_TABLE}
    added = [spelling for spelling, _, _ in MORE_SPELLINGS]
    assert len(set(added)) == len(added), "a spelling is listed twice in this table"
    assert existing.isdisjoint(added), sorted(existing.intersection(added))
    assert len(existing) + len(added) >= 150


def test_both_classes_are_well_represented() -> None:
    classes = [expected for _, _, expected in MORE_SPELLINGS]
    assert classes.count(LOCAL) >= 40
    assert classes.count(EXTERNAL) >= 30


# -- manifest hosts entries ----------------------------------------------------------------------

# (entry as written in hosts, allowLocalNetwork, the parsed entry)
MORE_VALID_ENTRIES: list[tuple[str, bool, HostEntry]] = [
    ("api.example.com:8080", False, HostEntry("api.example.com", 8080)),
    ("a.b.c.d.example", False, HostEntry("a.b.c.d.example")),
    ("x.io", False, HostEntry("x.io")),
    ("1password.com", False, HostEntry("1password.com")),
    ("123.example.com", False, HostEntry("123.example.com")),
    ("xn--fiqs8s.example", False, HostEntry("xn--fiqs8s.example")),
    ("xn--mnchen-3ya.de", False, HostEntry("xn--mnchen-3ya.de")),
    ("a", False, HostEntry("a")),
    ("a" * 63 + ".example.com", False, HostEntry("a" * 63 + ".example.com")),
    ("sub-domain.example-site.co.uk", False, HostEntry("sub-domain.example-site.co.uk")),
    ("api.example.com:443", False, HostEntry("api.example.com", 443)),
    ("[::1]:5173", True, HostEntry("::1", 5173)),
    ("::1", True, HostEntry("::1")),
    ("10.0.0.5:8080", True, HostEntry("10.0.0.5", 8080)),
    ("192.168.1.20", True, HostEntry("192.168.1.20")),
    ("app.localhost", True, HostEntry("app.localhost")),
    ("[fe80::1]", True, HostEntry("fe80::1")),
    ("[2001:db8::1]", True, HostEntry("2001:db8::1")),
    ("8.8.8.8", True, HostEntry("8.8.8.8")),
    ("api.example.com", True, HostEntry("api.example.com")),
]

# (entry as written in hosts, allowLocalNetwork, part of the reported problem)
NOT_A_HOST = "is not a host name (no scheme, path or wildcard)"
MORE_INVALID_ENTRIES: list[tuple[str, bool, str]] = [
    ("http://api.example.com", True, NOT_A_HOST),
    ("api.example.com/", True, NOT_A_HOST),
    ("api.example.com#frag", True, NOT_A_HOST),
    ("api.example.com\\path", True, NOT_A_HOST),
    ("\tapi.example.com", True, NOT_A_HOST),
    ("api.example.com\x00", True, NOT_A_HOST),
    ("api.exa mple.com", True, NOT_A_HOST),
    ("*", True, NOT_A_HOST),
    ("*.com", True, NOT_A_HOST),
    ("API.example.com:443", True, 'must be lowercase: "api.example.com:443"'),
    ("api.EXAMPLE.com", True, 'must be lowercase: "api.example.com"'),
    ("LOCALHOST", True, 'must be lowercase: "localhost"'),
    ("xn--MNCHEN-3ya.de", True, "must be lowercase"),
    ("straße.de", True, 'must be written in xn-- (punycode) form: "xn--strae-oqa.de"'),
    ("münchen.de", True, 'must be written in xn-- (punycode) form: "xn--mnchen-3ya.de"'),
    ("中国.example", True, 'must be written in xn-- (punycode) form: "xn--fiqs8s.example"'),
    ("xn--.de", True, "invalid label"),
    ("api-.example.com", True, "invalid label"),
    ("api.-example.com", True, "invalid label"),
    (".example.com", True, "invalid label"),
    ("a" * 250 + ".com", True, "is longer than 253 characters"),
    ("example.com.", True, "must not end with a dot"),
    ("api.example.com:-1", True, "invalid port"),
    ("api.example.com:1.5", True, "invalid port"),
    ("api.example.com:\u0663\u0663", True, "invalid port"),
    ("api.example.com:443:443", True, "not a valid IPv6 address"),
    ("[::1]:0", True, "invalid port"),
    ("[::1]x", True, "write host or host:port"),
    ("[]", True, "has no host name"),
    (":8080", True, "has no host name"),
    ("127.1", True, "not a host name or a dotted-decimal IPv4 address"),
    ("0177.0.0.1", True, "not a host name or a dotted-decimal IPv4 address"),
    ("127.000.0.1", True, "not a host name or a dotted-decimal IPv4 address"),
    ("1.2.3", True, "not a host name or a dotted-decimal IPv4 address"),
    ("[::ffff:127.0.0.1]", True, 'short form: "[::ffff:7f00:1]"'),
    ("10.0.0.1", False, "IP addresses are allowed only with the local-network flag"),
    ("8.8.8.8", False, "IP addresses are allowed only with the local-network flag"),
    ("[2001:db8::1]:443", False, "IP addresses are allowed only with the local-network flag"),
    ("localhost:5173", False, "localhost is allowed only with the local-network flag"),
    ("a.b.localhost", False, "localhost is allowed only with the local-network flag"),
]


@pytest.mark.parametrize(
    ("text", "allow_local", "expected"),
    MORE_VALID_ENTRIES,
    ids=[f"{t[:40]}-local={a}" for t, a, _ in MORE_VALID_ENTRIES],
)
def test_more_valid_host_entries(text: str, allow_local: bool, expected: HostEntry) -> None:
    """P-NET-03…06, OD-P01: a host name, optionally with its port; IPs and localhost only with the flag."""
    entry, problem = parse_host_entry(text, allow_local_network=allow_local)
    assert problem is None
    assert entry == expected
    permission, problems = parse_network_section(
        {"hosts": [text], "allowLocalNetwork": allow_local, "reason": "r"}, path="permissions.network", draft=False
    )
    assert problems == []
    assert permission is not None
    assert permission.hosts == (expected,)


@pytest.mark.parametrize(
    ("text", "allow_local", "reason"),
    MORE_INVALID_ENTRIES,
    ids=[f"{t[:40]!r}-local={a}" for t, a, _ in MORE_INVALID_ENTRIES],
)
def test_more_invalid_host_entries_are_reported_at_their_path(text: str, allow_local: bool, reason: str) -> None:
    """P-NET-03 (no scheme, path or wildcard), P-NET-04/05 (port, punycode), P-NET-06, OD-P10."""
    entry, problem = parse_host_entry(text, allow_local_network=allow_local)
    assert entry is None
    assert problem is not None
    assert reason in problem
    permission, problems = parse_network_section(
        {"hosts": ["ok.example.com", text], "allowLocalNetwork": allow_local, "reason": "r"},
        path="permissions.network",
        draft=False,
    )
    assert permission is None, "one bad entry fails the whole section"
    assert [p for p in problems if p.startswith("permissions.network.hosts[1]: ")] == [
        f"permissions.network.hosts[1]: {problem}"
    ]


# (entry, requested host, port, scheme, whether the request is covered)
MORE_MATCHES: list[tuple[HostEntry, str, int, str, bool]] = [
    (HostEntry("api.example.com", 80), "api.example.com", 80, "https", True),
    (HostEntry("api.example.com", 80), "api.example.com", 443, "https", False),
    (HostEntry("localhost", 5173), "LOCALHOST", 5173, "http", True),
    (HostEntry("localhost", 5173), "localhost", 5174, "http", False),
    (HostEntry("::1", 8080), "0:0::1", 8080, "http", True),
    (HostEntry("::1", 8080), "::ffff:127.0.0.1", 8080, "http", False),
    (HostEntry("127.0.0.1"), "::ffff:127.0.0.1", 80, "http", True),
    (HostEntry("127.0.0.1"), "127.1", 80, "http", True),
    (HostEntry("127.0.0.1"), "127.0.0.2", 80, "http", False),
    (HostEntry("api.example.com"), "api.example.com", 443, "ftp", False),
    (HostEntry("xn--mnchen-3ya.de"), "MÜNCHEN.DE", 443, "https", True),
    (HostEntry("example.com"), "example.com.evil", 443, "https", False),
    (HostEntry("api.example.com"), "api.example.com..", 443, "https", False),
    (HostEntry("api.example.com"), "api-example.com", 443, "https", False),
]


@pytest.mark.parametrize(("entry", "host", "port", "scheme", "expected"), MORE_MATCHES)
def test_more_host_entry_matching(entry: HostEntry, host: str, port: int, scheme: str, expected: bool) -> None:
    """P-NET-04, OD-P04: a written port is kept as written; names compare after IDNA and case folding."""
    assert entry.matches(host, port, scheme) is expected


def test_the_hosts_tables_hold_at_least_60_distinct_cases() -> None:
    """Acceptance: at least 60 manifest ``hosts`` cases, none counted twice."""
    existing = {(t, a) for t, a, _ in VALID_ENTRIES} | {(t, a) for t, a, _ in INVALID_ENTRIES}
    added = [(t, a) for t, a, _ in MORE_VALID_ENTRIES] + [(t, a) for t, a, _ in MORE_INVALID_ENTRIES]
    assert len(set(added)) == len(added), "an entry is listed twice in this file"
    assert existing.isdisjoint(added), sorted(existing.intersection(added))
    assert len(existing) + len(added) >= 60
    matches = {(e, h, p, s) for e, h, p, s, _ in MATCHES}
    assert matches.isdisjoint((e, h, p, s) for e, h, p, s, _ in MORE_MATCHES)
