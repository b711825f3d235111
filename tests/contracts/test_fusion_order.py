"""Fusion orders its results exactly as before, whatever the scores and ties.

The fused
list's order is now found by sorting the raw scores once and rounding only the head up to the
limit, instead of rounding every score and sorting by it. The answer must not move by one place:
the reference below is the former ordering, and hypothesis draws scores with many ties (equal to
12 digits, or only after rounding), limits and tie keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from notochord.search.fusion import DEFAULT_RRF_K, combine, fuse

_DIGITS = 12


def _former(scores: dict[int, float], limit: int, tie_key: Callable[[int], Any] | None) -> list[tuple[int, float]]:
    """The ordering as it was: every score rounded, every id sorted by (rounded score, id)."""
    rounded = {i: round(s, _DIGITS) for i, s in scores.items()}
    by_score = sorted(scores, key=lambda i: (-rounded[i], i))
    if tie_key is None:
        return [(i, scores[i]) for i in by_score[:limit]]
    ranked: list[int] = []
    start = 0
    while start < len(by_score) and len(ranked) < limit:
        end = start + 1
        while end < len(by_score) and rounded[by_score[end]] == rounded[by_score[start]]:
            end += 1
        group = by_score[start:end]
        if len(group) > 1:
            group.sort(key=tie_key)
        ranked += group
        start = end
    return [(i, scores[i]) for i in ranked[:limit]]


# few distinct values, some apart only past the 12th digit, so that ties are common
_SCORES = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 1 / 3 + 1e-15, 0.1 + 0.2, 0.3, 1.0]),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
_LISTS = st.lists(st.tuples(st.integers(0, 60), _SCORES), max_size=80)
_TIE_KEYS: list[Callable[[int], Any] | None] = [None, lambda i: (i % 7, i), lambda i: -i, lambda i: 0]


def _reference_combine(lists: list[tuple[list[tuple[int, float]], float]], limit: int, tie_key: Any) -> Any:
    from notochord.search.fusion import FOUND_FLOOR, min_max

    weighted = [(min_max(ranked), weight) for ranked, weight in lists if weight > 0.0]
    total = sum(weight for _, weight in weighted)
    if limit <= 0 or total <= 0.0:
        return []
    scores: dict[int, float] = {}
    for normalised, weight in weighted:
        for item_id, value in normalised.items():
            scores[item_id] = scores.get(item_id, 0.0) + weight * (FOUND_FLOOR + (1.0 - FOUND_FLOOR) * value)
    return _former({i: s / total for i, s in scores.items()}, limit, tie_key)


@given(_LISTS, _LISTS, st.integers(0, 30), st.sampled_from(range(len(_TIE_KEYS))), st.sampled_from([0.0, 0.5, 1.0]))
def test_combined_lists_are_ordered_as_before(
    text: list[tuple[int, float]], vectors: list[tuple[int, float]], limit: int, key: int, weight: float
) -> None:
    """The same ids, scores and order as the former ordering, ties included."""
    tie_key = _TIE_KEYS[key]
    legs = [(text, 1.0), (vectors, weight)]
    assert combine(legs, limit=limit, tie_key=tie_key) == _reference_combine(legs, limit, tie_key)


@given(_LISTS, st.integers(0, 30), st.sampled_from(range(len(_TIE_KEYS))))
def test_reciprocal_rank_fusion_is_ordered_as_before(ranked: list[tuple[int, float]], limit: int, key: int) -> None:
    """Rank fusion, whose scores tie for every list's r-th id, keeps its order too."""
    tie_key = _TIE_KEYS[key]
    scores: dict[int, float] = {}
    for weight, ranking in ((1.0, ranked), (0.7, list(reversed(ranked)))):
        seen: set[int] = set()
        rank = 0
        for item_id, _ in ranking:
            if item_id in seen:
                continue
            seen.add(item_id)
            rank += 1
            scores[item_id] = scores.get(item_id, 0.0) + weight / (DEFAULT_RRF_K + rank)
    expected = _former(scores, limit, tie_key) if limit > 0 else []
    found = fuse([(ranked, 1.0), (list(reversed(ranked)), 0.7)], limit=limit, tie_key=tie_key)
    assert found == expected
