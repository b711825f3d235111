"""A search of the host API or of a gem is one read transaction, on SQLite and on PostgreSQL.

Search on PostgreSQL used to open three read transactions (the collection tree, the search, and
the vector leg's own), and to read the full-text index's data version once per leg. What the
caller may read — the collection tree, a gem's grants and its reach, the entities named — and both
legs of the search are read in one snapshot, as the
knowledge-base service's search already was. Counted on the space's engine with SQLAlchemy events
(transactions begun and statements sent, never time), with an embedder so the vector leg runs.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from walk_harness import counted

import notochord
from knowledge_gem import knowledge_gem
from notochord.clock import FixedClock
from notochord.settings import Settings
from postgres_server import BACKENDS

pytestmark = pytest.mark.anyio

# the structure record of the FTS5 index, or the version row of PostgreSQL's postings
_VERSION_READS = ("_data WHERE id =", "SELECT value FROM space_meta WHERE key")


class _WordEmbedder:
    """Each word hashed into one of 64 dimensions: passages sharing words are near (deterministic)."""

    model_id = "test/word-hash-64"
    dim = 64
    multilingual = True

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        vector = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            vector[zlib.crc32(word.encode()) % self.dim] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vector(text)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def space(tmp_path: Path, clock: FixedClock, new_database_url: Callable[[], str | None]) -> Iterator[notochord.Space]:
    url = new_database_url()
    settings = Settings(data_dir=tmp_path / "data", index_in_background=False, database_url=url)
    with notochord.open(tmp_path / "data", settings, clock=clock, embedder=_WordEmbedder()) as opened:
        space = opened.personal
        space.user.documents.upsert(collection="diary", title="Stew", body="simmer beef with tomato")
        space.user.documents.upsert(collection="keep", title="Garden", body="water the beans by the fence")
        assert space.core.vectors.wait() == 2
        yield space


def _version_reads(statements: list[str]) -> int:
    return sum(any(marker in s for marker in _VERSION_READS) for s in statements)


def test_a_host_search_is_one_read_transaction(space: notochord.Space) -> None:
    """Follow-up: ``space.user.search`` reads the collection tree and both legs in one
    read transaction (it opened three on PostgreSQL)."""
    space.user.search("beef stew")  # warms the in-memory indexes and the collection tree
    with counted(space.core.store.engine) as walk:
        hits = space.user.search("beef stew")
    assert [h.title for h in hits][:1] == ["Stew"]
    assert walk.transactions == 1, "\n".join(walk.statements)


def test_a_host_search_in_named_collections_and_entities_is_one_read_transaction(space: notochord.Space) -> None:
    """Follow-up: naming collections and entities reads them in the search's snapshot too."""
    anna = space.user.entities.resolve(email="anna@example.org", name="Anna", create=True)
    assert anna is not None
    space.user.search("beef", collections=["diary"], entities=[anna.id])
    with counted(space.core.store.engine) as walk:
        hits = space.user.search("beef", collections=["diary"], entities=[anna.id])
    assert hits == []  # Anna is named in no passage
    assert walk.transactions == 1, "\n".join(walk.statements)
    with counted(space.core.store.engine) as walk:
        hits = space.user.search("beans", collections=["keep"])
    assert [h.title for h in hits] == ["Garden"]
    assert walk.transactions == 1, "\n".join(walk.statements)


def test_a_search_reads_the_full_text_version_once(space: notochord.Space) -> None:
    """The full-text index found with the candidates is the one ranked over; its
    data version is read once per search, not once per leg."""
    space.user.search("beef stew")
    with counted(space.core.store.engine) as walk:
        space.user.search("beef stew")
    assert _version_reads(walk.statements) == 1, "\n".join(walk.statements)


async def test_a_gem_search_is_one_read_transaction(space: notochord.Space, tmp_path: Path) -> None:
    """Follow-up: a gem's search reads its grants, the collections it may read and both
    legs in one read transaction, and still finds only what it may read."""
    knowledge = knowledge_gem(space, tmp_path, ["collections.read:diary"])
    await knowledge.search("beef stew")
    with counted(space.core.store.engine) as walk:
        hits = await knowledge.search("beef stew")
    assert [h.title for h in hits] == ["Stew"]
    assert walk.transactions == 1, "\n".join(walk.statements)
    assert "Garden" not in [h.title for h in await knowledge.search("water beans fence")]


async def test_a_gem_search_naming_entities_is_one_read_transaction(space: notochord.Space, tmp_path: Path) -> None:
    """Follow-up: the entities a gem names are resolved in the search's snapshot."""
    knowledge = knowledge_gem(space, tmp_path, ["collections.read:diary", "entities.read:person"])
    space.user.entities.resolve(email="anna@example.org", name="Anna", create=True)
    (ref,) = [e.ref for e in await knowledge.entities.list("person")]
    await knowledge.search("beef", entities=[ref])
    with counted(space.core.store.engine) as walk:
        hits = await knowledge.search("beef", entities=[ref])
    assert hits == []
    assert walk.transactions == 1, "\n".join(walk.statements)
