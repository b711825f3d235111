"""The space-level services of the capability factories are one typed object, one attribute each.

``space.gems.services`` was a ``dict[str, Any]`` keyed by strings, so a misspelt
key silently registered a service no factory read. Now each service is an attribute.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from notochord import Space
from notochord.gems.context import SpaceServices
from notochord.gems.folders import GemFolders


def test_the_composed_space_sets_its_folders_and_network_rules(space: Space) -> None:
    """The composition root wires the services by name, typed."""
    services = space.gems.services
    assert isinstance(services, SpaceServices)
    assert isinstance(services.gem_folders, GemFolders)
    assert services.network_rules is space.network_rules
    assert (services.resolver, services.http_transport, services.http_limits) == (None, None, None)


def test_a_misspelt_service_is_refused(space: Space) -> None:
    """A name that is not a service raises instead of being stored unread."""
    with pytest.raises(AttributeError):
        space.gems.services.http_transprt = httpx.MockTransport(lambda _request: httpx.Response(200))  # type: ignore[attr-defined]


def test_gem_folders_are_made_once_on_first_use(tmp_path: Path) -> None:
    """A space composed without gem folders gets one instance, shared by every factory."""
    services = SpaceServices()
    first = services.folders(tmp_path, "personal")
    assert services.folders(tmp_path, "personal") is first
    assert services.gem_folders is first
