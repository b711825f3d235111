"""The manifest ``network`` section and its host entries.

Rules (P-NET-01…09, OD-P01, OD-P04, OD-P10):

- The section is ``{"hosts": [...], "allowLocalNetwork": <bool>, "reason": "..."}``; a Gem Studio
  draft spells the flag ``allow_local_network``. Each form accepts only its own spelling, and any
  other key is a problem.
- A host entry is a host name only, optionally followed by ``:port``: no scheme, path, query,
  userinfo or wildcard. Names are lowercase ASCII; an internationalized name is written in its
  ``xn--`` form, and each ``xn--`` label must decode and re-encode to itself.
- A bare entry means the scheme's default port (443 for https, 80 for http). Any other port is a
  different host and is written ``host:port``. A port written out is kept as written: ``x.com:443``
  matches port 443 under any scheme, so that normalizing it can never widen an entry to port 80.
- Brackets hold only an IPv6 address: ``[api.example.com]`` and ``[1.2.3.4]`` are refused.
- IP literals (dotted-decimal IPv4, IPv6 bracketed when a port follows) and ``localhost`` names pass
  validation only with the local-network flag true (P-NET-06). A local address in ``hosts`` grants
  nothing by itself; the user's list decides (P-NET-19, enforced in :mod:`notochord.net.policy`).
- ``hosts`` may be empty only with the local-network flag; ``reason`` is a non-empty string.
- Every problem is reported, each as ``<json path>: <problem>``; the caller raises one
  :class:`~notochord.errors.ManifestError` with all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import idna

from notochord.net.addresses import (
    IPAddress,
    is_local_name,
    normalize_host_name,
    parse_ip_literal,
    same_address,
)

__all__ = [
    "DEFAULT_PORTS",
    "HostEntry",
    "NetworkPermission",
    "default_port",
    "encode_request_host",
    "host_matches_url",
    "parse_host_entry",
    "parse_network_section",
]

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443}

_PACKAGED_FLAG = "allowLocalNetwork"
_DRAFT_FLAG = "allow_local_network"
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_MAX_NAME = 253


def default_port(scheme: str) -> int | None:
    """The default port of a scheme (80 for http, 443 for https), or None if it has none here."""
    return DEFAULT_PORTS.get(scheme.lower())


def encode_request_host(host: str) -> str:
    """A request host as matched against entries: lowercase, IDNA-encoded, no trailing dot (OD-P04).

    Hosts that cannot be encoded are returned lowercased; they then match no entry.
    """
    name = normalize_host_name(host)
    if name.isascii():
        return name
    try:
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError:
        return name


@dataclass(frozen=True)
class HostEntry:
    """One ``hosts`` entry: a lowercase ASCII name or IP literal, and a port or None (default port)."""

    host: str
    port: int | None = None

    @property
    def address(self) -> IPAddress | None:
        """The entry's IP address when the entry is an IP literal."""
        return parse_ip_literal(self.host) if _looks_like_ip_entry(self.host) else None

    def matches(self, host: str, port: int, scheme: str) -> bool:
        """True if a request to ``scheme://host:port`` is covered by this entry (OD-P04).

        ``host`` is compared case-insensitively after IDNA encoding; IP literals are compared as
        addresses. An entry without a port matches only the scheme's default port.
        """
        wanted_port = self.port if self.port is not None else default_port(scheme)
        if wanted_port is None or port != wanted_port:
            return False
        mine = self.address
        if mine is not None:
            theirs = parse_ip_literal(host)
            return theirs is not None and same_address(mine, theirs)
        return encode_request_host(host) == self.host

    def __str__(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port is None else f"{shown}:{self.port}"


@dataclass(frozen=True)
class NetworkPermission:
    """The parsed ``permissions.network`` section of a manifest (P-NET-01)."""

    hosts: tuple[HostEntry, ...]
    allow_local_network: bool
    reason: str


def _looks_like_ip_entry(host: str) -> bool:
    return ":" in host or all(part.isdigit() for part in host.split("."))


def host_matches_url(entries: Iterable[HostEntry], url: str) -> bool:
    """True if the URL's host and port are covered by one of ``entries`` (OD-K54, ``sourceUri``).

    A URL on its scheme's default port matches an entry without a port; any other port must be
    listed as ``host:port``. Unparseable URLs, URLs with userinfo and URLs without a host match
    nothing.
    """
    import httpx  # deferred: parsing a manifest must not load the HTTP stack

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError, UnicodeError):
        return False
    if parsed.userinfo or not parsed.raw_host:
        return False
    scheme = parsed.scheme
    port = parsed.port if parsed.port is not None else default_port(scheme)
    if port is None:
        return False
    host = parsed.raw_host.decode("ascii")
    return any(entry.matches(host, port, scheme) for entry in entries)


