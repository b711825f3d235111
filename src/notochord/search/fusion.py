"""Fusion of the full-text and vector result lists (DESIGN §5, K-SRCH-02).

Rules:

- :func:`combine` (what search uses): each leg's scores are min–max normalised over the list that
  leg returned for this query — its best hit 1, its last ``FOUND_FLOOR`` (0.05), linear between —
  and an id's fused score is the weighted mean of its normalised scores, a leg that did not return
  it counting 0. The fused score is therefore in [0, 1]: 1 is the best hit of every leg, a hit
  found by one leg alone scores at most that leg's share of the weights. A leg whose scores are
  all equal (a single hit, or ties only) gives each of them 1. Non-finite scores are ignored; the
  result never holds NaN.
- :func:`fuse` (reciprocal-rank fusion, kept for comparison in the benchmark): each leg
  contributes ``weight / (k + rank)`` for every id it returns.
- Ties (equal fused scores, compared after rounding away float noise) break by the caller's
  ``tie_key`` (for search: newer document date first, then ref), else by the smaller id. The order is
  therefore the same on every run.
- A leg is trusted less when it is weak for the query's script (:func:`leg_weights`):

  * vectors from an English-only embedder (``multilingual=False``) on a query that is mostly CJK,
    Cyrillic, Arabic, … get ``WEAK_LEG_FACTOR`` of their weight: such a model maps unknown scripts
    to near-random points;
  * full text on a query mostly in a script written without spaces that is *not* bigrammed
    (Thai, Lao, Khmer, Myanmar) gets the same factor: unicode61 sees a whole phrase as one token, so
    only identical phrases match.

The design was chosen with ``python bench/retrieval.py --tune`` on SciFact's 809 *train* queries
(whole corpus: 5,183 documents, 10,091 chunks; disjoint from the test queries the benchmark
reports), nDCG@10 with documents judged, 100 hits per leg as search asks for 10 documents:

    full text alone: passages 0.6962 · whole documents 0.7022 · vectors alone 0.6774
    reciprocal-rank fusion of passages, then documents at their best passage:
        k=30, equal weights (the former default) 0.7243 · best found k=5, w_vec 0.75: 0.7351
    reciprocal-rank fusion of documents (each leg collapsed first): best found 0.7315
    convex combination of min–max normalised scores, α the text weight's share:
        passages, documents after fusing: α 0.5 0.7383 · 0.55 0.7386
        documents, each leg at its best passage: α 0.5 0.7416
        documents, full text ranking whole documents: α 0.45 0.7426 · 0.5 0.7431 · 0.55 0.7423
    theoretical min–max (BM25 from 0; cosine from 0 / from −1): best at the edge of the sweep,
        α 0.05: 0.7457 / 0.7386, already 0.7389 / 0.7278 at α 0.1 — the cosines of an e5 model
        sit in a narrow band, so the right α belongs to the embedder, not to the design
    z-scores, documents: α 0.45 0.7464 · 0.5 0.7450 — within 0.003 of min–max, unbounded scores
    hits per leg, the chosen design: 50 0.7418 · 100 0.7431 · 200 0.7431 · 300 0.7436
    vector pseudo-relevance feedback (query + β · mean of the top 3–10 fused documents' passages),
        then the chosen fusion: 0.7410–0.7459 — not worth a second vector search

Chosen: min–max with equal weights (α 0.5, in a flat region: 0.7423–0.7431 for α 0.45–0.55),
documents fused as documents; a score a person can read (a share of the best) was worth more
than z-scores' 0.002–0.003. Search itself scores 0.7428 on the train queries (its ties go by
date and id). Test queries at 10 documents: 0.7281 (0.7288 before ``FOUND_FLOOR``, which was
added for a correctness case and moves train by under 0.0001: 0.74256 without, 0.74253 with it),
where reciprocal-rank fusion at k=30 had 0.7094 (full text alone 0.6905, vectors alone 0.6602).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

__all__ = [
    "DEFAULT_RRF_K",
    "DEFAULT_TEXT_WEIGHT",
    "DEFAULT_VECTOR_WEIGHT",
    "FOUND_FLOOR",
    "WEAK_LEG_FACTOR",
    "combine",
    "fuse",
    "leg_weights",
    "min_max",
    "script_profile",
]

DEFAULT_RRF_K = 30  # reciprocal-rank fusion only
DEFAULT_TEXT_WEIGHT = 1.0
DEFAULT_VECTOR_WEIGHT = 1.0
WEAK_LEG_FACTOR = 0.25
FOUND_FLOOR = 0.05
"""What a leg's last hit keeps of that leg's weight in :func:`combine`: being returned by a leg
counts for more than not being returned (in a small space a leg returns every candidate, and its
last one would otherwise score as if it had not been found). On SciFact's train queries 0.05 moves
nDCG@10 by less than 0.0001."""
# Fused scores are sums of a few reciprocals; equal rank patterns must compare equal despite the
# order in which floats were added.
_SCORE_DIGITS = 12

RankedList = list[tuple[int, float]]


def min_max(ranked: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Each id's score rescaled to [0, 1] over this list: the best 1, the worst 0.

    An id listed more than once counts at its best score; non-finite scores are left out; when all
    scores are equal (one id, or ties only) each id gets 1.
    """
    best: dict[int, float] = {}
    for item_id, score in ranked:
        if math.isfinite(score) and (item_id not in best or score > best[item_id]):
            best[item_id] = score
    if not best:
        return {}
    low, high = min(best.values()), max(best.values())
    spread = high - low
    if not spread > 0.0 or round(spread, _SCORE_DIGITS) == 0.0:
        return dict.fromkeys(best, 1.0)
    return {i: (s - low) / spread for i, s in best.items()}


