"""Fixtures of the gem network tests: a space whose gems get ``ctx.http`` and ``ctx.extract``, a name
resolver the tests control, real servers on 127.0.0.1, and an in-memory stand-in for external hosts.

External hosts are never contacted: names resolve (through :class:`FakeResolver`) to a public address,
and the transport that would connect to it is :class:`ExternalHosts`, an ``httpx.MockTransport``
answering from a table. Local machine targets are real servers on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gemnet_servers import RouteServer, start_route_server
from gemnet_support import ExternalHosts, FakeResolver, InstallGem, gem_manifest

import notochord
from notochord.gems.api.extract import make_extract
from notochord.gems.api.http import make_http
from notochord.net.user_rules import NetworkRulesStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
def rules(space: notochord.Space) -> NetworkRulesStore:
    return NetworkRulesStore(space.core)


@pytest.fixture
def net_space(space: notochord.Space, rules: NetworkRulesStore, resolver: FakeResolver) -> notochord.Space:
    """The personal space wired as the application wires it, with the test's resolver."""
    space.gems.factories["http"] = make_http
    space.gems.factories["extract"] = make_extract
    space.gems.services.network_rules = rules
    space.gems.services.resolver = resolver
    return space


@pytest.fixture
def external(net_space: notochord.Space) -> ExternalHosts:
    """Route every connection of this test's gems to the in-memory external hosts."""
    hosts = ExternalHosts()
    net_space.gems.services.http_transport = hosts.transport
    return hosts


@pytest.fixture
def server() -> Iterator[RouteServer]:
    started = start_route_server()
    yield started
    started.stop()


@pytest.fixture
def other_server() -> Iterator[RouteServer]:
    started = start_route_server()
    yield started
    started.stop()


@pytest.fixture
def install_gem(net_space: notochord.Space, tmp_path: Path) -> InstallGem:
    """``install_gem(gem_id, hosts=[...], allow_local=True, resources=[...])`` installs and returns the id."""

    def install(gem_id: str, **options: Any) -> str:
        folder = tmp_path / "gem-folders" / gem_id
        folder.mkdir(parents=True)
        manifest = gem_manifest(gem_id, **options)
        (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
        for tool in manifest.get("tools", []):
            (folder / tool["entry"]).parent.mkdir(parents=True, exist_ok=True)
            (folder / tool["entry"]).touch()
        return net_space.gems.install(folder).id

    return install
