"""BM25's parameters and the query tokenizer, as the retrieval benchmark tunes and compares them
: ``k1``/``b`` of :func:`notochord.search.bm25.rank`, and query tokens
looked up in an index built with another FTS5 tokenizer (stemming on or off)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import Connection, create_engine, text

from notochord.search.bm25 import K1, B, query_tokens, rank
from notochord.search.inverted_index import CandidateMask, build_index
from notochord.search.textindex import FTS_TOKENIZER, fts_insert, fts_table_ddl

UNSTEMMED = "unicode61 remove_diacritics 2"
PASSAGES = {
    1: "running runners run",
    2: "the runner studied hard",
    3: "a long passage about running with many more words than the others have here",
    4: "studies",
}


@pytest.fixture
def conn() -> Iterator[Connection]:
    engine = create_engine("sqlite://")
    with engine.connect() as c:
        c.execute(text(fts_table_ddl("stemmed")))
        c.execute(text(f"CREATE VIRTUAL TABLE unstemmed USING fts5(body, tokenize='{UNSTEMMED}')"))
        fts_insert(c, "stemmed", PASSAGES.items())
        fts_insert(c, "unstemmed", PASSAGES.items())
        yield c
    engine.dispose()


def ranked(c: Connection, table: str, query: str, *, tokenizer: str = FTS_TOKENIZER, **params: float) -> list[int]:
    index = build_index(c, table)
    mask = CandidateMask.of(index, np.ones(len(index.ids), dtype=np.bool_))
    return [i for i, _ in rank(index, mask, query_tokens(query, tokenizer=tokenizer), limit=10, **params)]


def test_the_default_tokenizer_is_the_index_s_porter_stemmer() -> None:
    assert query_tokens("running studies") == query_tokens("running studies", tokenizer=FTS_TOKENIZER)
    assert query_tokens("running studies") == {"run": 1, "studi": 1}


def test_without_stemming_query_words_match_only_their_own_form(conn: Connection) -> None:
    """The same words looked up without Porter: "studies" finds only the passage holding "studies",
    where the stemmed index also finds "studied"."""
    assert query_tokens("running studies", tokenizer=UNSTEMMED) == {"running": 1, "studies": 1}
    assert ranked(conn, "unstemmed", "studies", tokenizer=UNSTEMMED) == [4]
    assert set(ranked(conn, "stemmed", "studies")) == {2, 4}


def bm25_by_hand(c: Connection, table: str, query: str, k1: float, b: float) -> list[int]:
    rows = c.execute(text(f"SELECT rowid, body FROM {table}")).all()
    tokens = {
        int(r[0]): Counter(t for w in str(r[1]).split() for t in query_tokens(w, tokenizer=UNSTEMMED)) for r in rows
    }
    # stop words are dropped from the query only: count every indexed token for the lengths
    lengths = {i: len(str(body).split()) for i, body in rows}
    mean = sum(lengths.values()) / len(lengths)
    scores: dict[int, float] = {}
    for term in query_tokens(query, tokenizer=UNSTEMMED):
        holders = [i for i, c_ in tokens.items() if c_[term]]
        idf = math.log(1.0 + (len(rows) - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            tf = tokens[i][term]
            scores[i] = scores.get(i, 0.0) + idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / mean))
    return [i for i, _ in sorted(scores.items(), key=lambda p: (-round(p[1], 9), p[0]))]


@pytest.mark.parametrize(("k1", "b"), [(K1, B), (0.5, 0.0), (2.0, 1.0), (1.2, 0.3)])
def test_k1_and_b_are_those_given(conn: Connection, k1: float, b: float) -> None:
    """The ranking equals BM25 written out by hand with the given saturation and length weight."""
    assert ranked(conn, "unstemmed", "running runners", tokenizer=UNSTEMMED, k1=k1, b=b) == bm25_by_hand(
        conn, "unstemmed", "running runners", k1, b
    )


def test_length_normalisation_decides_between_a_short_and_a_long_passage(conn: Connection) -> None:
    """Both passages hold "running" once: with ``b = 0`` length does not count and they tie; with
    full length normalisation the short one scores higher."""
    assert ranked(conn, "unstemmed", "running", tokenizer=UNSTEMMED, b=1.0) == [1, 3]
    assert ranked(conn, "unstemmed", "running", tokenizer=UNSTEMMED, b=0.0) == [1, 3]  # tie: smaller id
    scores = {}
    for b in (0.0, 1.0):
        index = build_index(conn, "unstemmed")
        mask = CandidateMask.of(index, np.ones(len(index.ids), dtype=np.bool_))
        scores[b] = dict(rank(index, mask, {"running": 1}, limit=10, b=b))
    assert scores[0.0][1] == pytest.approx(scores[0.0][3])
    assert scores[1.0][1] > scores[1.0][3]
