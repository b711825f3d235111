"""The in-memory vector index: exact cosine search, filtered before ranking (K-SRCH-02, K-SRCH-03)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from notochord.errors import KnowledgeValidationError, StorageError
from notochord.search.vectors import VectorMatrix, from_blob, to_blob


def unit(*values: float) -> npt.NDArray[np.float32]:
    vec = np.array(values, dtype=np.float32)
    return vec / np.linalg.norm(vec)


def test_search_ranks_by_cosine_best_first() -> None:
    matrix = VectorMatrix(2)
    matrix.add([10, 11, 12], np.stack([unit(1, 0), unit(1, 1), unit(0, 1)]))
    hits = matrix.search(unit(1, 0.1), k=3, allowed_ids=None)
    assert [i for i, _ in hits] == [10, 11, 12]
    assert hits[0][1] == pytest.approx(float(unit(1, 0.1) @ unit(1, 0)), abs=1e-6)


def test_a_forbidden_best_match_is_never_scored_and_k_allowed_rows_still_come_back() -> None:
    matrix = VectorMatrix(2)
    matrix.add([1], unit(1, 0).reshape(1, 2))  # identical to the query, but not readable
    matrix.add(list(range(2, 12)), np.stack([unit(1, i) for i in range(1, 11)]))
    allowed = np.arange(2, 12)
    hits = matrix.search(unit(1, 0), k=5, allowed_ids=allowed)
    assert len(hits) == 5
    assert 1 not in [i for i, _ in hits]
    assert [i for i, _ in hits] == [2, 3, 4, 5, 6]


def test_an_empty_allowed_set_returns_nothing_and_unknown_allowed_ids_are_ignored() -> None:
    matrix = VectorMatrix(2)
    matrix.add([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    assert matrix.search(unit(1, 0), k=5, allowed_ids=np.array([], dtype=np.int64)) == []
    assert [i for i, _ in matrix.search(unit(1, 0), k=5, allowed_ids=np.array([2, 99]))] == [2]


def test_equal_scores_rank_by_smaller_id_even_across_the_k_boundary() -> None:
    matrix = VectorMatrix(2)
    matrix.add([7, 3, 5, 1], np.stack([unit(1, 0)] * 4))
    assert [i for i, _ in matrix.search(unit(1, 0), k=2, allowed_ids=None)] == [1, 3]


def test_k_of_zero_or_an_empty_index_returns_nothing() -> None:
    matrix = VectorMatrix(3)
    assert matrix.search(unit(1, 0, 0), k=5, allowed_ids=None) == []
    matrix.add([1], unit(1, 0, 0).reshape(1, 3))
    assert matrix.search(unit(1, 0, 0), k=0, allowed_ids=None) == []


def test_growth_doubles_capacity_so_one_by_one_adds_are_amortised() -> None:
    matrix = VectorMatrix(8, capacity=2)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((1000, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    capacities = set()
    for i in range(1000):
        matrix.add([i], rows[i : i + 1])
        capacities.add(matrix.capacity)
    assert len(matrix) == 1000
    assert sorted(capacities) == [2**n for n in range(1, 11)]
    for probe in (0, 1, 500, 999):
        assert matrix.search(rows[probe], k=1, allowed_ids=None)[0][0] == probe


def test_removal_keeps_every_other_row_searchable() -> None:
    matrix = VectorMatrix(2)
    vectors = {i: unit(1, i / 10) for i in range(10)}
    matrix.add(list(vectors), np.stack(list(vectors.values())))
    assert matrix.remove([0, 5, 42]) == 2
    assert len(matrix) == 8
    assert 0 not in matrix
    assert 5 not in matrix
    assert 9 in matrix
    for rid, vec in vectors.items():
        hits = matrix.search(vec, k=1, allowed_ids=np.array([rid]))
        assert [i for i, _ in hits] == ([] if rid in (0, 5) else [rid])
    assert sorted(matrix.ids().tolist()) == [1, 2, 3, 4, 6, 7, 8, 9]


def test_adding_an_existing_id_replaces_its_vector() -> None:
    matrix = VectorMatrix(2)
    matrix.add([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    matrix.add([1], unit(0, 1).reshape(1, 2))
    assert len(matrix) == 2
    assert matrix.search(unit(0, 1), k=2, allowed_ids=None)[1][1] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("ids", "vectors", "problem"),
    [
        ([1, 2], np.zeros((1, 2), np.float32), "expected 2 vectors"),
        ([1], np.zeros((1, 3), np.float32), "dimension 2"),
        ([1, 1], np.zeros((2, 2), np.float32), "twice"),
        ([1], np.array([[np.nan, 0.0]], np.float32), "finite"),
    ],
    ids=["count", "dimension", "duplicate", "nan"],
)
def test_malformed_adds_are_refused_and_change_nothing(
    ids: list[int], vectors: npt.NDArray[np.float32], problem: str
) -> None:
    matrix = VectorMatrix(2)
    with pytest.raises(KnowledgeValidationError, match=problem):
        matrix.add(ids, vectors)
    assert len(matrix) == 0


def test_a_query_of_the_wrong_dimension_is_refused() -> None:
    with pytest.raises(KnowledgeValidationError, match="dimension"):
        VectorMatrix(2).search(np.ones(3, np.float32), k=1, allowed_ids=None)


def test_blobs_round_trip_float32_little_endian() -> None:
    vec = np.array([0.5, -1.25, 3.0], dtype=np.float32)
    blob = to_blob(vec)
    assert blob == b"\x00\x00\x00?\x00\x00\xa0\xbf\x00\x00@@"
    assert np.array_equal(from_blob(blob, dim=3), vec)
    assert from_blob(blob, dim=3).dtype == np.float32


def test_a_blob_of_the_wrong_length_is_a_storage_error() -> None:
    """It names the command that finds and drops such rows (reindex would see nothing to embed)."""
    with pytest.raises(StorageError, match=r"notochord check --repair"):
        from_blob(b"\x00" * 10, dim=3)
    with pytest.raises(KnowledgeValidationError):
        to_blob(np.zeros((2, 2)))


def test_scoring_runs_on_one_blas_thread() -> None:
    """A search scores in its own thread only — numpy's OpenBLAS is found and
    pinned to one thread there (two threads on a loaded two-core machine made a 5,000-row search 10× slower)."""
    import ctypes
    import threading

    from notochord.search import vectors

    seen: list[int] = []

    def run() -> None:
        matrix = VectorMatrix(2)
        matrix.add([1], unit(1, 0).reshape(1, 2))
        matrix.search(unit(1, 0), k=1, allowed_ids=None)
        runtime = vectors._openblas()
        assert runtime is not None, "numpy's wheel bundles OpenBLAS on this platform"
        previous = runtime.openblas_set_num_threads_local(ctypes.c_int(1))
        seen.append(int(previous))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert seen == [1]
