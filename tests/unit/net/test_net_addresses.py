"""Address classification: every address is external or local (P-NET-13, P-NET-15, OD-P02, OD-P05)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address

import pytest

from notochord.net.addresses import (
    AddressClass,
    classify_host_name,
    classify_ip,
    classify_target,
    embedded_ipv4,
    is_local_name,
    parse_ip_literal,
)

LOCAL = AddressClass.LOCAL
EXTERNAL = AddressClass.EXTERNAL

# (spelling as it may appear in a URL host, expected class)
CLASSIFICATION_TABLE: list[tuple[str, AddressClass]] = [
    # IPv4 loopback in every inet_aton spelling
    ("127.0.0.1", LOCAL),
    ("127.255.255.254", LOCAL),
    ("127.1", LOCAL),
    ("0177.0.0.1", LOCAL),
    ("0x7f.1", LOCAL),
    ("0x7f.0.0.1", LOCAL),
    ("0x7F000001", LOCAL),
    ("2130706433", LOCAL),
    ("017700000001", LOCAL),
    ("127.0.1", LOCAL),
    ("127.0.0.1.", LOCAL),
    # private, shared, link-local, this-network
    ("10.0.0.1", LOCAL),
    ("10.1", LOCAL),
    ("012.0.0.1", LOCAL),
    ("167772161", LOCAL),
    ("172.16.0.1", LOCAL),
    ("172.31.255.255", LOCAL),
    ("192.168.1.1", LOCAL),
    ("0xc0.0xa8.1.1", LOCAL),
    ("169.254.169.254", LOCAL),
    ("100.64.0.1", LOCAL),
    ("100.127.255.255", LOCAL),
    ("0.0.0.0", LOCAL),
    ("0", LOCAL),
    ("0.1.2.3", LOCAL),
    # special-purpose registry blocks
    ("192.0.0.1", LOCAL),
    ("192.0.0.9", LOCAL),
    ("192.0.2.10", LOCAL),
    ("198.18.0.1", LOCAL),
    ("198.19.255.255", LOCAL),
    ("198.51.100.7", LOCAL),
    ("203.0.113.5", LOCAL),
    ("192.88.99.1", LOCAL),
    ("224.0.0.1", LOCAL),
    ("239.255.255.250", LOCAL),
    ("240.0.0.1", LOCAL),
    ("255.255.255.255", LOCAL),
    # public IPv4, including the edges of local ranges
    ("8.8.8.8", EXTERNAL),
    ("1.1.1.1", EXTERNAL),
    ("134744072", EXTERNAL),
    ("0x08.0x08.0x08.0x08", EXTERNAL),
    ("93.184.216.34", EXTERNAL),
    ("172.15.255.255", EXTERNAL),
    ("172.32.0.0", EXTERNAL),
    ("100.63.255.255", EXTERNAL),
    ("100.128.0.0", EXTERNAL),
    ("192.169.0.1", EXTERNAL),
    ("198.17.255.255", EXTERNAL),
    ("198.20.0.0", EXTERNAL),
    ("192.31.196.1", EXTERNAL),
    ("11.0.0.1", EXTERNAL),
    ("223.255.255.255", EXTERNAL),
    # IPv6 loopback, unspecified, ULA, link-local, site-local, multicast
    ("::1", LOCAL),
    ("[::1]", LOCAL),
    ("0:0:0:0:0:0:0:1", LOCAL),
    ("::", LOCAL),
    ("fc00::1", LOCAL),
    ("fd12:3456:789a::1", LOCAL),
    ("fe80::1", LOCAL),
    ("fe80::1%eth0", LOCAL),
    ("febf::1", LOCAL),
    ("fec0::1", LOCAL),
    ("ff02::1", LOCAL),
    ("ff05::2", LOCAL),
    # IPv4-mapped, -compatible and -translated: by the IPv4 part
    ("::ffff:127.0.0.1", LOCAL),
    ("::ffff:7f00:1", LOCAL),
    ("::ffff:10.0.0.1", LOCAL),
    ("::ffff:169.254.169.254", LOCAL),
    ("::ffff:8.8.8.8", EXTERNAL),
    ("::127.0.0.1", LOCAL),
    ("::10.0.0.1", LOCAL),
    ("::8.8.8.8", EXTERNAL),
    ("::ffff:0:127.0.0.1", LOCAL),
    ("::ffff:0:8.8.8.8", EXTERNAL),
    # NAT64: well-known prefix by the IPv4 part, local-use prefix always local
    ("64:ff9b::127.0.0.1", LOCAL),
    ("64:ff9b::a00:1", LOCAL),
    ("64:ff9b::8.8.8.8", EXTERNAL),
    ("64:ff9b:1::8.8.8.8", LOCAL),
    ("64:ff9b:1:ffff::1", LOCAL),
    # 6to4 by the IPv4 part, Teredo and other IETF protocol blocks local
    ("2002:7f00:1::", LOCAL),
    ("2002:c0a8:101::1", LOCAL),
    ("2002:0808:0808::1", EXTERNAL),
    ("2001::1", LOCAL),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", LOCAL),
    ("2001:2::1", LOCAL),
    ("2001:db8::1", LOCAL),
    ("3fff::1", LOCAL),
    ("100::1", LOCAL),
    ("5f00::1", LOCAL),
    ("4000::1", LOCAL),
    # public IPv6
    ("2001:4860:4860::8888", EXTERNAL),
    ("2606:4700:4700::1111", EXTERNAL),
    ("2a00:1450:4001:82b::200e", EXTERNAL),
]


@pytest.mark.parametrize(("spelling", "expected"), CLASSIFICATION_TABLE, ids=[s for s, _ in CLASSIFICATION_TABLE])
def test_every_address_spelling_is_classified_as_in_the_table(spelling: str, expected: AddressClass) -> None:
    """P-NET-13, P-NET-15, OD-P02: each spelling parses and lands in exactly one class."""
    address = parse_ip_literal(spelling)
    assert address is not None
    assert classify_ip(address) is expected
    assert classify_host_name(spelling) is expected


def test_the_table_covers_at_least_sixty_addresses() -> None:
    assert len(CLASSIFICATION_TABLE) >= 60


@pytest.mark.parametrize(
    ("spelling", "address"),
    [
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("0x7f.0x0.0x0.0x1", "127.0.0.1"),
        ("1.2.3", "1.2.0.3"),
        ("0x", "0.0.0.0"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ],
)
def test_ip_literals_are_read_like_inet_aton(spelling: str, address: str) -> None:
    """OD-P05: a host the operating system would read as an address is read as that address."""
    assert parse_ip_literal(spelling) == ip_address(address)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "api.example.com",
        "1.2.3.4.5",
        "256.0.0.1",
        "1.16777216",
        "08.1.1.1",
        "0x1g.1",
        "1..1",
        "::ffff::1::",
        "localhost",
        "127.0.0.1:80",
    ],
)
def test_names_and_malformed_numbers_are_not_ip_literals(text: str) -> None:
    assert parse_ip_literal(text) is None


@pytest.mark.parametrize(
    ("address", "inner"),
    [
        ("::ffff:1.2.3.4", "1.2.3.4"),
        ("::1.2.3.4", "1.2.3.4"),
        ("64:ff9b::1.2.3.4", "1.2.3.4"),
        ("2002:102:304::", "1.2.3.4"),
        ("::ffff:0:1.2.3.4", "1.2.3.4"),
    ],
)
def test_embedded_ipv4_is_extracted_from_every_embedding_form(address: str, inner: str) -> None:
    assert embedded_ipv4(IPv6Address(address)) == IPv4Address(inner)


@pytest.mark.parametrize("address", ["::", "::1", "2001:4860::1", "64:ff9b:1::1.2.3.4"])
def test_addresses_without_a_classifying_ipv4_part_have_none(address: str) -> None:
    assert embedded_ipv4(IPv6Address(address)) is None


@pytest.mark.parametrize("name", ["localhost", "LOCALHOST", "localhost.", "app.localhost", "a.b.localhost"])
def test_localhost_names_are_local_without_resolving(name: str) -> None:
    """OD-P02: localhost and *.localhost are local by name."""
    assert is_local_name(name)
    assert classify_host_name(name) is LOCAL
    assert classify_target(name, [IPv4Address("8.8.8.8")]) is LOCAL


@pytest.mark.parametrize("name", ["localhost.example.com", "notlocalhost", "example.com"])
def test_names_merely_containing_localhost_are_not_local_by_name(name: str) -> None:
    assert not is_local_name(name)
    assert classify_host_name(name) is None


def test_a_name_resolving_to_any_local_address_is_local() -> None:
    """P-NET-15, OD-P05: wiki.corp.example.com resolving to 10.x is local, even next to a public one."""
    public, internal = IPv4Address("93.184.216.34"), IPv4Address("10.0.0.7")
    assert classify_target("wiki.corp.example.com", [internal]) is LOCAL
    assert classify_target("wiki.corp.example.com", [public, internal]) is LOCAL
    assert classify_target("wiki.corp.example.com", [public]) is EXTERNAL
    assert classify_target("api.example.com", [IPv6Address("::ffff:127.0.0.1")]) is LOCAL


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1" * 5000, None, id="a decimal of 5000 digits"),
        pytest.param("1" * 5000 + ".1", None, id="a first part of 5000 digits"),
        pytest.param("0" * 5000 + "1", IPv4Address("0.0.0.1"), id="octal 1 behind 5000 zeros"),
        pytest.param("0x" + "0" * 5000 + "7f.1", IPv4Address("127.0.0.1"), id="hex 7f behind 5000 zeros"),
    ],
)
def test_a_number_of_thousands_of_digits_is_read_like_inet_aton_not_refused_by_int(
    text: str, expected: IPv4Address | None
) -> None:
    """P-NET-06: a host of thousands of digits is no address (nor an error), and leading zeros still
    count for nothing, as ``inet_aton`` reads them."""
    assert parse_ip_literal(text) == expected
