"""Helpers of the gem network tests: a controllable resolver, in-memory external hosts, manifests.

External hosts are never contacted: names resolve (through :class:`FakeResolver`) to a public address,
and the transport that would connect to it is :class:`ExternalHosts`, an ``httpx.MockTransport``
answering from a table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address
from typing import Any

import httpx

from notochord.errors import NetworkRequestError

IPAddress = IPv4Address | IPv6Address

PUBLIC_ADDRESS = IPv4Address("93.184.215.14")
"""An address of the external class. Nothing ever connects to it: :class:`ExternalHosts` answers."""


@dataclass
class FakeResolver:
    """Resolves the names a test points somewhere; any other name fails, as an unknown name would."""

    names: dict[str, list[IPAddress]] = field(default_factory=lambda: {"localhost": [IPv4Address("127.0.0.1")]})
    asked: list[str] = field(default_factory=list)

    def point(self, name: str, *addresses: str) -> None:
        self.names[name] = [IPv4Address(a) if ":" not in a else IPv6Address(a) for a in addresses]

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        if host not in self.names:
            raise NetworkRequestError(f"could not resolve {host}: unknown name")
        return list(self.names[host])


@dataclass
class ExternalHosts:
    """Answers requests to external hosts from a table keyed by ``host/path`` (the Host header)."""

    answers: dict[str, httpx.Response] = field(default_factory=dict)
    received: list[httpx.Request] = field(default_factory=list)

    def serve(self, url: str, response: httpx.Response) -> None:
        parsed = httpx.URL(url)
        self.answers[f"{parsed.netloc.decode('ascii')}{parsed.raw_path.decode('ascii')}"] = response

    def handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.received.append(request)
        key = f"{request.headers['host']}{request.url.raw_path.decode('ascii')}"
        answer = self.answers.get(key)
        if answer is None:
            return httpx.Response(404, text=f"nothing at {key}")
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)


def gem_manifest(
    gem_id: str,
    *,
    hosts: Sequence[str] | None = None,
    allow_local: bool | None = None,
    resources: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A ``notochord.json``: a network section when ``hosts`` or ``allow_local`` is given."""
    permissions: dict[str, Any] = {}
    if hosts is not None or allow_local is not None:
        network: dict[str, Any] = {"hosts": list(hosts or []), "reason": "Fetch what the tool needs"}
        if allow_local is not None:
            network["allowLocalNetwork"] = allow_local
        permissions["network"] = network
    manifest: dict[str, Any] = {
        "id": gem_id,
        "name": f"Gem {gem_id}",
        "version": "1.0.0",
        "permissions": permissions,
        "tools": [{"name": "main", "entry": "tools/main.mjs"}],
    }
    if resources:
        manifest["resources"] = [dict(r) for r in resources]
    return manifest


InstallGem = Callable[..., str]
