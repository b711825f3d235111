"""Two service processes' worth of the REST service on one PostgreSQL server serve the same organizations.

Issue 17, item 4 (first part): each replica has its own data directory holding the same master key
and JWT secret, and both point ``database_url`` at the same server; what one replica writes, the other
reads at once, and an organization created through one exists for the other.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from kb_harness import API, SECRET, start_server, stop_server

import notochord
from notochord.clock import FixedClock
from notochord.server.auth import mint_token
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql


def _replica(data: Path, url: str) -> tuple[notochord.Notochord, Settings]:
    clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=SECRET, database_url=url)
    return notochord.open(data, settings, clock=clock, embedder=None), settings


@pytest.fixture
def replicas(tmp_path: Path, database_url: str) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    first_nc, first_settings = _replica(tmp_path / "one", database_url)
    first_nc.personal  # noqa: B018 - the first replica makes the vault's first space
    (tmp_path / "two").mkdir()
    shutil.copy(tmp_path / "one" / "master.key", tmp_path / "two" / "master.key")
    second_nc, second_settings = _replica(tmp_path / "two", database_url)
    servers = [start_server(first_settings, first_nc), start_server(second_settings, second_nc)]
    token = mint_token(secret=SECRET, user="u1", org="acme", role="owner", email="u1@example.org")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with (
            httpx.Client(base_url=servers[0][2] + API, headers=headers, timeout=30, trust_env=False) as one,
            httpx.Client(base_url=servers[1][2] + API, headers=headers, timeout=30, trust_env=False) as two,
        ):
            yield one, two
    finally:
        for server, thread, _, _ in servers:
            stop_server(server, thread)
        first_nc.close()
        second_nc.close()


def test_what_one_replica_writes_the_other_serves(replicas: tuple[httpx.Client, httpx.Client]) -> None:
    """Issue 17, item 4 (K-STORE): a knowledge base made and filled through one replica is listed,
    read and searched through the other, the organization's space being one database for both."""
    one, two = replicas
    made = one.post("/kb", json={"name": "Help Center", "description": "Support articles"})
    assert made.status_code == 201, made.text
    kb_id = made.json()["knowledgeBase"]["id"]
    added = one.post(f"/kb/{kb_id}/documents", json={"content": "Parcels leave the warehouse on Mondays."})
    assert added.status_code == 201, added.text

    listed = two.get("/kb")
    assert listed.status_code == 200, listed.text
    assert kb_id in listed.text
    found = two.post(f"/kb/{kb_id}/search", json={"query": "when do parcels leave"})
    assert found.status_code == 200, found.text
    assert [h["document_id"] for h in found.json()["results"]] == [added.json()["document"]["id"]]

    # and the other way round: the index the second replica holds in memory sees the first one's next write
    again = one.post(f"/kb/{kb_id}/documents", json={"content": "Gift cards never expire, parcels or not."})
    assert again.status_code == 201, again.text
    found = two.post(f"/kb/{kb_id}/search", json={"query": "gift cards"})
    assert [h["document_id"] for h in found.json()["results"]][:1] == [again.json()["document"]["id"]]
