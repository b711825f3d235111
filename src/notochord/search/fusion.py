"""Weighted reciprocal-rank fusion of the full-text and vector result lists (DESIGN §5, K-SRCH-02).

Rules:

- Each leg contributes ``weight / (k + rank)`` for every id it returns (rank counted from 1); an id's
  fused score is the sum over the legs. Only ranks matter, so BM25 and cosine scores, which live on
  unrelated scales, never need normalising.
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

Default weights were tuned with ``python bench/retrieval.py --tune`` on SciFact's *train* queries
(disjoint from the test queries the benchmark reports), legs fused at the chunk level, hits collapsed
to documents at their best passage. Sweeps so far are on a prefix of the corpus: embedding all
10,091 chunks takes hours on a loaded two-core machine, so the whole corpus is not measured yet.

First 1,800 documents (3,743 chunks, 380 train queries), 300 chunks per leg, nDCG@10:

    full text alone 0.7402 · vectors alone 0.7324
    k=10:  w_vec 0.5 0.7696 · 1.0 0.7794 · 1.25 0.7812 (best) · 2.0 0.7669
    k=30:  w_vec 0.5 0.7727 · 1.0 0.7804 · 1.25 0.7763 · 2.0 0.7717
    k=60:  w_vec 0.5 0.7730 · 1.0 0.7768 · 1.25 0.7719 · 2.0 0.7747
    k=100: w_vec 0.5 0.7717 · 1.0 0.7741 · 1.25 0.7709 · 2.0 0.7730

First 1,206 documents (2,368 chunks, 270 train queries), 100 chunks per leg (what a search for 10
documents asks of each leg), nDCG@10:

    full text alone 0.7837 · vectors alone 0.7981
    k=10:  w_vec 0.5 0.8209 · 1.0 0.8323 (best) · 1.25 0.8303 · 1.5 0.8265 · 2.0 0.8210
    k=20:  w_vec 0.5 0.8191 · 1.0 0.8298 · 1.25 0.8261 · 1.5 0.8297 · 2.0 0.8200
    k=30:  w_vec 0.5 0.8180 · 1.0 0.8278 · 1.25 0.8242 · 1.5 0.8279 · 2.0 0.8205
    k=60:  w_vec 0.5 0.8159 · 1.0 0.8257 · 1.25 0.8199 · 1.5 0.8199 · 2.0 0.8206
    k=100: w_vec 0.5 0.8148 · 1.0 0.8241 · 1.25 0.8169 · 1.5 0.8183 · 2.0 0.8176

    chunks per leg 200 or 300 instead of 100: within 0.002 of the row above
    document = its best passage 0.8278 · sum of its best 2 passages 0.7541 · of all 0.7268 (k=30, w 1)

(A sweep on the first 580 documents, 107 train queries, leaned towards w_vec 1.5–2 by under 0.005.)
The surface is flat: every fused setting beats either leg by 0.03–0.05, and settings differ by under
0.02. Equal weights are best or within 0.005 of the best at every k in both larger sweeps; k=10
leads k=30 by 0.0045 on 1,206 documents and trails it by 0.001 on 1,800 — noise. We keep k=30 with
equal weights, in the middle of the stable region (k 10–30, w_vec 1–1.25), a document at its best
passage (summing passages favours long documents and loses 0.07–0.1), and 100 chunks per leg.
Re-tune on the whole corpus once its vectors are cached, and when a second data set lands, so the
defaults are never fitted to a single collection.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "DEFAULT_RRF_K",
    "DEFAULT_TEXT_WEIGHT",
    "DEFAULT_VECTOR_WEIGHT",
    "WEAK_LEG_FACTOR",
    "fuse",
    "leg_weights",
    "script_profile",
]

DEFAULT_RRF_K = 30
DEFAULT_TEXT_WEIGHT = 1.0
DEFAULT_VECTOR_WEIGHT = 1.0
WEAK_LEG_FACTOR = 0.25
# Fused scores are sums of a few reciprocals; equal rank patterns must compare equal despite the
# order in which floats were added.
_SCORE_DIGITS = 12

RankedList = list[tuple[int, float]]


def fuse(
    lists: Sequence[tuple[RankedList, float]],
    *,
    k: int = DEFAULT_RRF_K,
    limit: int,
    tie_key: Callable[[int], Any] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked ``(id, score)`` lists, each with a weight, into one list of ``(id, fused score)``.

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

    rounded = {i: round(s, _SCORE_DIGITS) for i, s in scores.items()}
    by_score = sorted(scores, key=lambda i: (-rounded[i], i))
    if tie_key is None:
        return [(i, scores[i]) for i in by_score[:limit]]
    # ask the tie key only inside groups of equal scores, and only until the limit is reached:
    # hundreds of ids may tie (rank r in one leg alone is the same score for every r-th id)
    ranked_ids: list[int] = []
    start = 0
    while start < len(by_score) and len(ranked_ids) < limit:
        end = start + 1
        while end < len(by_score) and rounded[by_score[end]] == rounded[by_score[start]]:
            end += 1
        group = by_score[start:end]
        if len(group) > 1:
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
