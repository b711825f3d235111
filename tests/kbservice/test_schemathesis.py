"""Property-based run of the OpenAPI document against the live server: no 5xx and no undocumented
status, whatever paths, queries and bodies are generated (KB-GEN, OD-B12, OD-B15, OD-B22, OD-B23).

The schema is the one the live server publishes; it is built here from the same factory so that
the cases can be generated when the tests are collected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from kb_harness import SECRET, LiveServer, World, new_world

from notochord.app import Notochord
from notochord.server.app import create_app
from notochord.settings import Settings


class _Unopened:
    """Enough of a data directory to build the app for its OpenAPI document; never queried."""

    data_dir = Path("/nonexistent")


_DOCUMENT = create_app(cast(Notochord, _Unopened()), Settings(jwt_secret=SECRET)).openapi()
schema = schemathesis.openapi.from_dict(_DOCUMENT)


@pytest.fixture(scope="module")
def fuzz_world(live: LiveServer) -> World:
    world = new_world(live)
    # a fuzzed ``url`` to ingest must never leave the machine: this organization may reach no host
    live.nc.org(world.a, create=True).network_rules.set_external("allowlist", [])
    return world


def test_the_published_document_is_the_one_fuzzed(live: LiveServer) -> None:
    assert live.client.get("/openapi.json").json() == _DOCUMENT


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_never_fails_and_only_answers_documented_statuses(
    case: Any, live: LiveServer, fuzz_world: World
) -> None:
    response = case.call(base_url=live.url, headers=fuzz_world["owner"].headers)
    assert response.status_code < 500, response.text
    if case.method.upper() != case.operation.method.upper():
        # a method the path does not offer: refused, in the one error shape
        assert response.status_code == 405
        assert set(response.json()) == {"error", "message"}
        return
    documented = {str(code) for code in case.operation.definition.raw["responses"]}
    assert str(response.status_code) in documented, (case.method, case.formatted_path, response.status_code)
    if response.status_code >= 400:
        body = response.json()
        assert body == {"error": "Not found"} if response.status_code == 404 else set(body) == {"error", "message"}
