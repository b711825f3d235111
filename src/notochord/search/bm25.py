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
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from notochord.errors import StorageError
from notochord.search.textindex import index_text, query_terms

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
        [{"i": i, "body": index_text(t)} for i, t in enumerate(terms, start=1)],
    )
    found = conn.exec_driver_sql("SELECT DISTINCT term FROM temp.notochord_query_vocab").scalars().all()
    conn.exec_driver_sql("DELETE FROM temp.notochord_query_tokens")
    return sorted(found)


def candidate_bm25(
    conn: Connection,
    table: str,
    query: str,
    *,
    candidates_sql: str,
    length_sql: str,
    params: dict[str, Any] | None = None,
    limit: int,
) -> list[tuple[int, float]]:
    """Rank candidate rows of the FTS5 ``table`` for ``query``; ``(rowid, score)``, best first.

    Args:
        candidates_sql: ``SELECT id FROM …``: the rows the caller may find (code, never user input).
        length_sql: ``SELECT … AS id, … AS length FROM …`` over the same rows: each candidate's length.
        params: values bound in both statements.
    """
    if limit <= 0:
        return []
    bound = dict(params or {})
    try:
        _prepare(conn, table)
        tokens = _tokens(conn, query)
        if not tokens:
            return []
        frequencies: dict[int, dict[str, int]] = defaultdict(dict)
        for token in tokens:
            rows = conn.execute(
                text(
                    f"SELECT doc, count(*) FROM temp.{table}_instances "
                    f"WHERE term = :_bm25_term AND doc IN ({candidates_sql}) GROUP BY doc"
                ),
                {**bound, "_bm25_term": token},
            ).all()
            for doc, count in rows:
                frequencies[int(doc)][token] = int(count)
        if not frequencies:
            return []
        stats = conn.execute(text(f"SELECT count(*), avg(length) FROM ({length_sql}) AS lengths"), bound).one()
        total, mean = int(stats[0]), float(stats[1] or 1.0)
        length_rows = conn.execute(
            text(
                f"SELECT id, length FROM ({length_sql}) AS lengths "
                f"WHERE id IN ({','.join(str(int(d)) for d in frequencies)})"
            ),
            bound,
        ).all()
        lengths = {int(doc): int(size) for doc, size in length_rows}
    except SQLAlchemyError as exc:
        raise StorageError(f"full-text search in {table} failed: {exc}") from exc
    document_frequency: dict[str, int] = defaultdict(int)
    for terms in frequencies.values():
        for token in terms:
            document_frequency[token] += 1
    idf = {t: math.log(1.0 + (total - n + 0.5) / (n + 0.5)) for t, n in document_frequency.items()}
    scored = []
    for doc, terms in frequencies.items():
        norm = K1 * (1.0 - B + B * float(lengths.get(doc, mean)) / max(mean, 1.0))
        score = sum(idf[t] * tf * (K1 + 1.0) / (tf + norm) for t, tf in terms.items())
        scored.append((doc, score))
    scored.sort(key=lambda pair: (-round(pair[1], 12), pair[0]))
    return scored[:limit]
