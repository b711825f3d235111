"""Fusion by the weighted mean of min–max normalised leg scores, what search uses (K-SRCH-02;
OD-K38: ties go to the newer date, then the ref).

Each leg's scores are rescaled over the list it returned (its best 1, its last ``FOUND_FLOOR``), an
id a leg did not return counts 0 there, and the fused score is the weighted mean: always in [0, 1].
"""

from __future__ import annotations

import math
import random

import pytest

from notochord.search.fusion import FOUND_FLOOR, WEAK_LEG_FACTOR, combine, leg_weights, min_max


def found(normalised: float) -> float:
    """What a leg gives an id it returned at this min–max position (its last keeps the floor)."""
    return FOUND_FLOOR + (1.0 - FOUND_FLOOR) * normalised


def test_scores_are_rescaled_over_the_list_the_leg_returned() -> None:
    assert min_max([(1, 12.0), (2, 7.0), (3, 2.0)]) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert min_max([(7, 0.91), (8, 0.86), (9, 0.81)]) == {
        7: pytest.approx(1.0),
        8: pytest.approx(0.5),
        9: pytest.approx(0.0),
    }


def test_the_fused_score_is_the_weighted_mean_of_the_normalised_scores() -> None:
    text_leg = [(1, 12.0), (2, 7.0), (3, 2.0)]  # 1, 0.5, 0
    vector_leg = [(2, 0.9), (4, 0.8), (1, 0.5)]  # 1, 0.75, 0
    fused = dict(combine([(text_leg, 1.0), (vector_leg, 3.0)], limit=10))
    assert fused == {
        1: pytest.approx((1.0 * found(1.0) + 3.0 * found(0.0)) / 4),
        2: pytest.approx((1.0 * found(0.5) + 3.0 * found(1.0)) / 4),
        3: pytest.approx(found(0.0) / 4),
        4: pytest.approx((3.0 * found(0.75)) / 4),
    }
    assert [i for i, _ in combine([(text_leg, 1.0), (vector_leg, 3.0)], limit=10)] == [2, 4, 1, 3]


def test_the_best_hit_of_every_leg_scores_one_and_a_hit_of_one_leg_at_most_its_share() -> None:
    fused = dict(combine([([(1, 5.0), (2, 1.0)], 1.0), ([(1, 0.9), (3, 0.2)], 1.0)], limit=10))
    assert fused[1] == pytest.approx(1.0)
    assert fused[2] == pytest.approx(found(0.0) / 2)
    assert fused[3] == pytest.approx(found(0.0) / 2)
    only_text = dict(combine([([(5, 3.0), (6, 1.0)], 1.0), ([(7, 0.9), (8, 0.1)], 1.0)], limit=10))
    assert only_text[5] == pytest.approx(0.5)
    assert only_text[7] == pytest.approx(0.5)


def test_only_the_order_and_spacing_of_a_legs_scores_matter_not_their_scale() -> None:
    rnd = random.Random(7)
    for _ in range(20):
        text_leg = [(i, rnd.uniform(0, 30)) for i in rnd.sample(range(40), 15)]
        vector_leg = [(i, rnd.uniform(-1, 1)) for i in rnd.sample(range(40), 15)]
        a, b = rnd.uniform(0.1, 50), rnd.uniform(-100, 100)
        rescaled = [(i, a * s + b) for i, s in text_leg]
        one = combine([(text_leg, 1.0), (vector_leg, 1.0)], limit=40)
        two = combine([(rescaled, 1.0), (vector_leg, 1.0)], limit=40)
        assert [i for i, _ in one] == [i for i, _ in two]
        assert [s for _, s in one] == pytest.approx([s for _, s in two])


@pytest.mark.parametrize(
    ("leg", "expected"),
    [
        ([(4, 2.5)], {4: 1.0}),  # a single candidate is its leg's best
        ([(4, 0.3), (5, 0.3), (6, 0.3)], {4: 1.0, 5: 1.0, 6: 1.0}),  # all equal: all the best
        ([], {}),
        ([(4, 3.0), (4, 9.0), (5, 1.0)], {4: 1.0, 5: 0.0}),  # a repeated id counts at its best
        ([(4, math.nan), (5, 2.0), (6, 1.0)], {5: 1.0, 6: 0.0}),  # non-finite scores are left out
        ([(4, math.inf), (5, -math.inf)], {}),
    ],
)
def test_normalisation_edge_cases(leg: list[tuple[int, float]], expected: dict[int, float]) -> None:
    assert min_max(leg) == expected


