"""The service whose PostgreSQL server goes away answers 503 with ``Retry-After``, and recovers by itself.

A database server restarting, failing over or refusing the service's login is not a fault of the
caller's request, nor an unexplained 500: the caller is told to retry later, is never told where the
server is or as whom the service logs in, and the service answers again as soon as the server does,
without a restart. The server's going away is real: the service reaches the test's PostgreSQL
through a TCP relay that the test cuts (every open connection dropped, new ones refused) and then
opens again on the same port.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from kb_harness import SECRET, LiveServer, new_world, start_server, stop_server

import notochord
from notochord.clock import FixedClock
from notochord.server.app import PREFIX
from notochord.server.errors import UNAVAILABLE_RETRY_AFTER
from notochord.settings import Settings
from postgres_server import drop_databases, unique_database_url
from tcp_relay import Relay

pytestmark = pytest.mark.postgresql


@pytest.fixture
def relayed(postgres_server_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, Relay]]:
    relay = Relay(postgres_server_url)
    url = unique_database_url(postgres_server_url)
    through_relay = sa.make_url(url).set(host="127.0.0.1", port=relay.port, query={})
    database_url = through_relay.render_as_string(hide_password=False)
    data = tmp_path / "data"
    clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=SECRET, database_url=database_url)
    try:
        with notochord.open(data, settings, clock=clock, embedder=None) as nc:
            server, thread, base, app = start_server(settings, nc)
            try:
                with httpx.Client(base_url=base, timeout=60) as client:
                    yield LiveServer(base, nc, clock, app.state.kb, client, app), relay
            finally:
                relay.start()  # the vault closes its connections through it
                stop_server(server, thread)
    finally:
        relay.cut()
        drop_databases(postgres_server_url, url)


def test_a_service_whose_database_server_goes_away_answers_503_with_retry_after_and_recovers(
    relayed: tuple[LiveServer, Relay],
) -> None:
    """KB-ERR: reads and writes alike answer 503 Service Unavailable with ``Retry-After`` while the
    server cannot be reached, in the service's words only (no host, port, user or driver text); once
    the server answers again, so does the service."""
    live, relay = relayed
    world = new_world(live)
    kb = world.create_kb(name="Handbook")
    owner = world["owner"]

    relay.cut()
    for method, path, body in (
        ("GET", f"/kb/{kb['id']}/documents", None),
        ("POST", f"/kb/{kb['id']}/search", {"query": "leave policy"}),
        ("POST", "/kb", {"name": "Another"}),
    ):
        response = world.request(method, path, owner, json=body)
        assert response.status_code == 503, (method, path, response.text)
        assert response.headers["Retry-After"] == str(UNAVAILABLE_RETRY_AFTER)
        said = response.json()
        assert said["error"] == "Service Unavailable"
        assert "retry" in said["message"].lower()
        for secret in ("127.0.0.1", str(relay.port), "postgres", "psycopg", "connection", "Traceback"):
            assert secret not in said["message"], secret

    relay.start()
    again = world.request("GET", f"/kb/{kb['id']}", owner)
    assert again.status_code == 200 and "Handbook" in again.text
    assert world.request("POST", "/kb", owner, json={"name": "Another"}).status_code == 201


def test_every_route_documents_the_503(relayed: tuple[LiveServer, Relay]) -> None:
    """The API description names the 503 on every route, since any of them reads the database."""
    live, _ = relayed
    document = live.client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        if path.startswith(PREFIX):
            for method, operation in operations.items():
                assert "503" in operation["responses"], (method, path)
