"""Address classes: every address is either external network or local machine and internal network.

Rules (P-NET-13, P-NET-15, OD-P02, OD-P05):

- :func:`classify_ip` puts every IPv4 and IPv6 address in exactly one of two classes,
  :attr:`AddressClass.EXTERNAL` or :attr:`AddressClass.LOCAL`. An address is external only if it is
  outside every range listed below; everything the IANA IPv4/IPv6 special-purpose registries mark
  as not globally reachable, and every range a request has no business reaching (documentation,
  benchmarking, multicast, reserved, deprecated relays), is local. ``ipaddress.is_private`` and
  ``is_global`` are not consulted: their tables change between Python versions and classify some
  embedding forms by the outer address only.
- Addresses that carry an IPv4 address inside an IPv6 one are classified by the embedded IPv4
  address: IPv4-mapped ``::ffff:0:0/96``, IPv4-compatible ``::/96``, IPv4-translated
  ``::ffff:0:0:0/96``, NAT64 ``64:ff9b::/96`` and 6to4 ``2002::/16``. The local-use NAT64 prefix
  ``64:ff9b:1::/48`` is local as a whole: IANA marks it not globally reachable, and where the IPv4
  address sits inside it depends on the prefix length the operator chose. Teredo ``2001::/32`` is
  local as a whole: the client address is obfuscated and reached through a relay chosen by the
  tunnel, so the real destination cannot be checked.
- IPv6 outside ``2000::/3`` (the only range allocated for global unicast) is local, apart from the
  embedding forms above.
- :func:`parse_ip_literal` reads an address the way libc's ``inet_aton`` does, so that a host such as
  ``0177.0.0.1``, ``0x7f.1``, ``127.1`` or ``2130706433`` is seen as the address the operating
  system would connect to, never as a name.
- Names: ``localhost`` and every ``*.localhost`` name are local by name; any other name is local
  when any of the addresses it resolves to is local (:func:`classify_target`).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

__all__ = [
    "AddressClass",
    "IPAddress",
    "classify_host_name",
    "classify_ip",
    "classify_target",
    "connect_address",
    "embedded_ipv4",
    "is_local_name",
    "normalize_host_name",
    "parse_ip_literal",
    "same_address",
]

IPAddress = IPv4Address | IPv6Address


class AddressClass(StrEnum):
    """The two address classes of P-NET-13."""

    EXTERNAL = "external"
    LOCAL = "local"


# IANA IPv4 special-purpose registry, every block whose "globally reachable" is not plainly true, plus
# multicast and the deprecated 6to4 relay anycast. AS112 (192.31.196/24, 192.175.48/24) and AMT
# (192.52.193/24) are globally reachable and stay external.
_LOCAL_V4: tuple[IPv4Network, ...] = tuple(
    IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (CGNAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments (DS-Lite, NAT64 discovery, ...)
        "192.0.2.0/24",  # TEST-NET-1
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # TEST-NET-2
        "203.0.113.0/24",  # TEST-NET-3
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, includes limited broadcast 255.255.255.255
    )
)

_V6_GLOBAL_UNICAST = IPv6Network("2000::/3")
_V6_MAPPED = IPv6Network("::ffff:0:0/96")
_V6_TRANSLATED = IPv6Network("::ffff:0:0:0/96")
_V6_COMPATIBLE = IPv6Network("::/96")
_V6_NAT64 = IPv6Network("64:ff9b::/96")
_V6_SIX_TO_FOUR = IPv6Network("2002::/16")

# Inside 2000::/3, every block that is not globally reachable or must never be a request target.
_LOCAL_V6_IN_GLOBAL: tuple[IPv6Network, ...] = tuple(
    IPv6Network(n)
    for n in (
        "2001::/23",  # IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID ...
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
    )
)

_V4_BITS = 32
_V4_MAX = (1 << _V4_BITS) - 1
_MAX_PART_DIGITS = 11  # 0o37777777777, the largest 32-bit part in octal


def parse_ip_literal(text: str) -> IPAddress | None:
    """Read ``text`` as an IP address the way the operating system would, or return None.

    IPv4 follows ``inet_aton``: one to four dot-separated parts, each decimal, octal (leading ``0``)
    or hexadecimal (``0x``); the last part fills the remaining bytes (``127.1`` is ``127.0.0.1``,
    ``10.1`` is ``10.0.0.1``, ``2130706433`` is ``127.0.0.1``). One trailing dot is accepted, as URL
    parsers do. IPv6 may be bracketed (``[::1]``); zone ids (``fe80::1%eth0``) are accepted and
    dropped, since the zone does not change the class.

    Examples:
        >>> parse_ip_literal("0x7f.1")
        IPv4Address('127.0.0.1')
        >>> parse_ip_literal("api.example.com") is None
        True
    """
    candidate = text.strip()
    if not candidate:
        return None
    if candidate.startswith("[") and candidate.endswith("]"):
        candidate = candidate[1:-1]
    if ":" in candidate:
        return _parse_ipv6(candidate)
    return _parse_ipv4_inet_aton(candidate)


def _parse_ipv6(text: str) -> IPv6Address | None:
    address, _, _zone = text.partition("%")
    try:
        return IPv6Address(address)
    except ValueError:
        return None


def _parse_ipv4_part(part: str) -> int | None:
    lowered = part.lower()
    if lowered.startswith("0x"):
        digits, base = lowered[2:], 16
        if digits == "":
            return 0  # inet_aton and the WHATWG parser both read a bare "0x" as zero
    elif len(lowered) > 1 and lowered.startswith("0"):
        digits, base = lowered[1:], 8
    else:
        digits, base = lowered, 10
    allowed = "0123456789abcdef"[:base]
    if not digits or any(ch not in allowed for ch in digits):
        return None
    # every part of an address fits in 32 bits, 11 digits in any of the three bases: a longer one
    # is no address, and int() refuses to read a decimal of thousands of digits at all
    if len(digits.lstrip("0")) > _MAX_PART_DIGITS:
        return None
    return int(digits, base)


def _parse_ipv4_inet_aton(text: str) -> IPv4Address | None:
    parts = text.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        value = _parse_ipv4_part(part)
        if value is None:
            return None
        values.append(value)
    *head, last = values
    if any(v > 0xFF for v in head):
        return None
    tail_bytes = 4 - len(head)
    if last >= 1 << (8 * tail_bytes):
        return None
    number = 0
    for v in head:
        number = (number << 8) | v
    number = (number << (8 * tail_bytes)) | last
    return IPv4Address(number)


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """Return the IPv4 address an IPv6 address carries, for the forms classified by it, else None.

    Forms: IPv4-mapped, IPv4-translated, IPv4-compatible (except ``::`` and ``::1``), NAT64
    ``64:ff9b::/96`` and 6to4 ``2002::/16``.
    """
    number = int(address)
    if address in _V6_MAPPED or address in _V6_TRANSLATED or address in _V6_NAT64:
        return IPv4Address(number & _V4_MAX)
    if address in _V6_COMPATIBLE and number > 1:
        return IPv4Address(number & _V4_MAX)
    if address in _V6_SIX_TO_FOUR:
        return IPv4Address((number >> 80) & _V4_MAX)
    return None


def _classify_v4(address: IPv4Address) -> AddressClass:
    if any(address in network for network in _LOCAL_V4):
        return AddressClass.LOCAL
    return AddressClass.EXTERNAL


def _classify_v6(address: IPv6Address) -> AddressClass:
    inner = embedded_ipv4(address)
    if inner is not None:
        return _classify_v4(inner)
    # ::, ::1, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, the
    # local-use NAT64 prefix 64:ff9b:1::/48, discard-only 100::/64 and SRv6 5f00::/16 all lie
    # outside 2000::/3.
    if address not in _V6_GLOBAL_UNICAST:
        return AddressClass.LOCAL
    if any(address in network for network in _LOCAL_V6_IN_GLOBAL):
        return AddressClass.LOCAL
    return AddressClass.EXTERNAL


def classify_ip(address: IPAddress) -> AddressClass:
    """Return the class of one address (P-NET-13, OD-P02)."""
    if isinstance(address, IPv4Address):
        return _classify_v4(address)
    return _classify_v6(address)


def normalize_host_name(host: str) -> str:
    """Lowercase a host name and drop one trailing dot (``Example.COM.`` is ``example.com``)."""
    lowered = host.strip().lower()
    return lowered[:-1] if lowered.endswith(".") and lowered != "." else lowered


def is_local_name(host: str) -> bool:
    """True for ``localhost`` and every ``*.localhost`` name, which never leave the machine."""
    name = normalize_host_name(host)
    return name == "localhost" or name.endswith(".localhost")


def classify_host_name(host: str) -> AddressClass | None:
    """Class of a host known without resolving it, or None when only resolution can tell.

    IP literals in any spelling are classified by their address; ``localhost`` names are local.
    """
    if is_local_name(host):
        return AddressClass.LOCAL
    literal = parse_ip_literal(host)
    if literal is not None:
        return classify_ip(literal)
    return None


def classify_target(host: str, resolved: Iterable[IPAddress]) -> AddressClass:
    """Class of a request target: local if the name or ANY resolved address is local (OD-P05)."""
    if classify_host_name(host) is AddressClass.LOCAL:
        return AddressClass.LOCAL
    if any(classify_ip(address) is AddressClass.LOCAL for address in resolved):
        return AddressClass.LOCAL
    return AddressClass.EXTERNAL


def same_address(left: IPAddress, right: IPAddress) -> bool:
    """Compare two addresses, treating ``::ffff:a.b.c.d`` as ``a.b.c.d``."""
    return _unmap(left) == _unmap(right)


def _unmap(address: IPAddress) -> IPAddress:
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def connect_address(address: IPAddress) -> str:
    """The host string to connect to for a checked address (IPv4-mapped addresses as IPv4)."""
    return str(_unmap(address))
