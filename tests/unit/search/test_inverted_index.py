"""The in-memory inverted index and BM25 over the caller's candidates (K-SRCH-03).

The index is read from a real FTS5 table; its ranking must equal a brute-force BM25 computed from
the chunks' tokens over the candidates only, whatever else the table holds.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Engine, create_engine, text

from notochord.search.bm25 import K1, B, query_tokens, rank, stem
from notochord.search.inverted_index import CandidateMask, build_index, index_version, text_index
from notochord.search.textindex import fts_delete, fts_insert, fts_table_ddl

TABLE = "chunk_fts"
WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "quartz", "violet", "copper", "maple"]


@pytest.fixture
def conn() -> Iterator[Connection]:
    engine = create_engine("sqlite://")
    with engine.connect() as c:
        c.execute(text(fts_table_ddl(TABLE)))
        yield c
    engine.dispose()


def fresh() -> tuple[Connection, Engine]:
    engine = create_engine("sqlite://")
    c = engine.connect()
    c.execute(text(fts_table_ddl(TABLE)))
    return c, engine


def brute_bm25(corpus: Mapping[int, str], candidates: set[int], query: Mapping[str, int]) -> dict[int, float]:
    """BM25 from first principles over ``candidates`` only (length = number of tokens)."""
    tokens = {i: Counter(t for w in corpus[i].split() for t in stem(w)) for i in candidates}
    n = len(tokens)
    if n == 0:
        return {}
    mean = max(sum(sum(c.values()) for c in tokens.values()) / n, 1.0)
    scores: dict[int, float] = {}
    for term, weight in query.items():
        holders = [i for i, c in tokens.items() if c[term] > 0]
        if not holders:
            continue
        idf = math.log(1.0 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            tf = tokens[i][term]
            length = sum(tokens[i].values())
            norm = K1 * (1.0 - B + B * length / mean)
            scores[i] = scores.get(i, 0.0) + weight * idf * tf * (K1 + 1.0) / (tf + norm)
    return scores


def ranked_ids(scores: Mapping[int, float], limit: int) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda p: (-round(p[1], 9), p[0]))][:limit]


def run(c: Connection, candidates: Sequence[int], query: str, limit: int = 1000) -> list[tuple[int, float]]:
    index = text_index(c, TABLE)
    mask = CandidateMask.of(index, index.mask_of(np.asarray(sorted(candidates), dtype=np.int64)))
    return rank(index, mask, query_tokens(query), limit=limit)


documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(
    docs=documents,
    picks=st.lists(st.booleans(), min_size=25, max_size=25),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
)
def test_ranking_equals_a_brute_force_bm25_over_the_candidates(
    docs: list[str], picks: list[bool], query: list[str]
) -> None:
    """K-SRCH-03: scores and order equal BM25 computed from the candidates' own
    tokens, with N, the mean length and document frequencies counted among the candidates only,
    and a repeated query word counted as often as it appears."""
    c, engine = fresh()
    try:
        corpus = dict(enumerate(docs, start=1))
        fts_insert(c, TABLE, corpus.items())
        candidates = {i for i in corpus if picks[i - 1]}
        expected = brute_bm25(corpus, candidates, Counter(t for w in query for t in stem(w)))
        found = run(c, sorted(candidates), " ".join(query))
        assert [i for i, _ in found] == ranked_ids(expected, 1000)
        for i, score in found:
            assert score == pytest.approx(expected[i], rel=1e-9)
    finally:
        c.close()
        engine.dispose()


def test_hidden_half_of_the_corpus_never_moves_the_ranking_over_many_queries() -> None:
    """K-SRCH-03: with half of the chunks hidden, every one of 200 queries ranks the
    visible chunks exactly as a table holding only the visible chunks does, scores included."""
    rnd = random.Random(16)
    corpus = {i: " ".join(rnd.choices(WORDS, k=rnd.randint(3, 30))) for i in range(1, 401)}
    visible = {i for i in corpus if i % 2 == 0}
    full, full_engine = fresh()
    alone, alone_engine = fresh()
    try:
        fts_insert(full, TABLE, corpus.items())
        fts_insert(alone, TABLE, ((i, corpus[i]) for i in sorted(visible)))
        for _ in range(200):
            query = " ".join(rnd.choices(WORDS, k=rnd.randint(1, 5)))
            assert run(full, sorted(visible), query, limit=50) == run(alone, sorted(visible), query, limit=50)
    finally:
        for c, e in ((full, full_engine), (alone, alone_engine)):
            c.close()
            e.dispose()


def test_a_word_repeated_in_the_query_weighs_as_often_as_it_appears(conn: Connection) -> None:
    """ "Apple pear pear" prefers the pear passage, "apple apple pear" the apple
    one, where each passage holds one of the words as often as the other holds its own."""
    fts_insert(conn, TABLE, [(1, "apple apple banana"), (2, "pear pear banana"), (3, "banana split")])
    assert [i for i, _ in run(conn, [1, 2, 3], "apple pear pear")][:2] == [2, 1]
    assert [i for i, _ in run(conn, [1, 2, 3], "apple apple pear")][:2] == [1, 2]
    assert query_tokens("apple pear pear") == {"appl": 1, "pear": 2}


def test_stop_words_in_the_query_do_not_score(conn: Connection) -> None:
    """English stop words of the query are dropped, so a passage full of "the"
    does not outrank the one holding the content word."""
    fts_insert(conn, TABLE, [(1, "the the the the of of"), (2, "the glacier melted")])
    assert [i for i, _ in run(conn, [1, 2], "what is the glacier of")] == [2]


def test_a_long_query_ranks_with_every_term(conn: Connection) -> None:
    """The 80th distinct word of a long query still finds its passage."""
    words = [f"term{i}x" for i in range(80)]
    fts_insert(conn, TABLE, [(1, words[-1]), (2, "unrelated")])
    assert [i for i, _ in run(conn, [1, 2], " ".join(words))] == [1]


def test_the_limit_keeps_the_best_and_breaks_ties_by_the_smaller_id(conn: Connection) -> None:
    fts_insert(conn, TABLE, [(i, "same words here") for i in range(1, 11)])
    assert [i for i, _ in run(conn, range(1, 11), "words", limit=3)] == [1, 2, 3]
    assert run(conn, range(1, 11), "words", limit=0) == []
    assert run(conn, [], "words") == []


def test_a_write_is_seen_by_the_next_search_on_the_same_and_on_another_connection(tmp_path: Path) -> None:
    """The index's version is FTS5's structure record, rewritten by every commit —
    so an insert, an edit and a delete committed by another connection are seen by the next search."""
    url = f"sqlite:///{tmp_path}/space.db"
    reader_engine, writer_engine = create_engine(url), create_engine(url)
    try:
        with writer_engine.begin() as w:
            w.execute(text(fts_table_ddl(TABLE)))
            fts_insert(w, TABLE, [(1, "granite quarry")])
        with reader_engine.connect() as r:
            assert [i for i, _ in run(r, [1, 2], "granite")] == [1]
        with writer_engine.begin() as w:
            fts_insert(w, TABLE, [(2, "granite granite cliff")])
        with reader_engine.connect() as r:
            assert [i for i, _ in run(r, [1, 2], "granite")] == [2, 1]
        with writer_engine.begin() as w:
            fts_insert(w, TABLE, [(2, "sandstone cliff")])
        with reader_engine.connect() as r:
            assert [i for i, _ in run(r, [1, 2], "granite")] == [1]
            assert [i for i, _ in run(r, [1, 2], "sandstone")] == [2]
        with writer_engine.begin() as w:
            fts_delete(w, TABLE, [1])
        with reader_engine.connect() as r:
            assert run(r, [1, 2], "granite") == []
    finally:
        reader_engine.dispose()
        writer_engine.dispose()


def test_the_shared_index_is_reused_until_the_table_changes(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/space.db")
    try:
        with engine.begin() as w:
            w.execute(text(fts_table_ddl(TABLE)))
            fts_insert(w, TABLE, [(1, "amber")])
        with engine.connect() as r:
            first = text_index(r, TABLE)
            before = index_version(r, TABLE)
        with engine.connect() as r:
            assert text_index(r, TABLE) is first
        with engine.begin() as w:
            fts_insert(w, TABLE, [(2, "amber")])
        with engine.connect() as r:
            assert index_version(r, TABLE) != before
            assert text_index(r, TABLE) is not first
    finally:
        engine.dispose()


def test_the_index_holds_fts5s_own_tokens_and_lengths(conn: Connection) -> None:
    """Terms are FTS5's (Porter stems, CJK bigrams and single characters); length counts tokens."""
    fts_insert(conn, TABLE, [(7, "Running runners run"), (9, "北京烤鸭")])
    index = build_index(conn, TABLE)
    assert index.ids.tolist() == [7, 9]
    assert index.lengths.tolist() == [3, 7]
    positions, frequencies = index.postings("run")
    assert positions.tolist() == [0] and frequencies.tolist() == [2]
    assert index.postings("烤鸭")[0].tolist() == [1]
    assert index.postings("鸭")[0].tolist() == [1]
    assert index.postings("absent")[0].tolist() == []


def test_a_query_reads_no_posting_of_a_chunk_outside_the_candidates() -> None:
    """Acceptance: the postings a query reads are the candidates' own, so 300
    hidden chunks full of the query's words add nothing to its cost (no timing side channel)."""
    visible = {i: f"river stone {'cloud ' * (i % 3)}" for i in range(1, 21)}
    hidden = dict.fromkeys(range(21, 321), "river river stone stone cloud")
    alone, alone_engine = fresh()
    full, full_engine = fresh()
    try:
        fts_insert(alone, TABLE, visible.items())
        fts_insert(full, TABLE, {**visible, **hidden}.items())
        tokens = query_tokens("river stone cloud")
        read = []
        for c in (alone, full):
            index = text_index(c, TABLE)
            candidates = CandidateMask.of(index, index.mask_of(np.asarray(sorted(visible), dtype=np.int64)))
            read.append(sum(len(candidates.postings(index, t)[0]) for t in tokens))
            assert len(index.postings("river")[0]) == (20 if c is alone else 320)
        assert read[0] == read[1] == 20 + 20 + 14
    finally:
        for c, e in ((alone, alone_engine), (full, full_engine)):
            c.close()
            e.dispose()
