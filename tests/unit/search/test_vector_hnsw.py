"""Vectors in memory: cached allowed masks, and the HNSW graph of large spaces.

Recall is counted against exact search on random clustered vectors (random points in many
dimensions have no neighbourhoods to find; embeddings do, so the data is a mixture of Gaussian
clusters). Nothing here is timed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from notochord.search.hnsw import MIN_SHARE, graph_count
from notochord.search.vector_memory import VectorMemory
from notochord.search.vectors import VectorMatrix

from . import fakes

DIM = 32
N = 6000


def clustered(n: int, *, seed: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    return fakes.clustered(n, seed=seed, dim=dim)


@pytest.fixture(scope="module")
def large() -> tuple[VectorMemory, npt.NDArray[np.float32]]:
    """A memory past its HNSW threshold, with the graph built."""
    vectors = clustered(N, seed=3)
    memory = VectorMemory(DIM, hnsw_threshold=N // 2, graph_threads=2)
    memory.add(np.arange(1, N + 1), vectors)
    assert memory.wait_for_graph(timeout=120)
    return memory, vectors


def exact(memory: VectorMemory, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.int64]) -> list[int]:
    return [i for i, _ in memory.matrix.search(query, k=k, allowed_ids=allowed)]


@pytest.mark.parametrize("share", [1.0, 0.5, 0.2, 0.06, 0.01])
@pytest.mark.parametrize("k", [10, 100])
def test_filtered_graph_search_keeps_recall_against_exact(
    large: tuple[VectorMemory, npt.NDArray[np.float32]], share: float, k: int
) -> None:
    """K-SRCH-02: recall@k ≥ 0.95 against exact search, whatever share of the
    rows the caller may read; every hit is an allowed row, scored with its exact cosine."""
    memory, _ = large
    assert memory.has_graph
    rng = np.random.default_rng(int(share * 1000) + k)
    allowed = np.sort(rng.choice(np.arange(1, N + 1), size=max(1, int(N * share)), replace=False))
    allowed_set = set(allowed.tolist())
    queries = clustered(40, seed=int(share * 100) + k + 7)
    found = 0
    for query in queries:
        hits = memory.search(query, k=k, allowed_ids=allowed, key=("filter", share, k))
        assert {i for i, _ in hits} <= allowed_set
        rows = memory.matrix.get(np.array([i for i, _ in hits], dtype=np.int64))
        assert np.allclose([s for _, s in hits], rows @ query, atol=1e-6)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        found += len({i for i, _ in hits} & set(exact(memory, query, k, allowed)))
    assert found / (len(queries) * min(k, len(allowed))) >= 0.95


def test_a_small_allowed_share_is_searched_exactly() -> None:
    """Below the measured share the graph is not asked at all (exact is cheap there)."""
    assert graph_count(10, int(N * MIN_SHARE) - 1, N) is None
    assert graph_count(10, N, N) is not None


def test_hidden_rows_never_rank_and_do_not_move_exact_rankings() -> None:
    """K-SRCH-03: below the threshold (exact search) a caller's ranking is identical
    with and without many better-matching rows it cannot see."""
    visible = clustered(500, seed=1)
    memory = VectorMemory(DIM, hnsw_threshold=10**6)
    memory.add(np.arange(1, 501), visible)
    allowed = np.arange(1, 501)
    queries = clustered(20, seed=2)
    before = [memory.search(q, k=20, allowed_ids=allowed, key="visible") for q in queries]
    memory.add(np.arange(1000, 1500), queries[np.arange(500) % 20] + 1e-3)  # near-copies of the queries
    after = [memory.search(q, k=20, allowed_ids=allowed, key="visible") for q in queries]
    assert before == after


def test_the_graph_follows_adds_replacements_and_removals(large: tuple[VectorMemory, npt.NDArray[np.float32]]) -> None:
    """Incremental add, replace and remove reach the graph; it holds the matrix's ids."""
    memory, vectors = large
    target = clustered(1, seed=99)[0]
    memory.add([N + 10], target)
    assert memory.search(target, k=1, allowed_ids=np.arange(1, N + 20))[0][0] == N + 10
    memory.add([5], target)  # replaced: id 5 now holds the same vector
    assert {i for i, _ in memory.search(target, k=2, allowed_ids=np.arange(1, N + 20))} == {5, N + 10}
    memory.remove([N + 10])
    memory.add([5], vectors[4])
    assert N + 10 not in {i for i, _ in memory.search(target, k=10, allowed_ids=np.arange(1, N + 20))}
    assert np.array_equal(np.sort(memory.graph_keys()), np.sort(memory.matrix.ids()))


def test_changes_during_a_graph_build_are_replayed() -> None:
    """Rows added, replaced and removed while the graph is built end up in it as in the matrix."""
    vectors = clustered(3000, seed=5)
    memory = VectorMemory(DIM, hnsw_threshold=2000, graph_threads=1)
    memory.add(np.arange(1, 2001), vectors[:2000])  # starts the build
    memory.add(np.arange(2001, 3001), vectors[2000:])
    memory.remove(np.arange(1, 200))
    memory.add([500], vectors[0])
    assert memory.wait_for_graph(timeout=120)
    assert np.array_equal(np.sort(memory.graph_keys()), np.sort(memory.matrix.ids()))
    assert memory.search(vectors[0], k=1, allowed_ids=np.array([500]))[0][0] == 500


def test_the_graph_is_dropped_when_the_space_shrinks() -> None:
    """Derived data only — below half the threshold, exact search takes over again."""
    vectors = clustered(1200, seed=8)
    memory = VectorMemory(DIM, hnsw_threshold=1000)
    memory.add(np.arange(1, 1201), vectors)
    assert memory.wait_for_graph(timeout=120)
    memory.remove(np.arange(1, 800))
    assert not memory.has_graph
    assert memory.search(vectors[1000], k=1, allowed_ids=np.arange(1, 1201))[0][0] == 1001


def test_a_cached_mask_follows_the_matrix_version() -> None:
    """The mask for a key is reused until the rows change, then computed again."""
    memory = VectorMemory(DIM)
    memory.add([1, 2], clustered(2, seed=4))
    first, count = memory.mask(np.array([1, 2, 3]), "k")
    assert count == 2
    assert memory.mask(np.array([1, 2, 3]), "k")[0] is first
    memory.add([3], clustered(1, seed=6))
    again, count = memory.mask(np.array([1, 2, 3]), "k")
    assert again is not first
    assert count == 3


def test_a_mask_of_another_size_is_refused() -> None:
    """A mask computed before rows were added covers other rows: refused, not silently misread."""
    matrix = VectorMatrix(DIM)
    matrix.add([1, 2], clustered(2, seed=4))
    mask = matrix.mask_of(np.array([1]))
    matrix.add([3], clustered(1, seed=6))
    with pytest.raises(Exception, match="mask_of"):
        matrix.search(clustered(1, seed=1)[0], k=1, allowed_mask=mask)
