"""Fusion of the full-text and vector legs (K-SRCH-02, OD-K38: ties go to the newer date, then the ref)."""

from __future__ import annotations

from datetime import date

import pytest

from notochord.search.fusion import WEAK_LEG_FACTOR, fuse, leg_weights, script_profile


def test_reciprocal_rank_fusion_sums_weighted_reciprocals_of_ranks() -> None:
    text_leg = [(1, 9.0), (2, 5.0)]
    vector_leg = [(2, 0.9), (3, 0.8)]
    fused = dict(fuse([(text_leg, 1.0), (vector_leg, 2.0)], k=60, limit=10))
    assert fused[1] == pytest.approx(1 / 61)
    assert fused[2] == pytest.approx(1 / 62 + 2 / 61)
    assert fused[3] == pytest.approx(2 / 62)


def test_an_id_found_by_both_legs_outranks_ids_found_by_one() -> None:
    fused = fuse([([(1, 0.0), (2, 0.0)], 1.0), ([(3, 0.0), (2, 0.0)], 1.0)], limit=3)
    assert next(i for i, _ in fused) == 2


def test_only_ranks_matter_not_the_scale_of_scores() -> None:
    a = fuse([([(1, 1000.0), (2, 999.0)], 1.0), ([(2, 0.2), (1, 0.1)], 1.5)], limit=2)
    b = fuse([([(1, 0.3), (2, 0.1)], 1.0), ([(2, 90.0), (1, -5.0)], 1.5)], limit=2)
    assert a == b
    assert [i for i, _ in a] == [2, 1]


def test_ties_go_to_the_newer_date_then_the_smaller_ref() -> None:
    dates = {1: date(2026, 9, 1), 2: date(2026, 9, 29), 3: date(2026, 9, 29), 4: date(2026, 9, 29)}
    refs = {1: "doc_a", 2: "doc_c", 3: "doc_b", 4: "doc_d"}

    def newer_then_ref(item: int) -> tuple[int, str]:
        return (-dates[item].toordinal(), refs[item])

    # 1, 2 and 3 each sit at rank 1 of one equally weighted leg: an exact three-way tie.
    fused = fuse([([(1, 0.0)], 1.0), ([(2, 0.0)], 1.0), ([(3, 0.0), (4, 0.0)], 1.0)], limit=4, tie_key=newer_then_ref)
    assert [i for i, _ in fused] == [3, 2, 1, 4]


def test_ties_without_a_key_break_by_smaller_id_regardless_of_input_order() -> None:
    one = fuse([([(9, 0.0)], 1.0), ([(4, 0.0)], 1.0)], limit=2)
    two = fuse([([(4, 0.0)], 1.0), ([(9, 0.0)], 1.0)], limit=2)
    assert [i for i, _ in one] == [i for i, _ in two] == [4, 9]


def test_sums_reached_in_a_different_float_order_still_tie() -> None:
    # Each id holds ranks 1, 2 and 3 once, so the fused scores are equal, but they are summed in
    # different orders and may differ in the last bit.
    legs = [
        ([(1, 0.0), (2, 0.0), (3, 0.0)], 1.0),
        ([(3, 0.0), (1, 0.0), (2, 0.0)], 1.0),
        ([(2, 0.0), (3, 0.0), (1, 0.0)], 1.0),
    ]
    assert [i for i, _ in fuse(legs, limit=3, tie_key=lambda i: -i)] == [3, 2, 1]
    assert [i for i, _ in fuse(legs, limit=3)] == [1, 2, 3]


def test_a_zero_weight_leg_contributes_nothing_and_limit_caps_the_list() -> None:
    fused = fuse([([(1, 0.0), (2, 0.0)], 1.0), ([(3, 0.0)], 0.0)], limit=10)
    assert [i for i, _ in fused] == [1, 2]
    [(only, score)] = fuse([([(1, 0.0), (2, 0.0)], 1.0)], k=60, limit=1)
    assert only == 1
    assert score == pytest.approx(1 / 61)
    assert fuse([([(1, 0.0)], 1.0)], limit=0) == []


def test_a_repeated_id_in_one_leg_counts_once_at_its_best_rank() -> None:
    fused = dict(fuse([([(5, 0.0), (5, 0.0), (6, 0.0)], 1.0)], k=60, limit=5))
    assert fused == {5: pytest.approx(1 / 61), 6: pytest.approx(1 / 62)}


def test_script_profile_counts_letters_only() -> None:
    assert script_profile("123 !?") == {}
    profile = script_profile("番茄 beef")
    assert profile["cjk"] == pytest.approx(2 / 6)
    assert profile["latin"] == pytest.approx(4 / 6)
    assert script_profile("ต้มยำกุ้ง")["unspaced"] > 0.5


def test_an_english_only_embedder_is_trusted_less_on_a_mostly_chinese_query() -> None:
    text_w, vector_w = leg_weights("番茄牛腩怎么做", embedder_multilingual=False, text_weight=1.0, vector_weight=2.0)
    assert text_w == 1.0
    assert vector_w == pytest.approx(2.0 * WEAK_LEG_FACTOR)
    assert leg_weights("番茄牛腩怎么做", embedder_multilingual=True, text_weight=1.0, vector_weight=2.0) == (
        1.0,
        2.0,
    )
    assert leg_weights("tomato 牛腩 stew", embedder_multilingual=False, text_weight=1.0, vector_weight=2.0) == (
        1.0,
        2.0,
    )


def test_full_text_is_trusted_less_on_a_thai_query() -> None:
    text_w, vector_w = leg_weights("ต้มยำกุ้งน้ำข้น", embedder_multilingual=True, text_weight=1.0, vector_weight=1.0)
    assert text_w == pytest.approx(WEAK_LEG_FACTOR)
    assert vector_w == 1.0


def test_a_query_without_letters_keeps_the_given_weights() -> None:
    assert leg_weights("2026", embedder_multilingual=False, text_weight=1.0, vector_weight=1.5) == (1.0, 1.5)
