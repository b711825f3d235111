"""Network access as data: the user's rules of a space (P-NET-12, P-NET-14, P-NET-16) and, on a
gem's page, what the gem may reach (P-NET-09, P-NET-18).

A gem reaches an external host only when its manifest lists it *and* the user's rules allow it;
a gem with ``allowLocalNetwork`` reaches exactly the local machine and internal network addresses
the user listed, and no other gem reaches any of them (P-NET-19, P-NET-20).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from notochord.app import Space
from notochord.gems.manifest import Manifest

__all__ = ["MODES", "GemNetwork", "NetworkSettings", "gem_network", "network_settings"]

MODES: Final = ("open", "allowlist", "blocklist")


@dataclass(frozen=True)
class NetworkSettings:
    mode: str
    external_hosts: list[str]
    """The list of the mode in force (empty in ``open`` mode)."""
    kept: list[tuple[str, list[str]]]
    """The list of a mode not in force, kept until that mode is chosen again."""
    local_hosts: list[str]


@dataclass(frozen=True)
class GemNetwork:
    hosts: list[str]
    reason: str | None
    allow_local_network: bool
    local_hosts: list[str]
    """What an ``allowLocalNetwork`` gem may reach: the user's local list (empty for other gems)."""
    user_mode: str


def network_settings(space: Space) -> NetworkSettings:
    """The user's rules of ``space``; raises ``ConfigurationError`` when the stored rules are damaged."""
    rules = space.network.stored()
    kept = [(m, list(rules.hosts_of(m))) for m in ("allowlist", "blocklist") if m != rules.external_mode]
    return NetworkSettings(
        mode=rules.external_mode,
        external_hosts=list(rules.external_hosts),
        kept=[(m, hosts) for m, hosts in kept if hosts],
        local_hosts=list(rules.local_hosts),
    )


def gem_network(space: Space, manifest: Manifest) -> GemNetwork | None:
    """The gem's network access for its page, or ``None`` when it declares none."""
    network = manifest.network
    if network is None:
        return None
    rules = space.network.stored()
    return GemNetwork(
        hosts=[str(h) for h in network.hosts],
        reason=network.reason,
        allow_local_network=bool(network.allow_local_network),
        local_hosts=list(rules.local_hosts) if network.allow_local_network else [],
        user_mode=rules.external_mode,
    )
