"""The full-text index on PostgreSQL: the postings FTS5 would hold, kept in plain tables.

This module is the one place that tells the backends' full text apart (:func:`is_postgresql`);
:mod:`~notochord.search.textindex` and :mod:`~notochord.search.inverted_index` ask it and hand over.

Rules:

- **Same text, same tokens, same ranking.** ``chunks_fts(rowid, body)`` holds the derived text
  (:func:`~notochord.search.textindex.index_text`) under the very names the SQLite FTS5 table has,
  so the SQL that writes, deletes and checks it is the same on both backends. The postings
  ``chunks_fts_terms(term, chunk_id, tf)`` are made by FTS5's own tokenizer (``porter unicode61
  remove_diacritics 2``, run in a private in-memory SQLite database) on the write path, in the
  write's transaction: every term and every term frequency is exactly what FTS5 stores on SQLite,
  so the in-memory index, BM25 over the candidates and therefore every ranking are identical.
- **A version per commit.** Each write of the index bumps a counter in ``space_meta``
  (``fulltext_version:<table>``) in the same transaction; readers key the shared in-memory index by
  it, read in their own snapshot, as SQLite's FTS5 structure record is used. Writes hold the space's
  write lock, so the counter never races.
- Table names come from code and are checked by the caller (:mod:`~notochord.search.textindex`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.bulk import copy_text
from notochord.db.engine import storage_errors

__all__ = ["delete_terms", "index_terms", "is_postgresql", "read_postings", "version"]

_VERSION_KEY = "fulltext_version:"


def is_postgresql(conn: sa.Connection) -> bool:
    """Whether ``conn``'s full text lives in PostgreSQL tables (otherwise in SQLite's FTS5)."""
    return conn.dialect.name == "postgresql"


def tokenize(rows: Sequence[tuple[int, str]], tokenizer: str) -> list[dict[str, object]]:
    """``(chunk id, derived text)`` → one ``{term, chunk_id, tf}`` per distinct term of each chunk, by FTS5."""
    found = _vocabulary(rows, tokenizer, "SELECT term, doc, count(*) FROM v GROUP BY term, doc")
    return [{"term": str(t), "chunk_id": int(i), "tf": int(f)} for t, i, f in found]


# COPY's text format, made by SQLite in one string: a Python call per posting costs more than the
# tokenizer does. A term holds letters and digits only, but escaping costs nothing and keeps that
# an assumption of nobody's.
_ESCAPED_TERM = (
    "replace(replace(replace(replace(term, '\\', '\\\\'), char(9), '\\t'), char(10), '\\n'), char(13), '\\r')"
)
_POSTINGS_AS_COPY = (
    f"SELECT group_concat({_ESCAPED_TERM} || char(9) || doc || char(9) || n, char(10)) "
    "FROM (SELECT term, doc, count(*) AS n FROM v GROUP BY term, doc)"
)


def _postings_copy(rows: Sequence[tuple[int, str]], tokenizer: str) -> str:
    """:func:`tokenize` as ``COPY`` text of ``(term, chunk_id, tf)`` rows, one a line ("" without any)."""
    ((found,),) = _vocabulary(rows, tokenizer, _POSTINGS_AS_COPY)
    return str(found or "")


def _vocabulary(rows: Sequence[tuple[int, str]], tokenizer: str, query: str) -> list[Any]:
    """What ``query`` reads from ``v``, the ``instance`` vocabulary of an FTS5 table holding ``rows``.

    The table is contentless: only its index is read, and there is no copy of the text to store.
    """
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE w USING fts5(t, content='', tokenize='{tokenizer}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, instance)")
        db.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", rows)
        return db.execute(query).fetchall()
    finally:
        db.close()


def _bump(conn: sa.Connection, table: str) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO space_meta (key, value) VALUES (:key, '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(space_meta.value AS BIGINT) + 1 AS TEXT)"
        ),
        {"key": _VERSION_KEY + table},
    )


def index_terms(
    conn: sa.Connection, table: str, rows: Sequence[tuple[int, str]], tokenizer: str, *, fresh: bool = False
) -> None:
    """Replace the postings of the chunks in ``rows`` (``(chunk id, derived text)``), in ``conn``'s transaction.

    Three statements whatever the number of chunks: the old postings go, the new ones arrive in one
    ``COPY`` (:func:`~notochord.db.bulk.copy_text`), and the version moves on. ``fresh``: the chunk
    ids were just created in this transaction, so they have no postings to remove.
    """
    postings = _postings_copy(rows, tokenizer)
    # translated as every write is: a server out of space or read-only says so
    with storage_errors(f"writing the full-text index {table}"):
        if not fresh:
            conn.execute(
                sa.text(f"DELETE FROM {table}_terms WHERE chunk_id = ANY(:ids)"), {"ids": [int(i) for i, _ in rows]}
            )
        if postings:
            copy_text(conn, f"{table}_terms", ("term", "chunk_id", "tf"), postings)
        _bump(conn, table)


def delete_terms(conn: sa.Connection, table: str, chunk_ids: Sequence[int]) -> None:
    """Remove the postings of ``chunk_ids``; unknown ids are ignored."""
    with storage_errors(f"deleting from the full-text index {table}"):
        conn.execute(sa.text(f"DELETE FROM {table}_terms WHERE chunk_id = ANY(:ids)"), {"ids": list(chunk_ids)})
        _bump(conn, table)


def version(conn: sa.Connection, table: str) -> bytes:
    """The data version of ``table``'s full text as of ``conn``'s snapshot."""
    # translated as every read is: a server lost mid-search is out of reach, not a failing store
    with storage_errors(f"reading the version of the full-text index {table}"):
        raw = conn.execute(
            sa.text("SELECT value FROM space_meta WHERE key = :key"), {"key": _VERSION_KEY + table}
        ).scalar()
    return str(raw or "0").encode()


def read_postings(conn: sa.Connection, table: str) -> list[tuple[str, str, str]]:
    """Every term with its chunk ids and term frequencies, ascending by chunk: ``(term, "ids,…", "tfs,…")``."""
    with storage_errors(f"reading the full-text index {table}"):
        rows = conn.execute(
            sa.text(
                "SELECT term, string_agg(CAST(chunk_id AS TEXT), ',' ORDER BY chunk_id), "
                f"string_agg(CAST(tf AS TEXT), ',' ORDER BY chunk_id) FROM {table}_terms GROUP BY term"
            )
        ).all()
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]
