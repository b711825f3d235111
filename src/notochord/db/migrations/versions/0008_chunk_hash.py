"""Chunk content hashes, vectors tied to them, and chunk ids that are never reused.

Revision ID: 0007
Revises: 0006

- ``chunks`` is rebuilt with AUTOINCREMENT (SQLite batch mode) and gains ``text_hash``, filled here
  for every existing row from its document's title and its text.
- ``chunk_vectors`` gains ``text_hash``. Vectors written before this revision cannot be proven to
  belong to their chunk's current text (ids were reused, so a vector computed for a deleted chunk
  could attach to a new one), so they are dropped: the background worker re-embeds every chunk once.
- Rebuilding a table drops the old one, and with foreign keys on that cascades into the rows that
  point at it (``mentions``); they are kept aside and put back.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_BATCH = 1000


def _passage_hash(title: str, text: str) -> str:
    # frozen copy of notochord.search.vector_index.passage_hash as of this revision
    passage = f"{title}\n{text}" if title else text
    return hashlib.sha256(passage.encode("utf-8", "surrogatepass")).hexdigest()


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        _upgrade_in_place()
        return
    op.execute("CREATE TEMPORARY TABLE keep_mentions AS SELECT chunk_id, entity_id FROM mentions")
    op.execute("DELETE FROM chunk_vectors")
    with op.batch_alter_table("chunks", recreate="always", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("text_hash", sa.String(64), nullable=True))

    chunks = sa.table(
        "chunks",
        sa.column("id", sa.Integer),
        sa.column("document_id", sa.Integer),
        sa.column("text", sa.Text),
        sa.column("text_hash", sa.String),
    )
    documents = sa.table("documents", sa.column("id", sa.Integer), sa.column("title", sa.Text))
    rows = bind.execute(
        sa.select(chunks.c.id, chunks.c.text, documents.c.title)
        .join(documents, documents.c.id == chunks.c.document_id)
        .order_by(chunks.c.id)
    ).all()
    updates = [{"cid": r.id, "h": _passage_hash(r.title or "", r.text)} for r in rows]
    statement = sa.update(chunks).where(chunks.c.id == sa.bindparam("cid")).values(text_hash=sa.bindparam("h"))
    for start in range(0, len(updates), _BATCH):
        bind.execute(statement, updates[start : start + _BATCH])
    # a chunk whose document row is missing is garbage; drop it rather than invent a hash for it
    op.execute("DELETE FROM chunks WHERE text_hash IS NULL")

    with op.batch_alter_table("chunks", recreate="always", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.alter_column("text_hash", existing_type=sa.String(64), nullable=False)
    with op.batch_alter_table("chunk_vectors", recreate="always") as batch:
        batch.add_column(sa.Column("text_hash", sa.String(64), nullable=False))

    op.execute(
        "INSERT INTO mentions (chunk_id, entity_id) SELECT chunk_id, entity_id FROM keep_mentions "
        "WHERE chunk_id IN (SELECT id FROM chunks)"
    )
    op.execute("DROP TABLE keep_mentions")


def _upgrade_in_place() -> None:
    """PostgreSQL: columns are added in place, and its sequences never hand out an id twice.

    A database is new when this runs there (the backend arrived after this revision), so there is
    nothing to hash.
    """
    op.execute("DELETE FROM chunk_vectors")
    op.execute("DELETE FROM mentions WHERE chunk_id IN (SELECT id FROM chunks)")
    op.execute("DELETE FROM chunks")
    op.add_column("chunks", sa.Column("text_hash", sa.String(64), nullable=False))
    op.add_column("chunk_vectors", sa.Column("text_hash", sa.String(64), nullable=False))
