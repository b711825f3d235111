"""The embedding queue shared by every process on one PostgreSQL database: two
workers never embed the same passage, and every chunk ends with exactly one vector."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa

import notochord
from notochord.clock import FixedClock
from notochord.search import vector_store_pg
from notochord.settings import Settings

from .fakes import HashedNgramEmbedder

pytestmark = pytest.mark.postgresql

PASSAGES = 240


class CountingEmbedder:
    """The unit-test embedder, counting every passage it embeds (shared by both workers).

    Each worker's first batch waits for the other's, so the two are certainly embedding at once.
    """

    def __init__(self, counts: Counter[str], lock: threading.Lock, barrier: threading.Barrier) -> None:
        self._inner = HashedNgramEmbedder()
        self._counts = counts
        self._lock = lock
        self._barrier = barrier
        self._first = True

    model_id = property(lambda self: self._inner.model_id)
    dim = property(lambda self: self._inner.dim)
    multilingual = property(lambda self: self._inner.multilingual)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self._counts.update(texts)
        if self._first:
            self._first = False
            self._barrier.wait(timeout=60)
        return self._inner.embed_passages(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._inner.embed_query(text)


def _open(data: Path, url: str, clock: FixedClock, embedder: CountingEmbedder) -> notochord.Notochord:
    settings = Settings(data_dir=data, index_in_background=False, database_url=url)
    return notochord.open(data, settings, clock=clock, embedder=embedder)


def test_two_workers_on_one_database_never_embed_a_passage_twice(
    tmp_path: Path, clock: FixedClock, database_url: str
) -> None:
    """Replicas share the background embedding: two processes' workers drain one
    queue of a few hundred pending passages at the same time; each passage is embedded once, by one
    of them, and every chunk has exactly one vector of the model."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(2)
    first, second = CountingEmbedder(counts, lock, barrier), CountingEmbedder(counts, lock, barrier)
    with (
        _open(tmp_path / "a", database_url, clock, first) as a,
        _open(tmp_path / "b", database_url, clock, second) as b,
    ):
        for n in range(PASSAGES):
            a.personal.user.documents.upsert(collection="diary", title=f"Note {n}", body=f"passage number {n}")
        assert a.personal.core.vectors.pending() == PASSAGES
        done: dict[str, int] = {}
        errors: list[BaseException] = []

        def drain(name: str, nc: notochord.Notochord) -> None:
            try:
                done[name] = nc.personal.core.vectors.wait()
            except BaseException as exc:  # reported below
                errors.append(exc)

        workers = [threading.Thread(target=drain, args=(n, nc)) for n, nc in (("a", a), ("b", b))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert not errors
        with a.personal.core.store.engine.connect() as conn:
            per_chunk = conn.execute(
                sa.text(
                    "SELECT c.id, count(v.chunk_id) FROM chunks AS c LEFT JOIN chunk_vectors AS v "
                    "ON v.chunk_id = c.id AND v.model_id = :model GROUP BY c.id"
                ),
                {"model": first.model_id},
            ).all()
            leases = conn.execute(sa.text("SELECT count(*) FROM chunk_vector_claims")).scalar_one()
        assert len(per_chunk) == PASSAGES
        assert {int(n) for _, n in per_chunk} == {1}
        assert len(counts) == PASSAGES and set(counts.values()) == {1}
        assert done["a"] > 0 and done["b"] > 0 and done["a"] + done["b"] == PASSAGES
        assert leases == 0
        assert b.personal.core.vectors.pending() == 0


def test_a_claim_held_by_a_crashed_worker_lapses_and_its_passages_are_embedded_once(
    tmp_path: Path, clock: FixedClock, database_url: str
) -> None:
    """Passages claimed by a worker that died before storing their vectors are not
    taken while its lease holds, and are embedded (once) by another worker when it lapses."""
    counts: Counter[str] = Counter()
    embedder = CountingEmbedder(counts, threading.Lock(), threading.Barrier(1))
    with _open(tmp_path / "a", database_url, clock, embedder) as nc:
        for n in range(5):
            nc.personal.user.documents.upsert(collection="diary", title=f"Note {n}", body=f"passage number {n}")
        engine = nc.personal.core.store.engine
        crashed = vector_store_pg.claim(engine, embedder.model_id, 3, lease=1.0)
        assert len(crashed) == 3
        # a live lease is honoured: only the two others can be taken (this lease lapses at once)
        assert len(vector_store_pg.claim(engine, embedder.model_id, 5, lease=0.0)) == 2
        assert nc.personal.core.vectors.wait() == 5
        with engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT count(*) FROM chunk_vectors")).scalar_one()
    assert stored == 5
    assert len(counts) == 5 and set(counts.values()) == {1}