def _split_port(text: str) -> tuple[str, str | None] | None:
    """Split ``host[:port]`` / ``[v6][:port]``; None when the shape is wrong."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return None
        rest = text[close + 1 :]
        if rest == "":
            return text[1:close], None
        if not rest.startswith(":"):
            return None
        return text[1:close], rest[1:]
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None


def _parse_port(text: str) -> int | None:
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text.startswith("0")):
        return None
    value = int(text)
    return value if 1 <= value <= 65535 else None


def _check_name(name: str) -> str | None:
    """Problem with a host name, or None if it is a valid lowercase ASCII name."""
    if len(name) > _MAX_NAME:
        return "is longer than 253 characters"
    labels = name.split(".")
    for label in labels:
        if not _LABEL.match(label):
            return f"has an invalid label {label!r} (letters, digits and inner hyphens only)"
        if label[2:4] == "--" and not label.startswith("xn--"):
            return f"has an invalid label {label!r} (hyphens in the third and fourth place)"
        if label.startswith("xn--"):
            try:
                decoded = idna.decode(label)
                reencoded = idna.encode(decoded).decode("ascii")
            except (idna.IDNAError, UnicodeError):
                return f"has an invalid punycode label {label!r}"
            if reencoded != label:
                return f"has a punycode label {label!r} that is not in its canonical form {reencoded!r}"
    last = labels[-1]
    if last.isdigit() or (last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:])):
        # such a name is read as an IPv4 address by URL parsers (inet_aton spellings)
        return "is not a host name (its last label is a number)"
    return None


def parse_host_entry(text: str, *, allow_local_network: bool) -> tuple[HostEntry | None, str | None]:
    """Parse one ``hosts`` entry; return the entry or the problem (without the JSON path)."""
    shown = f'"{text}"'
    if (
        "/" in text
        or "*" in text
        or "@" in text
        or "?" in text
        or "#" in text
        or "\\" in text
        or "://" in text
        or not text.strip()
        or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)
    ):
        return None, f"{shown} is not a host name (no scheme, path or wildcard)"
    split = _split_port(text)
    if split is None:
        return None, f"{shown} is not a host name (write host or host:port, IPv6 as [address]:port)"
    host, port_text = split
    if text.startswith("[") and host and ":" not in host:
        # Brackets are the URL spelling of an IPv6 address; "[api.example.com]" is no host at all
        # to a URL parser, so it must not pass as the name inside.
        return None, f"{shown} is not a host name: brackets hold only an IPv6 address (write the name without them)"
    port: int | None = None
    if port_text is not None:
        port = _parse_port(port_text)
        if port is None:
            return None, f"{shown} has an invalid port (a number from 1 to 65535)"
    if not host:
        return None, f"{shown} has no host name"
    if not host.isascii():
        try:
            suggestion = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError:
            return None, f"{shown} is not a valid internationalized domain name"
        return None, f'{shown} must be written in xn-- (punycode) form: "{suggestion}"'
    if host != host.lower():
        return None, f'{shown} must be lowercase: "{text.lower()}"'
    literal = parse_ip_literal(host)
    if literal is not None or _looks_like_ip_entry(host):
        return _ip_entry(shown, host, literal, port, allow_local_network=allow_local_network)
    if host.endswith("."):
        return None, f'{shown} must not end with a dot: "{host.rstrip(".")}"'
    problem = _check_name(host)
    if problem is not None:
        return None, f"{shown} {problem}"
    if is_local_name(host) and not allow_local_network:
        return None, (
            f"{shown} is a local name; localhost is allowed only with the local-network flag set to "
            "true, and local addresses are chosen by the user, not listed in hosts"
        )
    return HostEntry(host=normalize_host_name(host), port=port), None


def _ip_entry(
    shown: str, host: str, literal: IPAddress | None, port: int | None, *, allow_local_network: bool
) -> tuple[HostEntry | None, str | None]:
    canonical: IPAddress
    if ":" in host:
        if literal is None or "%" in host:
            return None, f"{shown} is not a valid IPv6 address"
        canonical = literal
    else:
        try:
            canonical = IPv4Address(host)
        except ValueError:
            return None, f"{shown} is not a host name or a dotted-decimal IPv4 address"
    if not allow_local_network:
        return None, (
            f"{shown} is an IP address; IP addresses are allowed only with the local-network flag set to true"
        )
    if isinstance(canonical, IPv6Address) and str(canonical) != host:
        return None, f'{shown} must be written in its short form: "[{canonical}]"'
    return HostEntry(host=str(canonical), port=port), None


def parse_network_section(raw: object, *, path: str, draft: bool) -> tuple[NetworkPermission | None, list[str]]:
    """Validate a manifest ``network`` section and return it with every problem found.

    Args:
        raw: the decoded JSON value of the section; None means the section is absent.
        path: the JSON path of the section, used to prefix problems (``permissions.network``).
        draft: True for a Gem Studio ``manifest.json`` (``allow_local_network``), False for a
            packaged ``notochord.json`` (``allowLocalNetwork``).

    Returns:
        ``(permission, problems)``. ``permission`` is None when the section is absent or has any
        problem; each problem reads ``<json path>: <problem>``.
    """
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [f"{path}: must be an object with hosts, {_flag(draft)} and reason"]
    problems: list[str] = []
    flag, other_flag = (_DRAFT_FLAG, _PACKAGED_FLAG) if draft else (_PACKAGED_FLAG, _DRAFT_FLAG)
    form = "a Gem Studio manifest.json" if draft else "notochord.json"
    for key in raw:
        if key in ("hosts", "reason", flag):
            continue
        if key == other_flag:
            problems.append(f'{path}.{key}: unknown key; in {form} the key is "{flag}"')
        else:
            problems.append(f"{path}.{key}: unknown key (expected hosts, {flag}, reason)")

    allow_local = False
    flag_value = raw.get(flag, False)
    if isinstance(flag_value, bool):
        allow_local = flag_value
    else:
        problems.append(f"{path}.{flag}: must be true or false")

    reason = raw.get("reason")
    if reason is None:
        problems.append(f"{path}.reason: is required (it is shown on the gem's page)")
    elif not isinstance(reason, str) or not reason.strip():
        problems.append(f"{path}.reason: must be a non-empty string")

    entries: list[HostEntry] = []
    hosts = raw.get("hosts")
    if hosts is None:
        problems.append(f"{path}.hosts: is required (the external hosts the gem may reach)")
    elif not isinstance(hosts, list):
        problems.append(f"{path}.hosts: must be a list of host names")
    else:
        for index, item in enumerate(hosts):
            item_path = f"{path}.hosts[{index}]"
            if not isinstance(item, str):
                problems.append(f"{item_path}: must be a string")
                continue
            entry, problem = parse_host_entry(item, allow_local_network=allow_local)
            if problem is not None:
                problems.append(f"{item_path}: {problem}")
            elif entry is not None:
                entries.append(entry)
        if not hosts and not allow_local:
            problems.append(f"{path}.hosts: must list at least one host unless {flag} is true")

    if problems or not isinstance(reason, str):
        return None, problems
    return NetworkPermission(hosts=tuple(entries), allow_local_network=allow_local, reason=reason), []


def _flag(draft: bool) -> str:
    return _DRAFT_FLAG if draft else _PACKAGED_FLAG
