"""Two service processes' worth of the REST service on one PostgreSQL server serve the same organizations.

Each replica has its own data directory holding the same master key
and JWT secret, and both point ``database_url`` at the same server; what one replica writes, the other
reads at once, an organization created through one exists for the other, and both replicas' background
workers share the embedding without embedding a passage twice.
"""

from __future__ import annotations

import importlib.util
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import httpx
import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa
from kb_harness import API, SECRET, start_server, stop_server

import notochord
from notochord.clock import FixedClock
from notochord.search import vector_index
from notochord.search.embeddings import Embedder
from notochord.server.auth import mint_token
from notochord.settings import Settings

pytestmark = pytest.mark.postgresql


def _helper(relative: str) -> ModuleType:
    path = Path(__file__).resolve().parent.parent / relative
    spec = importlib.util.spec_from_file_location(f"replicas_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fakes = _helper("unit/search/fakes.py")


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
    """K-STORE: a knowledge base made and filled through one replica is listed,
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


class _CountingEmbedder:
    """The unit-test embedder, counting every passage it embeds into counts shared by both replicas.

    The first replica's first batch waits (up to 30 s) until the second replica has started embedding,
    so the two workers certainly drain the queue at the same time.
    """

    def __init__(
        self, counts: Counter[str], lock: threading.Lock, other_started: threading.Event, *, first: bool
    ) -> None:
        self._inner: Embedder = fakes.HashedNgramEmbedder()
        self._counts = counts
        self._lock = lock
        self._other_started = other_started
        self._first = first
        self._batches = 0

    model_id = property(lambda self: self._inner.model_id)
    dim = property(lambda self: self._inner.dim)
    multilingual = property(lambda self: self._inner.multilingual)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self._counts.update(texts)
        self._batches += 1
        if not self._first:
            self._other_started.set()
        elif self._batches == 1:
            self._other_started.wait(timeout=30)
        return self._inner.embed_passages(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._inner.embed_query(text)


def test_both_replicas_embed_in_the_background_and_no_passage_is_embedded_twice(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas: two servers on one database, each with its own
    background embedding worker; documents uploaded through one are embedded by both workers together,
    every passage exactly once, every chunk ends with exactly one vector, and the other replica finds
    them by meaning."""
    monkeypatch.setattr(vector_index, "POLL_SECONDS", 0.2)  # the second worker finds the work by polling
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    second_started = threading.Event()
    clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
    opened: list[tuple[notochord.Notochord, Settings]] = []
    for name, first in (("one", True), ("two", False)):
        data = tmp_path / name
        if not first:
            data.mkdir()
            shutil.copy(tmp_path / "one" / "master.key", data / "master.key")
        settings = Settings(data_dir=data, jwt_secret=SECRET, database_url=database_url)
        embedder = _CountingEmbedder(counts, lock, second_started, first=first)
        nc = notochord.open(data, settings, clock=clock, embedder=embedder)
        nc.personal  # noqa: B018 - the first replica makes the vault's first space
        opened.append((nc, settings))
    servers = [start_server(settings, nc) for nc, settings in opened]
    token = mint_token(secret=SECRET, user="u1", org="acme", role="owner", email="u1@example.org")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with (
            httpx.Client(base_url=servers[0][2] + API, headers=headers, timeout=60, trust_env=False) as one,
            httpx.Client(base_url=servers[1][2] + API, headers=headers, timeout=60, trust_env=False) as two,
        ):
            made = one.post("/kb", json={"name": "Help Center"})
            assert made.status_code == 201, made.text
            kb_id = made.json()["knowledgeBase"]["id"]
            assert two.get("/kb").status_code == 200  # the second replica has the organization open too
            documents = 96
            for n in range(documents):
                added = one.post(f"/kb/{kb_id}/documents", json={"content": f"Article {n}: parcel rule number {n}."})
                assert added.status_code == 201, added.text
            second_space = opened[1][0].org("acme")
            deadline = time.monotonic() + 120
            while second_space.core.vectors.pending() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert second_space.core.vectors.pending() == 0

            with second_space.core.store.engine.connect() as conn:
                per_chunk = conn.execute(
                    sa.text(
                        "SELECT c.id, count(v.chunk_id) FROM chunks AS c LEFT JOIN chunk_vectors AS v "
                        "ON v.chunk_id = c.id AND v.model_id = :model GROUP BY c.id"
                    ),
                    {"model": fakes.HashedNgramEmbedder().model_id},
                ).all()
            assert len(per_chunk) == documents
            assert {int(n) for _, n in per_chunk} == {1}
            assert len(counts) == documents and set(counts.values()) == {1}
            assert second_started.is_set()  # the second replica's worker did part of the work

            found = two.post(f"/kb/{kb_id}/search", json={"query": "parcel rule number 7"})
            assert found.status_code == 200, found.text
            assert found.json()["results"], found.text
    finally:
        for server, thread, _, _ in servers:
            stop_server(server, thread)
        for nc, _ in opened:
            nc.close()
