"""BM25 over the caller's candidates only: the full-text leg that leaks nothing (K-SRCH-03).

FTS5's own ``bm25()`` takes document frequencies and the average length from the *whole* table, so
passages a caller may not read would still move the caller's ranking: adding private documents that
share a word would reorder public results. Here every statistic comes from the candidate set the
caller may see — the number of candidates, each term's document frequency among them, their average
length — so results are identical whatever else the store holds.

How: the query's terms are tokenised by FTS5 itself (a scratch FTS5 table in the connection's
``temp`` schema, with the same tokenizer, so stemming matches exactly); term frequencies come from an
``fts5vocab`` *instance* view of the index, one indexed lookup per term, restricted to candidates in
SQL. Lengths are measured in characters of the indexed text; BM25 uses only their ratio to the mean.

Cost: one indexed vocabulary lookup per query term, one membership-and-length query for the rows
that matched, one aggregate over the candidates — never a scan of the candidates per term.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from notochord.errors import StorageError
from notochord.search.textindex import query_terms

__all__ = ["K1", "B", "candidate_bm25"]

K1 = 1.2
B = 0.75
_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _prepare(conn: Connection, table: str) -> None:
    conn.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.notochord_query_tokens USING fts5(body, tokenize='{_TOKENIZER}')"
    )
    conn.exec_driver_sql(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.notochord_query_vocab "
        "USING fts5vocab(temp, notochord_query_tokens, instance)"
    )
    conn.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)"
    )


def _tokens(conn: Connection, query: str) -> list[str]:
    terms = query_terms(query)
    if not terms:
        return []
    conn.exec_driver_sql("DELETE FROM temp.notochord_query_tokens")
    conn.execute(
        text("INSERT INTO temp.notochord_query_tokens(rowid, body) VALUES (:i, :body)"),
        # terms are already derived (query_text); deriving them again would add CJK unigrams
        [{"i": i, "body": t} for i, t in enumerate(terms, start=1)],
    )
    found = conn.exec_driver_sql("SELECT DISTINCT term FROM temp.notochord_query_vocab").scalars().all()
    conn.exec_driver_sql("DELETE FROM temp.notochord_query_tokens")
    return sorted(found)


CandidateStats = Callable[[], tuple[int, float]]
"""``() -> (number of candidates, their mean length)``."""

CandidateLengths = Callable[[Sequence[int]], dict[int, int]]
"""``(row ids) -> {row id: length}`` for those of the given rows that are candidates."""


def candidate_bm25(
    conn: Connection,
    table: str,
    query: str,
    *,
    stats: CandidateStats,
    lengths_of: CandidateLengths,
    limit: int,
) -> list[tuple[int, float]]:
    """Rank the candidate rows of the FTS5 ``table`` for ``query``; ``(rowid, score)``, best first.

    Args:
        stats: the candidates' count and mean length (one aggregate over the caller's filter).
        lengths_of: which of the rows containing a query term are candidates, with their lengths;
            it is asked once, for the matching rows only, so its cost follows the matches.
    """
    if limit <= 0:
        return []
    try:
        _prepare(conn, table)
        tokens = _tokens(conn, query)
        if not tokens:
            return []
        by_token: dict[str, list[tuple[int, int]]] = {}
        matched: set[int] = set()
        for token in tokens:
            found = conn.execute(
                text(f"SELECT doc, count(*) FROM temp.{table}_instances WHERE term = :term GROUP BY doc"),
                {"term": token},
            ).all()
            by_token[token] = [(int(doc), int(count)) for doc, count in found]
            matched.update(doc for doc, _ in by_token[token])
        if not matched:
            return []
        lengths = lengths_of(sorted(matched))
        if not lengths:
            return []
        total, mean = stats()
    except SQLAlchemyError as exc:
        raise StorageError(f"full-text search in {table} failed: {exc}") from exc
    frequencies: dict[int, dict[str, int]] = defaultdict(dict)
    for token, rows in by_token.items():
        for doc, count in rows:
            if doc in lengths:
                frequencies[doc][token] = count
    document_frequency: dict[str, int] = defaultdict(int)
    for terms in frequencies.values():
        for token in terms:
            document_frequency[token] += 1
    idf = {t: math.log(1.0 + (total - n + 0.5) / (n + 0.5)) for t, n in document_frequency.items()}
    mean = max(mean, 1.0)
    scored = []
    for doc, terms in frequencies.items():
        norm = K1 * (1.0 - B + B * float(lengths[doc]) / mean)
        score = sum(idf[t] * tf * (K1 + 1.0) / (tf + norm) for t, tf in terms.items())
        scored.append((doc, score))
    scored.sort(key=lambda pair: (-round(pair[1], 12), pair[0]))
    return scored[:limit]
