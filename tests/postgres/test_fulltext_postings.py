"""The postings a batch of new documents writes on PostgreSQL are FTS5's own, sent without a DELETE
(K-SRCH; ).

On PostgreSQL ``chunks_fts_terms`` holds what SQLite's FTS5 keeps for the same derived text, so
BM25 ranks alike on both backends. A batch's postings come from FTS5's tokenizer as ``COPY`` text
in one piece; these tests compare every term and term frequency, byte for byte, with the
vocabulary of a real FTS5 table holding the same text, for text with diacritics, CJK, digits,
punctuation, backslashes and tabs. Chunks created by the batch have no postings to replace, so no
``DELETE`` of postings or full-text rows is sent for them.
"""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa

import notochord
from notochord.search.textindex import fts_table_ddl, index_text
from notochord.search.vector_index import passage_text
from sent_sql import statements_sent

pytestmark = pytest.mark.postgresql

BODIES = [
    "Crème brûlée at Café Müller; naïve coöperation, 12 eggs and 3.5 dl cream.",
    "北京烤鸭 with 香菜 — Ｆｕｌｌ width ＡＢＣ １２３, and a lone 鸭.",
    "Back\\slash \\n and\ttabs\tand\r\nlines; running runner runs ran; 'quoted' \"words\" (parens) [brackets].",
    "Ångström, Œuvre, straße, ǅemal, İstanbul; e-mail anna@example.org, https://x.example/a?b=c#d.",
]


def _fts5_postings(texts: dict[int, str]) -> list[tuple[str, int, int]]:
    db = sqlite3.connect(":memory:")
    try:
        db.execute(fts_table_ddl("expected"))
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(expected, instance)")
        db.executemany(
            "INSERT INTO expected(rowid, body) VALUES (?, ?)", [(i, index_text(t)) for i, t in texts.items()]
        )
        found = db.execute("SELECT term, doc, count(*) FROM v GROUP BY term, doc").fetchall()
    finally:
        db.close()
    return sorted((str(t), int(d), int(n)) for t, d, n in found)


def test_a_batch_writes_the_postings_fts5_holds_for_the_same_text(vault: notochord.Notochord) -> None:
    """K-SRCH: every term and term frequency of a batch's chunks is FTS5's, byte for byte."""
    space = vault.personal
    space.user.documents.upsert_many(
        [{"collection": "keep", "title": f"note {n}", "body": body} for n, body in enumerate(BODIES)]
    )
    with space.core.store.read() as conn:
        chunks = {
            int(r.id): passage_text(r.title, r.text)
            for r in conn.execute(
                sa.text("SELECT c.id, c.text, d.title FROM chunks c JOIN documents d ON d.id = c.document_id")
            )
        }
        stored = sorted(
            (str(t), int(c), int(f))
            for t, c, f in conn.execute(sa.text("SELECT term, chunk_id, tf FROM chunks_fts_terms"))
        )
    assert len(chunks) == len(BODIES)
    assert stored == _fts5_postings(chunks)
    assert any("\\" in text or "\t" in text for text in chunks.values())


def test_new_chunks_are_indexed_without_deleting_anything(vault: notochord.Notochord) -> None:
    """A batch of new documents sends no DELETE of postings or full-text rows."""
    space = vault.personal
    space.user.documents.upsert_many([{"collection": "keep", "title": "warm-up", "body": "warm-up"}])
    with statements_sent(space.core.store.engine) as sent:
        space.user.documents.upsert_many(
            [{"collection": "keep", "title": f"note {n}", "body": body} for n, body in enumerate(BODIES)]
        )
    assert not [s for s in sent if s.startswith("DELETE")], sent
    assert sum(s.startswith("COPY chunks_fts_terms") for s in sent) == 1