def combine(
    lists: Sequence[tuple[RankedList, float]],
    *,
    limit: int,
    tie_key: Callable[[int], Any] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ``(id, score)`` lists, each with a weight, by the weighted mean of min–max normalised scores.

    See the module rules. A list with weight 0 (or less) counts neither in the sum nor in the
    weights; so does nothing when every weight is 0. Returns ``(id, fused score in [0, 1])``, best first.

    Args:
        limit: the most ids to return.
        tie_key: maps an id to a sortable key; among equal fused scores the smaller key ranks first.
    """
    weighted = [(min_max(ranked), weight) for ranked, weight in lists if weight > 0.0]
    total = sum(weight for _, weight in weighted)
    if limit <= 0 or total <= 0.0:
        return []
    if len(weighted) == 1:
        # one leg (a search without vectors): the same float operations as the sum below, whose
        # ``0.0 +`` changes no positive number, in one pass instead of two
        ((normalised, weight),) = weighted
        rescale = 1.0 - FOUND_FLOOR
        fused = {i: weight * (FOUND_FLOOR + rescale * v) / total for i, v in normalised.items()}
        return _ordered(fused, limit, tie_key)
    scores: dict[int, float] = {}
    for normalised, weight in weighted:
        for item_id, value in normalised.items():
            scores[item_id] = scores.get(item_id, 0.0) + weight * (FOUND_FLOOR + (1.0 - FOUND_FLOOR) * value)
    return _ordered({i: s / total for i, s in scores.items()}, limit, tie_key)


def fuse(
    lists: Sequence[tuple[RankedList, float]],
    *,
    k: int = DEFAULT_RRF_K,
    limit: int,
    tie_key: Callable[[int], Any] | None = None,
) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of ranked ``(id, score)`` lists, each with a weight: ``(id, fused score)``.

    Each input list must be ordered best first; only positions are used. A list with weight 0
    contributes nothing. Within one list, a repeated id counts at its best rank only.

    Args:
        k: the RRF constant; larger values flatten the advantage of the top ranks.
        limit: the most ids to return.
        tie_key: maps an id to a sortable key; among equal fused scores the smaller key ranks first.
    """
    if limit <= 0:
        return []
    scores: dict[int, float] = {}
    for ranked, weight in lists:
        if weight <= 0.0:
            continue
        seen: set[int] = set()
        rank = 0
        for item_id, _score in ranked:
            if item_id in seen:
                continue
            seen.add(item_id)
            rank += 1
            scores[item_id] = scores.get(item_id, 0.0) + weight / (k + rank)

    return _ordered(scores, limit, tie_key)


def _ordered(scores: dict[int, float], limit: int, tie_key: Callable[[int], Any] | None) -> list[tuple[int, float]]:
    """Ids by score, best first, ties by ``tie_key`` (else the smaller id), at most ``limit``.

    Scores tie when equal to :data:`_SCORE_DIGITS` digits. Rounding keeps the order of scores, so
    the ids of one rounded score are neighbours in the order of the raw scores: the raw scores are
    sorted once (in C), and only the head up to the limit's last tie group is rounded and grouped.
    """
    if limit <= 0 or not scores:
        return []
    by_raw = sorted(scores.items(), key=itemgetter(1), reverse=True)
    ranked_ids: list[int] = []
    start = 0
    while start < len(by_raw) and len(ranked_ids) < limit:
        level = round(by_raw[start][1], _SCORE_DIGITS)
        end = start + 1
        while end < len(by_raw) and round(by_raw[end][1], _SCORE_DIGITS) == level:
            end += 1
        group = [i for i, _ in by_raw[start:end]]
        if len(group) > 1:
            group.sort()
            if tie_key is not None:
                # asked only inside groups of equal scores, and only until the limit is reached:
                # hundreds of ids may tie (rank r in one leg alone is the same score for every r-th id)
                group.sort(key=tie_key)
        ranked_ids += group
        start = end
    return [(i, scores[i]) for i in ranked_ids[:limit]]


# Scripts written without spaces between words that the full-text index does not bigram.
_UNSPACED_SCRIPTS = ("THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")
_CJK_PREFIXES = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")


def script_profile(query: str) -> dict[str, float]:
    """Return the share of the query's letters in ``latin``, ``cjk``, ``unspaced`` and ``other`` scripts.

    Shares sum to 1 when the query has letters; an empty dict when it has none.
    """
    counts = {"latin": 0, "cjk": 0, "unspaced": 0, "other": 0}
    total = 0
    for char in query:
        if not char.isalpha():
            continue
        total += 1
        name = unicodedata.name(char, "")
        if name.startswith("LATIN") or char.isascii():
            counts["latin"] += 1
        elif name.startswith(_CJK_PREFIXES):
            counts["cjk"] += 1
        elif name.startswith(_UNSPACED_SCRIPTS):
            counts["unspaced"] += 1
        else:
            counts["other"] += 1
    if total == 0:
        return {}
    return {script: n / total for script, n in counts.items()}


def leg_weights(
    query: str,
    *,
    embedder_multilingual: bool,
    text_weight: float = DEFAULT_TEXT_WEIGHT,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT,
) -> tuple[float, float]:
    """Return ``(text weight, vector weight)`` for ``query``, lowering a leg that is weak for its script.

    A script "dominates" when more than half of the query's letters are in it. See the module rules.
    """
    profile = script_profile(query)
    if not profile:
        return text_weight, vector_weight
    if not embedder_multilingual and profile["latin"] < 0.5:
        vector_weight *= WEAK_LEG_FACTOR
    if profile["unspaced"] > 0.5:
        text_weight *= WEAK_LEG_FACTOR
    return text_weight, vector_weight
