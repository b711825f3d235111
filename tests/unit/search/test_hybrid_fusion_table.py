"""Search ranks as the fusion design says (K-SRCH-02, K-SRCH-03), on both backends.

Each leg's scores are min–max normalised over the list it returned for the query (its best 1, its
last ``FOUND_FLOOR`` = 0.05, linear between: ``f(x) = 0.05 + 0.95 x``), and a hit's score is the
weighted mean (equal weights by default), a leg that did not return it counting 0. A scripted
embedder fixes every passage's cosine to the query, and only two documents hold the query word, so
every fused score can be worked out by hand:

=====  ======================  =========  ===========  ======  ==========================
title  body                    full text  cosine       vector  fused
=====  ======================  =========  ===========  ======  ==========================
A      river river river       1 (best)   0.2          f(0.2)  (1 + 0.24) / 2 = 0.62
B      river                   f(0)       1.0 (best)   1       (0.05 + 1) / 2 = 0.525
C      (no query word)         —          0.8          f(0.8)  0.81 / 2 = 0.405
D      (no query word)         —          0.6          f(0.6)  0.62 / 2 = 0.31
E      (no query word)         —          0.0 (last)   f(0)    0.05 / 2 = 0.025
=====  ======================  =========  ===========  ======  ==========================
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest

import notochord
from notochord.search.embeddings import Embedder

from . import fakes


class AngleEmbedder(fakes.PlaneEmbedder):
    """The query points along x; a passage holding ``cosNN`` points at cosine ``NN / 10`` to it."""

    model_id = "test/angles-2"

    @staticmethod
    def _vector(text: str) -> npt.NDArray[np.float32]:
        for word in text.split():
            if word.startswith("cos") and word[3:].isdigit():
                cosine = int(word[3:]) / 10
                return np.array([cosine, math.sqrt(max(1.0 - cosine * cosine, 0.0))], np.float32)
        return np.array([0.0, 1.0], np.float32)


TABLE = [
    # title, body, fused score by hand (see the module docstring)
    ("A", "river river river cos02", 0.62),
    ("B", "river cos10", 0.525),
    ("C", "meadow cos08", 0.405),
    ("D", "meadow cos06", 0.31),
    ("E", "meadow cos00", 0.025),
]


@pytest.fixture
def open_space(spaces_with: Callable[[Embedder], notochord.Space]) -> Callable[[], notochord.Space]:
    """Opens fresh spaces (each its own data directory) with the angle embedder."""
    return lambda: spaces_with(AngleEmbedder())


def write(space: notochord.Space, items: Sequence[tuple[str, str]], collection: str | int = "keep") -> None:
    for title, body in items:
        space.user.documents.upsert(collection=collection, key=title, title=title, body=body)
    space.index.wait()


@pytest.mark.parametrize("group_by", ["chunk", "document"])
def test_search_ranks_the_table_as_the_design_says(
    open_space: Callable[[], notochord.Space], group_by: Literal["chunk", "document"]
) -> None:
    """Found by both legs beats found by one; a hit of one leg scores half its normalised score."""
    space = open_space()
    write(space, [(title, body) for title, body, _ in TABLE])
    hits = space.user.search("river", group_by=group_by)
    assert [h.title for h in hits] == [title for title, _, _ in TABLE]
    assert [h.score for h in hits] == pytest.approx([score for _, _, score in TABLE], abs=1e-6)
    assert [h.text_match for h in hits] == [True, True, False, False, False]


def test_documents_and_their_hidden_neighbours_rank_and_score_alike(open_space: Callable[[], notochord.Space]) -> None:
    """K-SRCH-03: a collection the caller cannot read — the query word more often, cosines above and
    below every visible one — moves neither the order nor the scores, passages or documents."""
    alone = open_space()
    write(alone, [(title, body) for title, body, _ in TABLE])
    crowded = open_space()
    write(crowded, [(title, body) for title, body, _ in TABLE])
    private = crowded.user.collections.create("Private")
    hidden = [("H1", "river river river river river cos10"), ("H2", "river cos00"), ("H3", "meadow cos09")]
    write(crowded, hidden, collection=private.id)
    for group_by in ("chunk", "document"):
        expected = [(h.title, h.score) for h in alone.user.search("river", collections=["keep"], group_by=group_by)]
        assert [title for title, _ in expected] == [title for title, _, _ in TABLE]
        found = [(h.title, h.score) for h in crowded.user.search("river", collections=["keep"], group_by=group_by)]
        assert found == expected
    everything = [h.title for h in crowded.user.search("river")]
    assert everything[0] == "H1"  # the hidden documents are there for a caller who may read them


WORDS = ["river", "stone", "cloud", "tiger", "lemon", "quartz"]


def test_random_corpora_rank_identically_with_and_without_hidden_collections(
    open_space: Callable[[], notochord.Space],
) -> None:
    rnd = random.Random(11)
    visible = [
        (f"v{i}", " ".join(rnd.choices(WORDS, k=rnd.randint(2, 8))) + f" cos{rnd.randint(0, 10):02d}")
        for i in range(20)
    ]
    hidden = [
        (f"h{i}", " ".join(rnd.choices(WORDS[:2], k=rnd.randint(4, 12))) + f" cos{rnd.randint(0, 10):02d}")
        for i in range(20)
    ]
    queries = [" ".join(rnd.choices(WORDS, k=rnd.randint(1, 3))) for _ in range(8)]
    alone, crowded = open_space(), open_space()
    write(alone, visible)
    write(crowded, visible)
    write(crowded, hidden, collection=crowded.user.collections.create("Private").id)
    for group_by in ("chunk", "document"):
        for query in queries:
            expected = [(h.title, h.score) for h in alone.user.search(query, collections=["keep"], group_by=group_by)]
            assert expected
            assert all(0.0 <= score <= 1.0 for _, score in expected)
            found = crowded.user.search(query, collections=["keep"], group_by=group_by)
            assert [(h.title, h.score) for h in found] == expected


def test_a_document_is_shown_at_the_passage_of_the_leg_that_scored_it_higher(
    open_space: Callable[[], notochord.Space],
) -> None:
    """With ``group_by="document"``: "Long" holds the query word in its first passage and the vector
    match in its last. Full text puts it last of two documents (0.05), vectors first (1): it is
    shown at its last passage, with that passage's similarity; "Short" (full text's first, the
    vectors' last) at its only one. Both score (1 + 0.05) / 2; the tie goes to the smaller id."""
    space = open_space()
    filler = " ".join(f"word{i}" for i in range(260))  # long enough for two passages
    write(space, [("Long", f"river {filler}\n\n{filler} cos10"), ("Short", "river river river cos00")])
    hits = space.user.search("river", group_by="document")
    assert [h.title for h in hits] == ["Long", "Short"]
    long_hit = hits[0]
    assert long_hit.chunk > 0
    assert "cos10" in long_hit.text and "river" not in long_hit.text
    assert long_hit.similarity == pytest.approx(1.0)
    assert long_hit.text_match  # the word is in the document, if not in the passage shown
    assert [h.score for h in hits] == pytest.approx([0.525, 0.525])
    assert hits[1].chunk == 0
    # per passage, Long's last passage holds no query word: the vectors' half alone
    passages = space.user.search("river")
    assert [(h.title, h.chunk > 0) for h in passages[:2]] == [("Short", False), ("Long", True)]
    assert [h.score for h in passages[:2]] == pytest.approx([0.525, 0.5])
