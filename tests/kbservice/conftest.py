"""Fixtures of the knowledge-base service tests.

One live server per test module runs over its own data directory with a hand-driven clock; every test
works in fresh organizations (``world``), so tests never see each other's knowledge bases, agents,
grants or audit entries.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from kb_harness import SECRET, LiveServer, World, new_world, start_server, stop_server

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings
from postgres_server import BACKENDS, drop_databases, unique_database_url


@pytest.fixture(scope="module", params=BACKENDS)
def kb_database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The service runs over both backends: ``None`` for SQLite files, else a server's prefix."""
    if request.param != "postgresql":
        yield None
        return
    server: str = request.getfixturevalue("postgres_server_url")
    url = unique_database_url(server)
    yield url
    drop_databases(server, url)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, kb_database_url: str | None) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("kbservice") / "data"
    clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=SECRET, database_url=kb_database_url)
    with notochord.open(data, settings, clock=clock, embedder=None) as nc:
        server, thread, url, app = start_server(settings, nc)
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                yield LiveServer(url, nc, clock, app.state.kb, client, app)
        finally:
            stop_server(server, thread)


@pytest.fixture
def world(live: LiveServer) -> World:
    """Fresh organizations A and B with a caller per role (see :class:`World`)."""
    return new_world(live)
