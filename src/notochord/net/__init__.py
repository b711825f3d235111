"""The network half of the Permission Model.

- :mod:`notochord.net.addresses`: every address is external or local (P-NET-13, OD-P02).
- :mod:`notochord.net.hosts`: the manifest ``network`` section and host matching (P-NET-01…09).
- :mod:`notochord.net.policy`: the decision, gem permission narrowed by the user's rules
  (P-NET-07…22, P-RES-06/07).
- :mod:`notochord.net.transport`: the guarded HTTP path (resolve, check, pin, redirect loop). It
  loads httpx, so it is imported explicitly rather than re-exported here.
- :mod:`notochord.net.failures`: a failed look-up, connection or exchange in plain words (P-NET-10).
"""

from notochord.net.addresses import AddressClass, classify_ip, parse_ip_literal
from notochord.net.hosts import HostEntry, NetworkPermission, host_matches_url, parse_network_section
from notochord.net.policy import DenyRule, NetworkPolicy, UserHostEntry, UserNetworkRules

__all__ = [
    "AddressClass",
    "DenyRule",
    "HostEntry",
    "NetworkPermission",
    "NetworkPolicy",
    "UserHostEntry",
    "UserNetworkRules",
    "classify_ip",
    "host_matches_url",
    "parse_ip_literal",
    "parse_network_section",
]
