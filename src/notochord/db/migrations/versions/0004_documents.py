"""Collections, documents, chunks with their full-text index, vectors and mentions.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.String(24)


def upgrade() -> None:
    op.create_table(
        "collections",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("parent_id", sa.Integer, sa.ForeignKey("collections.id")),
        sa.Column("builtin", sa.String(10)),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
    )
    op.create_index("ix_collections_parent_id", "collections", ["parent_id"])
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("collection_id", sa.Integer, sa.ForeignKey("collections.id"), nullable=False),
        sa.Column("key", sa.Text),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("body", sa.Text),
        sa.Column("meta_json", sa.Text, nullable=False),
        sa.Column("source_uri", sa.Text),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("writer", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("doc_date", TS, nullable=False),
        sa.Column("deleted_at", TS),
    )
    op.create_index("ix_documents_collection_id_doc_date", "documents", ["collection_id", "doc_date"])
    op.create_index("ix_documents_created_by", "documents", ["created_by"])
    op.create_index(
        "uq_documents_live_key",
        "documents",
        ["collection_id", "key"],
        unique=True,
        sqlite_where=sa.text("key IS NOT NULL AND deleted_at IS NULL"),
        postgresql_where=sa.text("key IS NOT NULL AND deleted_at IS NULL"),
    )
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("document_id", sa.Integer, sa.ForeignKey("documents.id"), nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("start", sa.Integer, nullable=False),
        sa.Column("end", sa.Integer, nullable=False),
    )
    op.create_index("ix_chunks_document_id_idx", "chunks", ["document_id", "idx"])
    op.create_table(
        "chunk_vectors",
        sa.Column("chunk_id", sa.Integer, sa.ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("model_id", sa.String(200), primary_key=True),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "mentions",
        sa.Column("chunk_id", sa.Integer, sa.ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("entity_id", sa.Integer, sa.ForeignKey("entities.id"), primary_key=True),
    )
    op.create_index("ix_mentions_entity_id", "mentions", ["entity_id"])
    op.create_table(
        "collection_ticks",
        sa.Column("gem_id", sa.String(100), sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("collection_id", sa.Integer, sa.ForeignKey("collections.id"), primary_key=True),
        sa.Column("ticked_at", TS, nullable=False),
    )
    # The full-text index of chunk text (search.textindex.fts_table_ddl, frozen as of this revision).
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5("
            "body, tokenize='porter unicode61 remove_diacritics 2')"
        )
    else:
        # PostgreSQL: the same derived text under the same names (notochord.search.text_store_pg),
        # and the postings FTS5 would hold, made by FTS5's own tokenizer on the write path.
        op.create_table(
            "chunks_fts",
            sa.Column("rowid", sa.BigInteger, primary_key=True, autoincrement=False),
            sa.Column("body", sa.Text, nullable=False),
        )
        op.create_table(
            "chunks_fts_terms",
            sa.Column("term", sa.Text, primary_key=True),
            sa.Column("chunk_id", sa.BigInteger, primary_key=True),
            sa.Column("tf", sa.Integer, nullable=False),
        )
        op.create_index("ix_chunks_fts_terms_chunk_id", "chunks_fts_terms", ["chunk_id"])
