"""Ties in hybrid search: equal fused scores go to the newer document date, then the smaller
document id, then the smaller chunk id — from what the candidates carry, not from a lookup per tie
(K-SRCH-02, OD-K38), on both backends.

A scripted embedder makes the two legs disagree exactly: full text ranks ``A`` first and ``B``
second, vectors rank ``B`` first and ``A`` second. Each leg's scores are min–max normalised over
its own list, so each passage is 1 in one leg and its floor (0.05) in the other, and with the
default (equal) weights both fuse to exactly 0.525.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import notochord
from notochord.search.embeddings import Embedder
from sent_sql import statements_sent

from . import fakes


class ScriptedEmbedder(fakes.PlaneEmbedder):
    """Passages containing ``near`` point at the query, those containing ``far`` away from it."""

    model_id = "test/scripted-2"

    @staticmethod
    def _vector(text: str) -> npt.NDArray[np.float32]:
        if "near" in text:
            return np.array([1.0, 0.1], np.float32)
        if "far" in text:
            return np.array([0.6, 0.8], np.float32)
        return np.array([0.0, 1.0], np.float32)


@pytest.fixture
def open_space(spaces_with: Callable[[Embedder], notochord.Space]) -> Callable[[], notochord.Space]:
    """Opens fresh spaces (each its own data directory) with the scripted embedder."""
    return lambda: spaces_with(ScriptedEmbedder())


TEXT_FIRST = "river river river far"  # the full-text leg's first, the vector leg's second
VECTOR_FIRST = "river near"  # the vector leg's first, the full-text leg's second


def write(space: notochord.Space, items: Sequence[tuple[str, str, str]], collection: str | int = "keep") -> None:
    """``(title, body, date)`` documents, in this order, then their vectors."""
    for title, body, date in items:
        space.user.documents.upsert(collection=collection, key=title, title=title, body=body, meta={"date": date})
    space.index.wait()


def titles(space: notochord.Space, query: str = "river", **kwargs: Any) -> list[str]:
    return [h.title for h in space.user.search(query, **kwargs)]


def test_the_two_legs_really_disagree_so_the_fused_scores_tie(open_space: Callable[[], notochord.Space]) -> None:
    """The premise of the tests below: each leg ranks the other's first passage second, and the
    default weights are equal, so passages and documents alike tie at (1 + 0.05) / 2."""
    space = open_space()
    write(space, [("A", TEXT_FIRST, "2026-01-01"), ("B", VECTOR_FIRST, "2026-01-01")])
    hits = space.user.search("river")
    assert len(hits) == 2
    assert hits[0].score == pytest.approx(0.525, abs=1e-12)
    assert hits[1].score == pytest.approx(0.525, abs=1e-12)
    documents = space.user.search("river", group_by="document")
    assert [h.score for h in documents] == pytest.approx([0.525, 0.525], abs=1e-12)
    by_title = {h.title: h for h in hits}
    assert by_title["B"].similarity is not None and by_title["A"].similarity is not None
    assert by_title["B"].similarity > by_title["A"].similarity


@pytest.mark.parametrize("group_by", ["chunk", "document"])
def test_equal_scores_go_to_the_newer_document(open_space: Callable[[], notochord.Space], group_by: str) -> None:
    """Whichever leg prefers it, and whichever was written first, the newer document ranks first."""
    older_text_first = open_space()
    write(older_text_first, [("A", TEXT_FIRST, "2025-03-01"), ("B", VECTOR_FIRST, "2026-03-01")])
    assert titles(older_text_first, group_by=group_by) == ["B", "A"]
    newer_text_first = open_space()
    write(newer_text_first, [("A", TEXT_FIRST, "2026-03-01"), ("B", VECTOR_FIRST, "2025-03-01")])
    assert titles(newer_text_first, group_by=group_by) == ["A", "B"]
    written_later = open_space()
    write(written_later, [("B", VECTOR_FIRST, "2025-03-01"), ("A", TEXT_FIRST, "2026-03-01")])
    assert titles(written_later, group_by=group_by) == ["A", "B"]


def test_equal_scores_and_dates_go_to_the_smaller_document_id(open_space: Callable[[], notochord.Space]) -> None:
    """Same date: the document written first (the smaller id) ranks first, whichever leg prefers it."""
    text_first_written_first = open_space()
    write(text_first_written_first, [("A", TEXT_FIRST, "2026-03-01"), ("B", VECTOR_FIRST, "2026-03-01")])
    assert titles(text_first_written_first) == ["A", "B"]
    vector_first_written_first = open_space()
    write(vector_first_written_first, [("B", VECTOR_FIRST, "2026-03-01"), ("A", TEXT_FIRST, "2026-03-01")])
    assert titles(vector_first_written_first) == ["B", "A"]


def test_the_tie_order_is_the_same_on_every_search_and_after_a_write(open_space: Callable[[], notochord.Space]) -> None:
    """Repeated searches return the same order; a write that changes a date changes it at once."""
    space = open_space()
    write(space, [("A", TEXT_FIRST, "2025-03-01"), ("B", VECTOR_FIRST, "2026-03-01")])
    assert {tuple(titles(space)) for _ in range(5)} == {("B", "A")}
    space.user.documents.upsert(collection="keep", key="A", title="A", body=TEXT_FIRST, meta={"date": "2027-01-01"})
    space.index.wait()
    assert titles(space) == ["A", "B"]


def test_ties_break_the_same_with_and_without_hidden_collections(open_space: Callable[[], notochord.Space]) -> None:
    """K-SRCH-03: documents in a collection the caller cannot read — newer, older, equal scores — do
    not change the order of the caller's ties; the date ranks are the candidates' own."""
    alone = open_space()
    items = [("A", TEXT_FIRST, "2025-03-01"), ("B", VECTOR_FIRST, "2026-03-01")]
    write(alone, items)
    crowded = open_space()
    write(crowded, items)
    hidden = [(f"H{i}", body, date) for i, body in enumerate((TEXT_FIRST, VECTOR_FIRST)) for date in ("2024", "2030")]
    private = crowded.user.collections.create("Private")
    write(crowded, hidden, collection=private.id)
    expected = titles(alone, collections=["keep"])
    assert expected == ["B", "A"]
    assert titles(crowded, collections=["keep"]) == expected
    assert titles(crowded, collections=["keep"], group_by="document") == expected


def test_fusing_reads_no_document_dates_of_its_own(open_space: Callable[[], notochord.Space]) -> None:
    """What ties need is read with the candidates, once per data version; a search
    that fuses tied results runs no query joining chunks to documents (K-SRCH-02)."""
    space = open_space()
    write(space, [("A", TEXT_FIRST, "2025-03-01"), ("B", VECTOR_FIRST, "2026-03-01")])
    titles(space)
    with statements_sent(space.core.store.engine) as statements:
        assert titles(space) == ["B", "A"]
    assert statements, "the listener saw the search"
    joins = [s for s in statements if "doc_date" in s and "JOIN" in s.upper()]
    # nothing per tie, and not even the hits' own rows (text, title): the search before this one
    # read them at the same data version, and they are kept with its candidates
    assert joins == [], joins
