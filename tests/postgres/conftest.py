"""Fixtures of the PostgreSQL tests that count round trips: a vault on the test server, and its counter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_vector_fixtures import WordHashEmbedder
from round_trips import RoundTrips

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock, database_url: str) -> Iterator[notochord.Notochord]:
    settings = Settings(data_dir=tmp_path / "vault", index_in_background=False, database_url=database_url)
    with notochord.open(tmp_path / "vault", settings, clock=clock, embedder=WordHashEmbedder()) as nc:
        yield nc


@pytest.fixture
def trips(vault: notochord.Notochord, tmp_path: Path) -> Iterator[RoundTrips]:
    counter = RoundTrips(vault.personal.core.store.engine, tmp_path)
    try:
        yield counter
    finally:
        counter.close()
