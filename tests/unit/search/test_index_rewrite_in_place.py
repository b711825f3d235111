"""Chunks rewritten in place keep their positions in the in-memory index (K-SRCH-03).

A chunk whose full-text row is replaced under the same id (a repair of an imported document, a
write that keeps a document's chunk ids) is re-read by the refresh and replaced. That used to sort
every posting of the index again; now its new postings are placed among the held ones. Whatever
the index held before (a tail of appended chunks, dead chunks), the result is the one the sorting
merge gives, array for array, and holds what the chunks now hold.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from notochord.search.inverted_index_arrays import Held, InvertedIndex, Postings, assemble
from notochord.search.inverted_index_changes import _merged_by_sort, appended, compacted

from .index_contents import index_contents

VOCABULARY = ["ash", "birch", "cedar", "elm", "fir", "hazel", "larch", "oak", "pine", "yew"]
Chunks = dict[int, dict[str, int]]


def _postings(chunks: Chunks) -> Postings:
    """What a refresh reads for these chunks: ids ascending, postings term then chunk."""
    ids = sorted(chunks)
    names = sorted({term for terms in chunks.values() for term in terms})
    rows = sorted((names.index(term), at, tf) for at, i in enumerate(ids) for term, tf in chunks[i].items())
    return Postings(
        ids=np.array(ids, np.int64),
        lengths=np.array([sum(chunks[i].values()) for i in ids], np.int32),
        hashes=np.array([[i * 7 + 1, i // 3] for i in ids], np.int64).reshape(-1, 2),
        names=names,
        term_of=np.array([r[0] for r in rows], np.int64),
        chunk_of=np.array([r[1] for r in rows], np.int64),
        frequencies=np.array([r[2] for r in rows], np.int32),
    )


def _built(chunks: Chunks) -> InvertedIndex:
    names = sorted({term for terms in chunks.values() for term in terms})
    pairs = sorted((term, i, tf) for i, terms in chunks.items() for term, tf in terms.items())
    per_term = np.array([sum(1 for p in pairs if p[0] == name) for name in names], np.int64)
    docs = np.array([p[1] for p in pairs], np.int64)
    tfs = np.array([p[2] for p in pairs], np.int32)
    ids = np.unique(docs)
    hashes = np.array([[i * 5 + 2, i // 3] for i in ids.tolist()], np.int64).reshape(-1, 2)
    return assemble(b"v0", names, per_term, docs, tfs, Held(hashes=hashes))


def _terms() -> st.SearchStrategy[dict[str, int]]:
    return st.dictionaries(st.sampled_from(VOCABULARY), st.integers(1, 3), min_size=1, max_size=4)


@st.composite
def histories(draw: st.DrawFn) -> tuple[InvertedIndex, np.ndarray, Postings, Chunks]:
    """A held index (some chunks appended to its tail, some dead), then a rewrite of held chunks."""
    first = draw(st.dictionaries(st.integers(1, 60), _terms(), min_size=1, max_size=20))
    index = _built(first)
    top = max(first)
    later = draw(st.dictionaries(st.integers(top + 1, top + 20), _terms(), max_size=6))
    held_ids = sorted(first)
    dead = draw(st.lists(st.sampled_from(held_ids), unique=True, max_size=max(0, len(held_ids) - 1)))
    if later or dead:
        index = appended(index, np.array(sorted(dead), np.int64), _postings(later), version=b"v1", held=index.held)
    now = {i: t for i, t in {**first, **later}.items() if i not in dead}
    live = sorted(now)
    chosen = draw(st.lists(st.sampled_from(live), unique=True, min_size=1, max_size=len(live)))
    # a rewrite may also leave a chunk without a single token
    rewrite = {i: draw(st.one_of(_terms(), st.just({}))) for i in chosen}
    leaving = draw(st.lists(st.sampled_from(live), unique=True, max_size=2))
    for i, terms in rewrite.items():
        now[i] = terms
    for i in leaving:
        if i not in rewrite:
            now.pop(i)
    now = {i: t for i, t in now.items() if t}
    gone = np.union1d(np.array(sorted(leaving), np.int64), np.array(sorted(rewrite), np.int64))
    return index, gone, _postings(rewrite), now


@settings(max_examples=300, deadline=None)
@given(histories())
def test_a_rewrite_in_place_equals_the_sorting_merge_and_holds_what_the_chunks_hold(
    history: tuple[InvertedIndex, np.ndarray, Postings, Chunks],
) -> None:
    """Array for array the same index, and the same contents as a rebuild."""
    index, gone, rewrite, now = history
    placed = compacted(index, gone, rewrite, version=b"v2", held=index.held)
    sorted_merge = _merged_by_sort(index, gone, rewrite, version=b"v2", held=index.held)

    assert placed.tail is None and placed.alive is None
    for name in ("ids", "lengths", "starts", "ends", "positions", "frequencies"):
        assert np.array_equal(getattr(placed, name), getattr(sorted_merge, name)), name
    assert placed.terms == sorted_merge.terms
    assert placed.held.hashes is not None and sorted_merge.held.hashes is not None
    assert np.array_equal(placed.held.hashes, sorted_merge.held.hashes)

    lengths, postings = index_contents(placed)
    assert lengths == {i: sum(t.values()) for i, t in now.items()}
    expected: dict[str, list[tuple[int, int]]] = {}
    for i in sorted(now):
        for term, tf in now[i].items():
            expected.setdefault(term, []).append((i, tf))
    assert postings == expected


def test_an_id_the_index_does_not_hold_below_its_highest_takes_the_sorting_merge() -> None:
    """A chunk new to the index, below its highest id, is merged by sorting."""
    index = _built({2: {"oak": 1}, 9: {"elm": 2}})
    added = _postings({5: {"oak": 1, "yew": 1}})
    merged = compacted(index, np.zeros(0, np.int64), added, version=b"v1", held=index.held)
    assert merged.ids.tolist() == [2, 5, 9]
    assert index_contents(merged)[1] == {"elm": [(9, 2)], "oak": [(2, 1), (5, 1)], "yew": [(5, 1)]}