def test_one_leg_empty_leaves_the_other_legs_order_and_halves_its_scores() -> None:
    text_leg = [(1, 4.0), (2, 3.0), (3, 1.0)]
    fused = combine([(text_leg, 1.0), ([], 1.0)], limit=10)
    assert [i for i, _ in fused] == [1, 2, 3]
    assert [s for _, s in fused] == pytest.approx([0.5, 0.5 * found(2 / 3), 0.5 * found(0.0)])
    assert combine([([], 1.0), ([], 1.0)], limit=10) == []


def test_fused_scores_are_never_nan_and_stay_between_zero_and_one() -> None:
    rnd = random.Random(3)
    for _ in range(50):
        legs = [
            ([(rnd.randrange(20), rnd.choice([rnd.uniform(-5, 5), 1.0, math.nan])) for _ in range(rnd.randrange(6))], w)
            for w in (rnd.choice([0.0, 0.25, 1.0, 2.0]), rnd.choice([0.25, 1.0]))
        ]
        for _, score in combine(legs, limit=50):
            assert not math.isnan(score)
            assert 0.0 <= score <= 1.0 + 1e-12


def test_a_zero_weight_leg_neither_adds_nor_dilutes() -> None:
    text_leg = [(1, 2.0), (2, 1.0)]
    fused = combine([(text_leg, 1.0), ([(3, 0.9), (1, 0.1)], 0.0)], limit=10)
    assert fused == [(1, 1.0), (2, pytest.approx(FOUND_FLOOR))]
    assert combine([(text_leg, 0.0)], limit=10) == []
    assert combine([(text_leg, 1.0)], limit=0) == []


def test_a_leg_weak_for_the_querys_script_still_drops() -> None:
    """An English-only embedder on a Chinese query: its best hit no longer beats full text's."""
    text_w, vector_w = leg_weights("番茄牛腩怎么做", embedder_multilingual=False)
    assert vector_w == pytest.approx(text_w * WEAK_LEG_FACTOR)
    text_leg, vector_leg = [(1, 8.0), (2, 1.0)], [(2, 0.9), (1, 0.2)]
    assert [i for i, _ in combine([(text_leg, text_w), (vector_leg, vector_w)], limit=2)] == [1, 2]
    equal_w = leg_weights("tomato beef stew", embedder_multilingual=False)
    tied = combine([(text_leg, equal_w[0]), (vector_leg, equal_w[1])], limit=2)
    assert tied[0][1] == pytest.approx(tied[1][1])


def test_two_legs_that_disagree_tie_and_the_tie_key_decides() -> None:
    """Equal weights: the text leg's first is the vector leg's last and the other way round."""
    text_leg, vector_leg = [(1, 9.0), (2, 4.0)], [(2, 0.8), (1, 0.7)]
    by_id = combine([(text_leg, 1.0), (vector_leg, 1.0)], limit=2)
    assert [i for i, _ in by_id] == [1, 2]
    assert [score for _, score in by_id] == pytest.approx([(found(1.0) + found(0.0)) / 2, 0.525])
    assert by_id[0][1] == by_id[1][1]
    newer = {1: 1, 2: 0}  # document 2 is the newer one
    assert [i for i, _ in combine([(text_leg, 1.0), (vector_leg, 1.0)], limit=2, tie_key=newer.__getitem__)] == [2, 1]


def test_weighted_sums_reached_in_a_different_float_order_still_tie() -> None:
    """Scores that are equal in exact arithmetic but summed in another order compare equal."""
    legs = [
        ([(1, 0.3), (2, 0.2), (3, 0.1)], 0.1),
        ([(3, 0.3), (1, 0.2), (2, 0.1)], 0.1),
        ([(2, 0.3), (3, 0.2), (1, 0.1)], 0.1),
    ]
    assert [i for i, _ in combine(legs, limit=3, tie_key=lambda i: -i)] == [3, 2, 1]
    assert [i for i, _ in combine(legs, limit=3)] == [1, 2, 3]


def test_an_id_a_leg_returned_last_still_beats_one_that_leg_did_not_return() -> None:
    """In a small space the vector leg returns every candidate: the only full-text match, last by
    vectors, must not tie with the vectors' first that holds no query word."""
    text_leg, vector_leg = [(1, 5.0)], [(2, 0.9), (3, 0.5), (1, 0.1)]
    fused = combine([(text_leg, 1.0), (vector_leg, 1.0)], limit=3)
    assert [i for i, _ in fused] == [1, 2, 3]
    assert fused[0][1] == pytest.approx((1.0 + FOUND_FLOOR) / 2)
    assert fused[1][1] == pytest.approx(0.5)
