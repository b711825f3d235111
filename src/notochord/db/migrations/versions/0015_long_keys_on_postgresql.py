"""Names and document keys of any length in PostgreSQL's indexes.

A PostgreSQL B-tree entry holds at most about 2700 bytes, and a name or key of 1000 characters of
Chinese or emoji (the most the store accepts) is 3000 to 4000 bytes of UTF-8: the write that SQLite
stored failed on the server. The identifiers' look-up index becomes a hash index (look-ups are by
equality); the live documents' unique key is kept over the key's MD5 digest, with a hash index on
the key for look-ups. SQLite, which indexes any length, keeps its indexes.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_LIVE_KEY = "key IS NOT NULL AND deleted_at IS NULL"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index("ix_identifiers_type_normalized", table_name="identifiers")
    op.execute("CREATE INDEX ix_identifiers_normalized_hash ON identifiers USING hash (normalized)")
    op.execute(
        f"CREATE UNIQUE INDEX uq_documents_live_key_digest ON documents (collection_id, md5(key)) WHERE {_LIVE_KEY}"
    )
    op.drop_index("uq_documents_live_key", table_name="documents")
    op.execute("CREATE INDEX ix_documents_key_hash ON documents USING hash (key)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index("ix_documents_key_hash", table_name="documents")
    op.execute(f"CREATE UNIQUE INDEX uq_documents_live_key ON documents (collection_id, key) WHERE {_LIVE_KEY}")
    op.drop_index("uq_documents_live_key_digest", table_name="documents")
    op.drop_index("ix_identifiers_normalized_hash", table_name="identifiers")
    op.execute("CREATE INDEX ix_identifiers_type_normalized ON identifiers (type, normalized)")
