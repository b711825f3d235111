"""Full text: CJK runs are indexed as single characters as well as bigrams, so ``鸭`` finds ``烤鸭``.

Every indexed passage that holds CJK text is derived again (its document's title, a line break,
then its text) and its full-text row replaced; passages without CJK text are left as they are.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The derivation of search.textindex.index_text and knowledge.indexing.with_title, frozen as of
# this revision: a migration must do the same thing whatever the code later becomes.
_CJK_RANGES = (
    "\u1100-\u11ff"
    "\u3040-\u309f"
    "\u30a0-\u30ff"
    "\u3130-\u318f"
    "\u31f0-\u31ff"
    "\u3400-\u4dbf"
    "\u4e00-\u9fff"
    "\uac00-\ud7af"
    "\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_BATCH = 500


def _run(run: str) -> str:
    grams = [run[i : i + 2] for i in range(len(run) - 1)] + list(run) if len(run) > 1 else [run]
    return " " + " ".join(grams) + " "


def _derived(title: str, text: str) -> str:
    source = f"{title}\n{text}" if title else text
    return _CJK_RUN.sub(lambda m: _run(m.group(0)), unicodedata.normalize("NFKC", source))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    last = 0
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT c.id, c.text, d.title FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
                "WHERE c.id > :last AND c.id IN (SELECT rowid FROM chunks_fts) ORDER BY c.id LIMIT :batch"
            ),
            {"last": last, "batch": _BATCH},
        ).all()
        if not rows:
            return
        last = int(rows[-1][0])
        changed = [
            {"id": int(chunk_id), "body": _derived(title or "", text)}
            for chunk_id, text, title in rows
            if _CJK_RUN.search(f"{title or ''}\n{text}")
        ]
        if changed:
            # FTS5 has no upsert: delete by rowid, then insert the new derivation
            conn.execute(sa.text("DELETE FROM chunks_fts WHERE rowid = :id"), [{"id": r["id"]} for r in changed])
            conn.execute(sa.text("INSERT INTO chunks_fts(rowid, body) VALUES (:id, :body)"), changed)
