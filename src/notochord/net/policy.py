"""The network decision: may this request go to this host, on this port, at these addresses?

Evaluation order (every refusal raises :class:`~notochord.errors.NetworkPermissionError` naming the
host and the :class:`DenyRule`, before any connection is made):

1. The scheme is ``http`` or ``https``.
2. A gem policy needs the gem's ``network`` permission (P-GEN-01). A resource-download policy
   (:meth:`NetworkPolicy.for_resources`) has no gem permission to consult (P-RES-04).
3. The target is classified (P-NET-13, OD-P05): it is local when its name is a ``localhost`` name,
   when it is a local IP literal in any spelling, or when ANY address it resolves to is local.
4. A local target:
   - is never reached by a resource download (P-NET-22, P-RES-07);
   - needs the gem's local-network flag (P-NET-17, P-NET-20);
   - needs an entry in the user's local list (P-NET-16, P-NET-19, OD-P03) matching the requested
     name (then every resolved address may be used) or the resolved addresses (then only the
     addresses so matched may be used). The gem's ``hosts`` play no part (OD-P01).
5. An external target needs a ``hosts`` entry of the gem (P-NET-07, OD-P04; not for resource
   downloads) AND the user's external rules (P-NET-12, P-NET-14, P-RES-06): open allows all,
   allowlist needs a matching entry, blocklist refuses a matching name or resolved address. A gem
   can therefore only narrow what the user allows.

:meth:`NetworkPolicy.precheck` refuses, before any name lookup, every request that no lookup result
could make allowed, so that a refused name is not even sent to the resolver.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, get_args

from notochord.errors import ConfigurationError, NetworkPermissionError
from notochord.net.addresses import (
    AddressClass,
    IPAddress,
    classify_host_name,
    classify_ip,
    classify_target,
    parse_ip_literal,
    same_address,
)
from notochord.net.hosts import NetworkPermission, default_port, encode_request_host

__all__ = [
    "ALLOWED_SCHEMES",
    "DenyRule",
    "ExternalMode",
    "NetworkPolicy",
    "UserHostEntry",
    "UserNetworkRules",
]

ExternalMode = Literal["open", "allowlist", "blocklist"]
ALLOWED_SCHEMES = frozenset({"http", "https"})


class DenyRule(StrEnum):
    """The rule that refused a request; stable values carried by ``NetworkPermissionError.rule``."""

    SCHEME = "scheme"
    NO_NETWORK_PERMISSION = "no-network-permission"
    GEM_HOSTS = "gem-hosts"
    USER_ALLOWLIST = "user-allowlist"
    USER_BLOCKLIST = "user-blocklist"
    GEM_LOCAL_NETWORK = "gem-local-network"
    USER_LOCAL_LIST = "user-local-list"
    RESOURCES_NEVER_LOCAL = "resources-never-local"


@dataclass(frozen=True)
class UserHostEntry:
    """An entry of one of the user's lists: a name, ``*.suffix`` or an IP, with an optional port.

    Without a port any port matches; with one, only that port (OD-P03).
    """

    host: str
    port: int | None = None
    address: IPAddress | None = None

    @classmethod
    def parse(cls, text: str, *, allow_wildcard: bool) -> UserHostEntry:
        """Parse ``host``, ``host:port``, ``[v6]:port`` or (if allowed) ``*.suffix[:port]``.

        Raises:
            ConfigurationError: the entry is malformed.
        """
        raw = text.strip()
        host, port_text = _split_host_port(raw)
        port: int | None = None
        if port_text is not None:
            if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
                raise ConfigurationError(f"network list entry {text!r} has an invalid port (1-65535)")
            port = int(port_text)
        if not host or any(ch.isspace() or ch in "/\\@?#%" for ch in host):
            raise ConfigurationError(
                f"network list entry {text!r} is not a host name or address (write host or host:port)"
            )
        literal = parse_ip_literal(host)
        if literal is not None:
            return cls(host=str(literal), port=port, address=literal)
        if host.startswith("*."):
            if not allow_wildcard or "*" in host[2:]:
                raise ConfigurationError(f"network list entry {text!r}: wildcards are not allowed here")
            return cls(host="*." + encode_request_host(host[2:]), port=port)
        if "*" in host:
            raise ConfigurationError(f"network list entry {text!r}: a wildcard may only lead (*.example.com)")
        return cls(host=encode_request_host(host), port=port)

    def _port_ok(self, port: int) -> bool:
        return self.port is None or self.port == port

    def matches_name(self, host: str, port: int) -> bool:
        """True if the requested host (name or IP literal) and port are covered by this entry."""
        if not self._port_ok(port):
            return False
        if self.address is not None:
            literal = parse_ip_literal(host)
            return literal is not None and same_address(self.address, literal)
        name = encode_request_host(host)
        if self.host.startswith("*."):
            return name.endswith(self.host[1:])
        return name == self.host

    def matches_address(self, address: IPAddress, port: int) -> bool:
        """True if this is an IP entry for ``address`` and the port is covered."""
        return self.address is not None and self._port_ok(port) and same_address(self.address, address)

    def __str__(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port is None else f"{shown}:{self.port}"


def _split_host_port(text: str) -> tuple[str, str | None]:
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return "", None
        rest = text[close + 1 :]
        if rest.startswith(":"):
            return text[1:close], rest[1:]
        return (text[1:close], None) if rest == "" else ("", None)
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None


def _parse_entries(texts: Iterable[str | UserHostEntry], *, allow_wildcard: bool) -> tuple[UserHostEntry, ...]:
    return tuple(
        item if isinstance(item, UserHostEntry) else UserHostEntry.parse(item, allow_wildcard=allow_wildcard)
        for item in texts
    )


@dataclass(frozen=True)
class UserNetworkRules:
    """The user's "Settings › System › Network access" (P-NET-12, P-NET-14, P-NET-16, OD-P03).

    ``external_mode`` is ``open`` (the default: every external host), ``allowlist`` (only
    ``external_hosts``) or ``blocklist`` (all but ``external_hosts``). ``local_hosts`` lists the
    local machine and internal network targets a gem with the local-network flag may reach.
    """

    external_mode: ExternalMode = "open"
    external_hosts: tuple[UserHostEntry, ...] = ()
    local_hosts: tuple[UserHostEntry, ...] = ()

    def __post_init__(self) -> None:
        if self.external_mode not in get_args(ExternalMode):
            raise ConfigurationError(
                f"network access mode {self.external_mode!r} is not one of open, allowlist, blocklist"
            )

    @classmethod
    def build(
        cls,
        *,
        external_mode: str = "open",
        external_hosts: Iterable[str | UserHostEntry] = (),
        local_hosts: Iterable[str | UserHostEntry] = (),
    ) -> UserNetworkRules:
        """Build the rules from the strings the user typed.

        Raises:
            ConfigurationError: an unknown mode or a malformed entry.
        """
        if external_mode not in get_args(ExternalMode):
            raise ConfigurationError(f"network access mode {external_mode!r} is not one of open, allowlist, blocklist")
        mode: ExternalMode = external_mode  # type: ignore[assignment]  # checked just above
        return cls(
            external_mode=mode,
            external_hosts=_parse_entries(external_hosts, allow_wildcard=True),
            local_hosts=_parse_entries(local_hosts, allow_wildcard=False),
        )


def _display(host: str, port: int, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if default_port(scheme) == port else f"{shown}:{port}"


class NetworkPolicy:
    """The network decision for one gem (or for resource downloads), given the user's rules.

    ``organization`` names the organization whose rules ``user_rules`` are (``None``: the personal
    space's), so that a refusal's advice edits the right list.
    """

    def __init__(
        self,
        *,
        permission: NetworkPermission | None,
        user_rules: UserNetworkRules,
        resources: bool = False,
        organization: str | None = None,
    ) -> None:
        self._permission = permission
        self._user = user_rules
        self._resources = resources
        self._organization = organization

    @classmethod
    def for_resources(cls, *, user_rules: UserNetworkRules) -> NetworkPolicy:
        """The policy of manifest resource downloads: never local, the user's external rules only."""
        return cls(permission=None, user_rules=user_rules, resources=True)

    @property
    def is_for_resources(self) -> bool:
        """True for the resource-download policy, which never reaches local targets."""
        return self._resources

    def check(self, *, scheme: str, host: str, port: int, resolved: Sequence[IPAddress]) -> None:
        """Refuse the request unless the policy allows it at every address it may connect to.

        Raises:
            NetworkPermissionError: names the host and the refusing rule.
        """
        self.select(scheme=scheme, host=host, port=port, resolved=resolved)

    def select(self, *, scheme: str, host: str, port: int, resolved: Sequence[IPAddress]) -> tuple[IPAddress, ...]:
        """Check the request and return the resolved addresses a connection may use, in order.

        ``resolved`` is what the name resolved to; for an IP literal, the literal itself.

        Raises:
            NetworkPermissionError: names the host and the refusing rule.
        """
        scheme = scheme.lower()
        name = encode_request_host(host)
        self._check_scheme_and_permission(scheme, name, port)
        literal = parse_ip_literal(name)
        addresses = tuple(resolved) if literal is None else (literal,)
        if classify_target(name, addresses) is AddressClass.LOCAL:
            return self._select_local(scheme, name, port, addresses)
        refusal = self._external_refusal(scheme, name, port, addresses)
        if refusal is not None:
            raise refusal
        return addresses

    def precheck(self, *, scheme: str, host: str, port: int) -> None:
        """Refuse before any name lookup what no lookup result could make allowed.

        Raises:
            NetworkPermissionError: names the host and the refusing rule.
        """
        scheme = scheme.lower()
        name = encode_request_host(host)
        self._check_scheme_and_permission(scheme, name, port)
        literal = parse_ip_literal(name)
        if literal is not None:
            self.select(scheme=scheme, host=name, port=port, resolved=(literal,))
            return
        if classify_host_name(name) is AddressClass.LOCAL:
            self._select_local_by_name_only(scheme, name, port)
            return
        refusal = self._external_refusal(scheme, name, port, ())
        if refusal is None or self._local_possible(name, port):
            return
        raise refusal

    def _check_scheme_and_permission(self, scheme: str, name: str, port: int) -> None:
        if scheme not in ALLOWED_SCHEMES:
            raise NetworkPermissionError(
                f"refused {scheme}://{name}: only http and https URLs may be requested (rule scheme)",
                host=name,
                rule=DenyRule.SCHEME,
            )
        if not self._resources and self._permission is None:
            raise NetworkPermissionError(
                f"refused {scheme}://{_display(name, port, scheme)}: the gem has no network permission "
                "(rule no-network-permission); declare permissions.network in its manifest",
                host=name,
                rule=DenyRule.NO_NETWORK_PERMISSION,
            )

    def _local_possible(self, name: str, port: int) -> bool:
        """Could some lookup result make ``name`` an allowed local target?"""
        if self._resources or self._permission is None or not self._permission.allow_local_network:
            return False
        return any(
            entry.matches_name(name, port) or (entry.address is not None and entry.port in (None, port))
            for entry in self._user.local_hosts
        )

    def _local_refusal(
        self, scheme: str, name: str, port: int, addresses: Sequence[IPAddress]
    ) -> NetworkPermissionError | None:
        target = f"{scheme}://{_display(name, port, scheme)}"
        local_ones = [str(a) for a in addresses if classify_ip(a) is AddressClass.LOCAL]
        why = f" (resolves to {', '.join(local_ones)})" if local_ones and local_ones != [name] else ""
        where = f"{target} is on the local machine or internal network{why}"
        if self._resources:
            return NetworkPermissionError(
                f"refused {where}: resource downloads never reach the local machine or internal "
                "network (rule resources-never-local); host the file on a public server",
                host=name,
                rule=DenyRule.RESOURCES_NEVER_LOCAL,
            )
        if self._permission is None or not self._permission.allow_local_network:
            return NetworkPermissionError(
                f"refused {where}: the gem does not declare allowLocalNetwork (rule gem-local-network); "
                "only a gem that declares it may reach addresses the user lists",
                host=name,
                rule=DenyRule.GEM_LOCAL_NETWORK,
            )
        return None

    def _user_list_refusal(self, scheme: str, name: str, port: int) -> NetworkPermissionError:
        target = f"{scheme}://{_display(name, port, scheme)}"
        entry = f"{name}:{port}" if ":" not in name else f"[{name}]:{port}"
        command = f"notochord network local add {entry}"
        if self._organization is not None:
            command += f" --org {self._organization}"
        return NetworkPermissionError(
            f"refused {target}: it is on the local machine or internal network and is not in the "
            "user's list of addresses on the Local machine and internal network (rule user-local-list); "
            f'the user can add "{entry}" with: {command}',
            host=name,
            rule=DenyRule.USER_LOCAL_LIST,
        )

    def _select_local_by_name_only(self, scheme: str, name: str, port: int) -> None:
        refusal = self._local_refusal(scheme, name, port, ())
        if refusal is not None:
            raise refusal
        if not self._local_possible(name, port):
            raise self._user_list_refusal(scheme, name, port)

    def _select_local(self, scheme: str, name: str, port: int, addresses: Sequence[IPAddress]) -> tuple[IPAddress, ...]:
        refusal = self._local_refusal(scheme, name, port, addresses)
        if refusal is not None:
            raise refusal
        entries = self._user.local_hosts
        if any(entry.matches_name(name, port) for entry in entries):
            return tuple(addresses)
        # Matched by address: only the addresses the user listed may be connected to, so that a
        # name answering with several addresses cannot lead the connection to an unlisted one.
        listed = tuple(a for a in addresses if any(entry.matches_address(a, port) for entry in entries))
        if not listed:
            raise self._user_list_refusal(scheme, name, port)
        return listed

    def _external_refusal(
        self, scheme: str, name: str, port: int, addresses: Sequence[IPAddress]
    ) -> NetworkPermissionError | None:
        target = f"{scheme}://{_display(name, port, scheme)}"
        if not self._resources:
            permission = self._permission
            if permission is None or not any(e.matches(name, port, scheme) for e in permission.hosts):
                wanted = _display(name, port, scheme)
                return NetworkPermissionError(
                    f"refused {target}: {wanted} is not in the gem's permissions.network.hosts (rule "
                    f'gem-hosts); to reach it the manifest must list "{wanted}"',
                    host=name,
                    rule=DenyRule.GEM_HOSTS,
                )
        mode = self._user.external_mode
        entries = self._user.external_hosts
        if mode == "allowlist" and not any(e.matches_name(name, port) for e in entries):
            return NetworkPermissionError(
                f"refused {target}: it is not on the user's allowlist (rule user-allowlist); "
                f"the user can add it with: notochord network allow {name}",
                host=name,
                rule=DenyRule.USER_ALLOWLIST,
            )
        if mode == "blocklist" and any(
            e.matches_name(name, port) or any(e.matches_address(a, port) for a in addresses) for e in entries
        ):
            return NetworkPermissionError(
                f"refused {target}: it is on the user's blocklist (rule user-blocklist); "
                "the user can set the list without it with: notochord network mode blocklist HOST…",
                host=name,
                rule=DenyRule.USER_BLOCKLIST,
            )
        return None
