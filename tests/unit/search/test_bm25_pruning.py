"""Full-text ranking at scale: pruned BM25 equals exhaustive BM25 (K-SRCH-03).

The full-text leg ranks through MaxScore pruning (:func:`notochord.search.inverted_index.top_bm25`):
only the rarest query terms' postings are walked, frequent words are looked up for the chunks that
can still reach the top. The ranking — ids, order, tie-break and every score, bit for bit — must be
the one of scoring every posting (:func:`notochord.search.bm25.rank_exhaustive`), with or without
hidden chunks, and the index a search uses must equal one rebuilt from scratch after any writes.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Engine, create_engine, text

from notochord.search import inverted_index
from notochord.search.bm25 import K1, B, query_tokens, rank, rank_exhaustive
from notochord.search.inverted_index import CandidateMask, InvertedIndex, build_index, text_index, top_bm25
from notochord.search.textindex import fts_delete, fts_insert, fts_table_ddl

from .index_contents import index_contents

TABLE = "chunk_fts"
# made-up words Porter leaves alone (no suffix it strips), so each is its own term
VOCABULARY = [f"q{a}{b}x" for a in "bcdfg" for b in "hjklmnpr"]
DIGITS = 12


def zipf_text(rnd: random.Random, words: int) -> str:
    """Words drawn with Zipf frequencies: a few in nearly every chunk, most in a few."""
    weights = [1.0 / (r + 1) ** 1.1 for r in range(len(VOCABULARY))]
    return " ".join(rnd.choices(VOCABULARY, weights=weights, k=words))


def fresh() -> tuple[Connection, Engine]:
    engine = create_engine("sqlite://")
    c = engine.connect()
    c.execute(text(fts_table_ddl(TABLE)))
    return c, engine


@pytest.fixture
def conn() -> Iterator[Connection]:
    c, engine = fresh()
    yield c
    c.close()
    engine.dispose()


def mask_of(index: InvertedIndex, ids: list[int]) -> CandidateMask:
    return CandidateMask.of(index, index.mask_of(np.asarray(sorted(ids), dtype=np.int64)))


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 300),
    hidden=st.sampled_from([0.0, 0.3, 0.7]),
    query_words=st.integers(1, 8),
    limit=st.integers(1, 40),
)
def test_pruned_ranking_equals_exhaustive_bm25_bit_for_bit(
    seed: int, size: int, hidden: float, query_words: int, limit: int
) -> None:
    """K-SRCH-03: over Zipf-distributed chunks, with none, some or most chunks
    hidden, the pruned ranking has the exhaustive one's ids, order and scores exactly (ties included:
    short chunks of the same words score alike); forced to prune whatever the cost, too."""
    rnd = random.Random(seed)
    c, engine = fresh()
    try:
        corpus = {i: zipf_text(rnd, rnd.randint(1, 12)) for i in range(1, size + 1)}
        fts_insert(c, TABLE, corpus.items())
        index = text_index(c, TABLE)
        visible = [i for i in corpus if rnd.random() >= hidden] or [1]
        candidates = mask_of(index, visible)
        tokens = query_tokens(zipf_text(rnd, query_words))
        exhaustive = rank_exhaustive(index, candidates, tokens, limit=limit)
        assert rank(index, candidates, tokens, limit=limit) == exhaustive
        forced = top_bm25(index, candidates, tokens, limit=limit, k1=K1, b=B, digits=DIGITS, budget=float("inf"))
        assert forced == exhaustive
    finally:
        c.close()
        engine.dispose()


def test_hidden_chunks_never_move_the_pruned_ranking() -> None:
    """K-SRCH-03: with half the chunks hidden, 200 queries rank the visible ones
    exactly as a table holding only those chunks does, through the pruned path."""
    rnd = random.Random(61)
    corpus = {i: zipf_text(rnd, rnd.randint(5, 40)) for i in range(1, 1201)}
    visible = [i for i in corpus if i % 2 == 0]
    full, full_engine = fresh()
    alone, alone_engine = fresh()
    try:
        fts_insert(full, TABLE, corpus.items())
        fts_insert(alone, TABLE, ((i, corpus[i]) for i in visible))
        full_index, alone_index = text_index(full, TABLE), text_index(alone, TABLE)
        in_full, in_alone = mask_of(full_index, visible), mask_of(alone_index, visible)
        for _ in range(200):
            tokens = query_tokens(zipf_text(rnd, rnd.randint(1, 6)))
            found = rank(full_index, in_full, tokens, limit=50)
            assert found == rank(alone_index, in_alone, tokens, limit=50)
            assert found == rank_exhaustive(full_index, in_full, tokens, limit=50)
    finally:
        for c, e in ((full, full_engine), (alone, alone_engine)):
            c.close()
            e.dispose()


def test_a_word_in_every_chunk_is_looked_up_not_walked(conn: Connection) -> None:
    """A rare word beside a word every chunk holds ranks through the pool of the
    rare word's chunks — the common word's postings are looked up for them, never walked (walking
    them is what declining would mean) — and the common word still adds its share to every pooled
    chunk's score."""
    rows = [(i, "qbhx " * (1 + i % 3) + ("qcjx" if i % 97 == 0 else "")) for i in range(1, 2001)]
    fts_insert(conn, TABLE, rows)
    index = text_index(conn, TABLE)
    candidates = mask_of(index, list(range(1, 2001)))
    tokens = query_tokens("qcjx qbhx")
    assert len(candidates.postings(index, "qbhx")[0]) == 2000
    pruned = top_bm25(index, candidates, tokens, limit=10, k1=K1, b=B, digits=DIGITS)
    assert pruned is not None
    assert pruned == rank_exhaustive(index, candidates, tokens, limit=10)
    assert {i for i, _ in pruned} <= {i for i in range(1, 2001) if i % 97 == 0}


