"""Full text ranks whole documents when the caller asks for documents (K-SRCH-03):
a document's candidate chunks are scored as one text, statistics from the candidates only, and each
document is returned once, as its best passage."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping

import numpy as np
import pytest
from sqlalchemy import create_engine, text

import notochord
from notochord.search.bm25 import K1, B, query_tokens, rank, rank_documents, stem
from notochord.search.inverted_index import CandidateMask, InvertedIndex, build_index
from notochord.search.textindex import fts_insert, fts_table_ddl

WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "quartz", "violet"]


def brute_documents(
    chunks: Mapping[int, str], owner: Mapping[int, int], candidates: set[int], query: str
) -> dict[int, float]:
    """Document BM25 from first principles: each document's candidate chunks concatenated."""
    docs: dict[int, Counter[str]] = {}
    for cid in sorted(candidates):
        docs.setdefault(owner[cid], Counter()).update(t for w in chunks[cid].split() for t in stem(w))
    n = len(docs)
    mean = max(sum(sum(c.values()) for c in docs.values()) / n, 1.0)
    scores: dict[int, float] = {}
    for term, weight in query_tokens(query).items():
        holders = [d for d, c in docs.items() if c[term]]
        if not holders:
            continue
        idf = math.log(1.0 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
        for d in holders:
            tf, length = docs[d][term], sum(docs[d].values())
            scores[d] = scores.get(d, 0.0) + weight * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / mean))
    return scores


def corpus(
    seed: int,
) -> tuple[random.Random, dict[int, str], dict[int, int], set[int], InvertedIndex, CandidateMask, np.ndarray]:
    """Random chunks of a few words, documents of one to four chunks, 70 % of the chunks candidates."""
    rnd = random.Random(seed)
    chunks = {i: " ".join(rnd.choices(WORDS, k=rnd.randint(2, 15))) for i in range(1, 61)}
    owner = {i: (i - 1) // rnd.randint(1, 4) for i in chunks}  # documents of one to four chunks
    candidates = {i for i in chunks if rnd.random() < 0.7}
    engine = create_engine("sqlite://")
    with engine.connect() as conn:
        conn.execute(text(fts_table_ddl("t")))
        fts_insert(conn, "t", chunks.items())
        index = build_index(conn, "t")
    engine.dispose()
    mask = CandidateMask.of(index, np.isin(index.ids, sorted(candidates)))
    documents = sorted({owner[i] for i in candidates})
    groups = np.array([documents.index(owner[int(i)]) if int(i) in candidates else -1 for i in index.ids], np.int64)
    return rnd, chunks, owner, candidates, index, mask, groups


@pytest.mark.parametrize("seed", range(8))
def test_documents_rank_as_one_text_each_at_its_best_passage(seed: int) -> None:
    rnd, chunks, owner, candidates, index, mask, groups = corpus(seed)
    for _ in range(10):
        query = " ".join(rnd.choices(WORDS, k=rnd.randint(1, 4)))
        found = rank_documents(index, mask, query_tokens(query), groups, limit=100)
        expected = brute_documents(chunks, owner, candidates, query)
        assert sorted(owner[c] for c, _ in found) == sorted(expected)  # each matching document once
        for chunk_id, score in found:
            assert score == pytest.approx(expected[owner[chunk_id]], rel=1e-9)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        # each document is shown at the passage the chunk ranking puts first among its own
        passages = [c for c, _ in rank(index, mask, query_tokens(query), limit=1000)]
        for chunk_id, _ in found:
            assert chunk_id == next(c for c in passages if owner[c] == owner[chunk_id])


@pytest.mark.parametrize("seed", range(8))
def test_a_shorter_limit_is_the_head_of_the_longer_ranking_ties_included(seed: int) -> None:
    """Only documents that can make the first ``limit`` get a best passage, and the
    cut falls exactly where the whole ranking would put it (eight words make many equal scores)."""
    rnd, _chunks, _owner, _candidates, index, mask, groups = corpus(seed)
    for _ in range(10):
        tokens = query_tokens(" ".join(rnd.choices(WORDS, k=rnd.randint(1, 3))))
        whole = rank_documents(index, mask, tokens, groups, limit=1000)
        for limit in range(1, len(whole) + 1):
            assert rank_documents(index, mask, tokens, groups, limit=limit) == whole[:limit]


def test_a_long_document_with_the_words_spread_over_its_passages_ranks_as_a_whole(space: notochord.Space) -> None:
    """Two passages of one document holding a word each outrank a short document holding one of
    them, although no single passage of the long one holds both."""
    filler = " ".join(f"word{i}" for i in range(260))  # long enough for two passages
    space.user.documents.upsert(collection="keep", title="whole", body=f"glacier {filler}\n\n{filler} moraine")
    space.user.documents.upsert(collection="keep", title="part", body="glacier notes")
    hits = space.user.search("glacier moraine", group_by="document")
    assert [h.title for h in hits] == ["whole", "part"]
    assert all(h.text_match for h in hits)


def test_documents_rank_the_same_with_and_without_hidden_collections(space: notochord.Space) -> None:
    """K-SRCH-03: a collection the caller cannot read, full of the query's words, changes neither
    the order nor the scores of the caller's documents."""
    rnd = random.Random(4)
    for i in range(30):
        space.user.documents.upsert(collection="keep", title=f"d{i}", body=" ".join(rnd.choices(WORDS, k=12)))
    queries = [" ".join(rnd.choices(WORDS, k=2)) for _ in range(15)]

    def ranking(q: str) -> list[tuple[str, float]]:
        return [(h.title, round(h.score, 12)) for h in space.user.search(q, collections=["keep"], group_by="document")]

    before = [ranking(q) for q in queries]
    private = space.user.collections.create("Private")
    for i in range(30):
        space.user.documents.upsert(collection=private.id, title=f"h{i}", body=" ".join(rnd.choices(WORDS[:3], k=40)))
    assert [ranking(q) for q in queries] == before
    assert all(before)
