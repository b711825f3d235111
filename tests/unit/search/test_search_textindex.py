"""Full text: CJK bigrams, safe queries, BM25 over FTS5, filters inside the query (K-SRCH-02, K-SRCH-03,
K-SRCH-05, K-SRCH-11, OD-K38).

The ranking tests go through what search runs: the FTS5 table read into an
inverted index, the caller's candidates as a mask, BM25 over them (:func:`search_text`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, text

from notochord.errors import KnowledgeValidationError, StorageError
from notochord.search.bm25 import query_tokens, rank
from notochord.search.inverted_index import CandidateMask, forget, text_index
from notochord.search.textindex import (
    cjk_bigrams,
    fts_delete,
    fts_insert,
    fts_table_ddl,
    index_text,
    is_cjk,
    match_query,
    query_term_counts,
    query_terms,
    query_text,
)

from .conftest import FTS_TABLE


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [rowid for rowid, _ in hits]


def search_text(
    conn: Connection, table: str, query: str, *, limit: int, allowed: Iterable[int] | None = None
) -> list[tuple[int, float]]:
    """The full-text leg of search: ``(chunk id, score)`` of the candidates (every chunk, or
    ``allowed``), best first."""
    forget(conn.engine)  # the fixture never commits, so the index's data version cannot tell
    index = text_index(conn, table)
    mask = index.mask_of(np.asarray(sorted(allowed), dtype=np.int64)) if allowed is not None else None
    candidates = CandidateMask.of(index, mask if mask is not None else np.ones(len(index.ids), dtype=np.bool_))
    return rank(index, candidates, query_tokens(query), limit=limit)


def readable(conn: Connection, collection: str) -> list[int]:
    return list(conn.execute(text("SELECT id FROM chunks WHERE collection = :c"), {"c": collection}).scalars())


# -- derivation ---------------------------------------------------------------------------------


def test_a_han_run_becomes_overlapping_bigrams_then_its_single_characters() -> None:
    """OD-K38: the unigrams let a one-character query match inside a word."""
    assert index_text("番茄牛腩").split() == ["番茄", "茄牛", "牛腩", "番", "茄", "牛", "腩"]
    assert index_text("烤鸭").split() == ["烤鸭", "烤", "鸭"]


def test_a_lone_han_character_is_kept() -> None:
    assert index_text("吃 饭").split() == ["吃", "饭"]
    assert cjk_bigrams("吃") == ["吃"]
    assert cjk_bigrams("") == []


def test_cjk_runs_are_separated_from_adjacent_latin_text_and_punctuation_is_folded() -> None:
    assert index_text("买了iPhone手机，很好").split() == [
        "买了", "买", "了", "iPhone", "手机", "手", "机", ",", "很好", "很", "好"
    ]  # fmt: skip


def test_kana_and_hangul_runs_are_bigrammed_too() -> None:
    assert index_text("カレー").split() == ["カレ", "レー", "カ", "レ", "ー"]
    assert index_text("김치찌개").split() == ["김치", "치찌", "찌개", "김", "치", "찌", "개"]
    assert is_cjk("漢")
    assert is_cjk("か")
    assert is_cjk("한")
    assert not is_cjk("a")
    assert not is_cjk("é")


def test_text_without_cjk_is_unchanged() -> None:
    source = "Crème brûlée — 3 eggs, 200 ml cream."
    assert index_text(source) == source


# -- queries ------------------------------------------------------------------------------------


def test_query_terms_are_lowercased_deduplicated_and_stop_words_dropped() -> None:
    assert query_terms("How much PROTEIN should the adults eat, protein?") == [
        "much",
        "protein",
        "adults",
        "eat",
    ]


def test_a_query_of_stop_words_only_keeps_them() -> None:
    assert query_terms("The Who") == ["the", "who"]


def test_cjk_query_terms_are_bigrams() -> None:
    assert query_terms("番茄牛腩 recipe") == ["番茄", "茄牛", "牛腩", "recipe"]


def test_a_one_character_cjk_query_term_is_that_character_and_longer_runs_give_no_unigrams() -> None:
    """``鸭`` searches the unigram; ``北京`` only its bigram, never ``北`` or ``京``."""
    assert query_terms("鸭") == ["鸭"]
    assert query_terms("张 京") == ["张", "京"]
    assert query_terms("北京") == ["北京"]
    assert query_text("北京烤鸭").split() == ["北京", "京烤", "烤鸭"]


def test_every_query_term_is_kept_however_long_the_query() -> None:
    """No silent truncation (87 terms of a long query used to become 64)."""
    words = " ".join(f"w{i}" for i in range(87))
    assert query_terms(words) == [f"w{i}" for i in range(87)]


def test_query_term_counts_count_repeats_and_drop_stop_words() -> None:
    """A word repeated in the query counts as often as it appears; stop words go."""
    assert query_term_counts("the cancer of the cancer cell, Cancer") == {"cancer": 3, "cell": 1}
    assert query_term_counts("The Who the") == {"the": 2, "who": 1}


@pytest.mark.parametrize("query", ["", "   ", "?!…", "-- * :", '""'], ids=repr)
def test_nothing_searchable_gives_no_match_expression(query: str) -> None:
    assert match_query(query) is None


def test_match_expression_quotes_every_term_and_ors_them() -> None:
    assert match_query('tomato "beef" NEAR stew*') == '"tomato" OR "beef" OR "near" OR "stew"'


INJECTIONS = [
    '"',
    'stew" OR "x',
    "stew*",
    "NEAR(stew beef)",
    "stew NOT beef",
    "-stew",
    "body:stew",
    "^stew",
    "stew AND",
    "(stew",
    "{body}: stew",
    "stew + beef",
    "'; DROP TABLE chunks; --",
    "\x00stew",
]


@pytest.mark.parametrize("query", INJECTIONS, ids=repr)
def test_fts_syntax_in_user_input_is_harmless(fts_conn: Connection, query: str) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "Tomato beef stew"), (2, "Chocolate cake")])
    hits = search_text(fts_conn, FTS_TABLE, query, limit=10)
    assert set(ids(hits)) <= {1}
    if "stew" in query:
        assert ids(hits) == [1]
    assert fts_conn.execute(text("SELECT count(*) FROM chunks")).scalar_one() == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet=st.sampled_from("ab番茄 \"*-:^()+{}NEAROTDab'\\.,"), max_size=40) | st.text(max_size=40))
def test_any_user_text_is_a_valid_query_or_none(fts_conn: Connection, query: str) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "ab 番茄 near or and")])
    expr = match_query(query)
    hits = search_text(fts_conn, FTS_TABLE, query, limit=5)
    assert expr is not None or hits == []
    assert set(ids(hits)) <= {1}


# -- search -------------------------------------------------------------------------------------


def test_chinese_document_is_found_by_the_whole_dish_name_and_by_part_of_it(fts_conn: Connection) -> None:
    fts_insert(
        fts_conn,
        FTS_TABLE,
        [(1, "今天晚上吃了番茄牛腩，味道很好。"), (2, "明天去公园散步。"), (3, "番茄炒蛋很简单。")],
    )
    assert ids(search_text(fts_conn, FTS_TABLE, "番茄牛腩", limit=10))[0] == 1
    assert ids(search_text(fts_conn, FTS_TABLE, "牛腩", limit=10)) == [1]
    assert ids(search_text(fts_conn, FTS_TABLE, "公园", limit=10)) == [2]


def test_one_chinese_character_finds_every_passage_that_holds_it(fts_conn: Connection) -> None:
    """A surname or a one-character word is found inside longer runs."""
    fts_insert(fts_conn, FTS_TABLE, [(1, "今天我和张伟在北京吃了烤鸭"), (2, "明天去公园散步。"), (3, "鸭子在游泳")])
    assert set(ids(search_text(fts_conn, FTS_TABLE, "鸭", limit=10))) == {1, 3}
    assert ids(search_text(fts_conn, FTS_TABLE, "京", limit=10)) == [1]
    assert ids(search_text(fts_conn, FTS_TABLE, "张", limit=10)) == [1]
    assert ids(search_text(fts_conn, FTS_TABLE, "园", limit=10)) == [2]
    assert search_text(fts_conn, FTS_TABLE, "猫", limit=10) == []


def test_english_words_match_through_stemming_and_diacritics(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "We cooked two stews at the café."), (2, "Nothing here.")])
    assert ids(search_text(fts_conn, FTS_TABLE, "stew", limit=10)) == [1]
    assert ids(search_text(fts_conn, FTS_TABLE, "cafe cooking", limit=10)) == [1]


def test_bm25_ranks_the_passage_matching_more_terms_first_with_higher_scores(fts_conn: Connection) -> None:
    fts_insert(
        fts_conn,
        FTS_TABLE,
        [(1, "beef is red meat"), (2, "tomato beef stew with carrots"), (3, "a tomato salad")],
    )
    hits = search_text(fts_conn, FTS_TABLE, "tomato beef stew", limit=10)
    assert ids(hits)[0] == 2
    assert set(ids(hits)) == {1, 2, 3}
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > 0


def test_limit_caps_the_results_k_srch_10(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(i, f"stew number {i}") for i in range(1, 21)])
    assert len(search_text(fts_conn, FTS_TABLE, "stew", limit=5)) == 5
    assert search_text(fts_conn, FTS_TABLE, "stew", limit=0) == []


def test_an_empty_query_finds_nothing_so_the_caller_lists_by_date_k_srch_08(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "stew")])
    assert search_text(fts_conn, FTS_TABLE, "  ", limit=10) == []


def test_forbidden_best_match_is_never_returned_and_the_page_stays_full_k_srch_03(
    fts_conn: Connection,
) -> None:
    """The filter runs inside the ranking query: no short pages, nothing forbidden ranked or counted."""
    rows = [(1, "tomato beef stew tomato beef stew tomato beef stew")]  # the best match: forbidden
    rows += [(i, f"stew entry {i}") for i in range(2, 12)]
    fts_insert(fts_conn, FTS_TABLE, rows)
    fts_conn.execute(
        text("INSERT INTO chunks (id, collection) VALUES (:id, :c)"),
        [{"id": 1, "c": "health"}] + [{"id": i, "c": "diary"} for i in range(2, 12)],
    )
    unfiltered = search_text(fts_conn, FTS_TABLE, "tomato beef stew", limit=5)
    assert ids(unfiltered)[0] == 1

    hits = search_text(fts_conn, FTS_TABLE, "tomato beef stew", limit=5, allowed=readable(fts_conn, "diary"))
    assert len(hits) == 5
    assert 1 not in ids(hits)


def test_moving_a_chunk_out_of_a_readable_collection_removes_it_from_results_k_srch_11(
    fts_conn: Connection,
) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "stew")])
    fts_conn.execute(text("INSERT INTO chunks (id, collection) VALUES (1, 'diary')"))
    assert ids(search_text(fts_conn, FTS_TABLE, "stew", limit=10, allowed=readable(fts_conn, "diary"))) == [1]
    fts_conn.execute(text("UPDATE chunks SET collection = 'health' WHERE id = 1"))
    assert search_text(fts_conn, FTS_TABLE, "stew", limit=10, allowed=readable(fts_conn, "diary")) == []


def test_reinserting_a_chunk_replaces_it_and_delete_removes_it(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "tomato stew"), (2, "tomato salad")])
    assert fts_insert(fts_conn, FTS_TABLE, [(1, "chocolate cake")]) == 1
    assert ids(search_text(fts_conn, FTS_TABLE, "tomato", limit=10)) == [2]
    assert ids(search_text(fts_conn, FTS_TABLE, "chocolate", limit=10)) == [1]
    count = fts_conn.execute(text(f"SELECT count(*) FROM {FTS_TABLE}")).scalar_one()
    assert count == 2
    fts_delete(fts_conn, FTS_TABLE, [2, 99])
    assert search_text(fts_conn, FTS_TABLE, "tomato", limit=10) == []
    fts_delete(fts_conn, FTS_TABLE, [])
    assert fts_insert(fts_conn, FTS_TABLE, []) == 0


@pytest.mark.parametrize("name", ["chunk fts", "x;DROP TABLE chunks", "1abc", "", "a" * 70])
def test_table_names_must_be_plain_identifiers(fts_conn: Connection, name: str) -> None:
    with pytest.raises(KnowledgeValidationError, match="table name"):
        fts_table_ddl(name)
    with pytest.raises(KnowledgeValidationError, match="table name"):
        fts_insert(fts_conn, name, [(1, "stew")])


def test_table_ddl_uses_porter_unicode61_without_diacritics() -> None:
    ddl = fts_table_ddl("notes_fts")
    assert "USING fts5(" in ddl
    assert "tokenize='porter unicode61 remove_diacritics 2'" in ddl


def test_a_database_error_surfaces_as_storage_error(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "stew")])
    with pytest.raises(StorageError, match="full-text index"):
        search_text(fts_conn, "nowhere_fts", "stew", limit=5)


def test_full_width_latin_in_cjk_text_matches_ascii_queries(fts_conn: Connection) -> None:
    fts_insert(fts_conn, FTS_TABLE, [(1, "买了ｉＰｈｏｎｅ１５手机")])
    assert ids(search_text(fts_conn, FTS_TABLE, "iphone15", limit=10)) == [1]
    assert ids(search_text(fts_conn, FTS_TABLE, "手机", limit=10)) == [1]