def test_a_query_of_frequent_words_only_is_scored_exhaustively(conn: Connection) -> None:
    """When every term's postings exceed the budget the pruned scorer declines
    (``None``) and :func:`rank` walks every posting — with the same result."""
    fts_insert(conn, TABLE, [(i, "qbhx qbjx " + "qbhx " * (i % 4)) for i in range(1, 501)])
    index = text_index(conn, TABLE)
    candidates = mask_of(index, list(range(1, 501)))
    tokens = query_tokens("qbhx qbjx")
    assert top_bm25(index, candidates, tokens, limit=10, k1=K1, b=B, digits=DIGITS) is None
    assert rank(index, candidates, tokens, limit=10) == rank_exhaustive(index, candidates, tokens, limit=10)


def test_fewer_matches_than_the_limit_come_back_whole(conn: Connection) -> None:
    """A query matching fewer chunks than asked returns every match, best first, as exhaustive does."""
    fts_insert(conn, TABLE, [(1, "qbhx qcjx"), (2, "qcjx"), (3, "qdkx"), (4, "qbhx qbhx")])
    index = text_index(conn, TABLE)
    candidates = mask_of(index, [1, 2, 3, 4])
    tokens = query_tokens("qbhx qcjx")
    found = rank(index, candidates, tokens, limit=100)
    assert [i for i, _ in found] == [i for i, _ in rank_exhaustive(index, candidates, tokens, limit=100)]
    assert {i for i, _ in found} == {1, 2, 4}


def same_index(a: InvertedIndex, b: InvertedIndex) -> None:
    """The same chunks, lengths and postings (an index kept current may hold them in other arrays)."""
    assert a.version == b.version
    assert index_contents(a) == index_contents(b)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 12))
def test_the_index_a_search_uses_equals_a_rebuild_after_writes(seed: int, steps: int) -> None:
    """After any sequence of committed inserts, edits and deletes, the shared index
    a search reads equals one built from scratch on a new connection, and so do the rankings."""
    rnd = random.Random(seed)
    folder = tempfile.TemporaryDirectory()
    engine = create_engine(f"sqlite:///{folder.name}/space.db")
    try:
        with engine.begin() as w:
            w.execute(text(fts_table_ddl(TABLE)))
        held: set[int] = set()
        for _ in range(steps):
            with engine.begin() as w:
                if held and rnd.random() < 0.3:
                    gone = rnd.sample(sorted(held), k=rnd.randint(1, len(held)))
                    fts_delete(w, TABLE, gone)
                    held -= set(gone)
                else:
                    ids = sorted({rnd.randint(1, 400) for _ in range(rnd.randint(1, 40))})
                    fts_insert(w, TABLE, ((i, zipf_text(rnd, rnd.randint(1, 15))) for i in ids))
                    held |= set(ids)
            with engine.connect() as r:
                shared = text_index(r, TABLE)
            with engine.connect() as r:
                rebuilt = build_index(r, TABLE)
            same_index(shared, rebuilt)
            assert shared.ids.tolist() == sorted(held)
            if held:
                visible = [i for i in sorted(held) if rnd.random() < 0.6] or sorted(held)[:1]
                tokens = query_tokens(zipf_text(rnd, 3))
                assert rank(shared, mask_of(shared, visible), tokens, limit=20) == rank_exhaustive(
                    rebuilt, mask_of(rebuilt, visible), tokens, limit=20
                )
    finally:
        engine.dispose()
        folder.cleanup()


def test_the_index_read_a_few_terms_at_a_time_equals_one_read_at_once(
    conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The FTS5 index is read in batches of terms (bounded memory at a million
    chunks); batches of any size give the same postings, term ids and lengths."""
    rnd = random.Random(7)
    fts_insert(conn, TABLE, ((i, zipf_text(rnd, rnd.randint(1, 30))) for i in range(1, 301)))
    whole = build_index(conn, TABLE)
    for chars in (1, 50, 700):
        monkeypatch.setattr(inverted_index, "_BATCH_CHARS", chars)
        same_index(build_index(conn, TABLE), whole)
    assert len(whole.terms) == len(VOCABULARY)
