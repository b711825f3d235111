"""The tables of one space, in SQLAlchemy Core (no ORM), valid on SQLite and PostgreSQL.

Invariants the rest of the code relies on:

- Rows of ``facts``, ``entities`` and ``changes`` of the user's knowledge are never deleted. Facts
  expire (``valid_to`` and ``expired_by`` set); entities are marked ``deleted_at`` or
  ``merged_into``; identifiers are marked ``removed_at``. (Deleting a knowledge base of the REST
  service removes its documents and their change records with it: that is an organization's content
  store, and its copies of document bodies must go with it.)
- Every write appends one ``changes`` row in the same transaction, and ``change_objects`` lists every
  object the change touched (the basis of the ``superseded`` rule of revert).
- Timestamps are stored as ISO 8601 UTC strings with milliseconds: they sort as text and need no
  dialect-specific type.

The Alembic migrations under ``db/migrations`` create exactly these tables; a contract test compares
the migrated database with this metadata.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import base as postgresql_base

__all__ = [
    "NOT_BY_USER",
    "ONLY_ON",
    "FoldedText",
    "built_on",
    "change_objects",
    "changes",
    "chunk_vectors",
    "chunks",
    "collection_ticks",
    "collections",
    "documents",
    "entities",
    "facts",
    "gem_grants",
    "gem_settings",
    "gems",
    "identifiers",
    "kb_agent_links",
    "kb_agents",
    "kb_audit_log",
    "kb_grants",
    "kb_knowledge_bases",
    "kb_usage",
    "mentions",
    "metadata",
    "not_by_user",
    "predicate_aliases",
    "predicates",
    "quota_usage",
    "runs",
    "space_meta",
]

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)

Timestamp = sa.String(24)

NOT_BY_USER = {"writer": "writer <> 'user'", "actor": "actor <> 'user'"}
"""The condition of the partial indexes on ``facts.writer`` and ``changes.actor``: a query that
asks for another writer's rows repeats it word for word (as :func:`not_by_user`) to use them."""


def not_by_user(column: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """``column <> 'user'`` with the literal in the SQL, so that SQLite matches it to the partial index."""
    return column != sa.literal_column("'user'")


space_meta = sa.Table(
    "space_meta",
    metadata,
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

predicates = sa.Table(
    "predicates",
    metadata,
    sa.Column("name", sa.String(400), primary_key=True),
    sa.Column("cardinality", sa.String(4), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("display_en", sa.Text, nullable=True),
    sa.Column("display_zh", sa.Text, nullable=True),
    # "core", "user", "gem:<id>" or "hint" (created from an unmatched predicate hint)
    sa.Column("declared_by", sa.String(200), nullable=False),
    sa.Column("position", sa.Integer, nullable=False, unique=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.CheckConstraint("cardinality IN ('one', 'many')", name="cardinality"),
)

predicate_aliases = sa.Table(
    "predicate_aliases",
    metadata,
    sa.Column("alias", sa.Text, primary_key=True),
    sa.Column("predicate", sa.ForeignKey("predicates.name"), primary_key=True),
    sa.Column("declared_by", sa.String(200), nullable=False),
)

ONLY_ON: dict[str, str] = {}
"""The indexes built on one backend only, by name, with that backend's dialect name: what
:func:`built_on` tells a comparison of a migrated database with this metadata."""


def _only_on(dialect: str, index: sa.Index) -> sa.Index:
    """``index``, created by ``metadata.create_all`` and the migrations on ``dialect`` only."""
    assert index.name is not None
    ONLY_ON[str(index.name)] = dialect
    return index.ddl_if(dialect=dialect)


def built_on(index_name: str | None, dialect: str) -> bool:
    """Whether the index named ``index_name`` exists in a store of ``dialect``."""
    return ONLY_ON.get(str(index_name), dialect) == dialect


FoldedText = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""A text kept case-folded for matching and ordering (``knowledge.identifiers.folded``). On
PostgreSQL it compares byte by byte (collation ``C``), as SQLite compares every text, so both
backends order folded names alike whatever the server's locale."""

entities = sa.Table(
    "entities",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(100), nullable=False),
    sa.Column("display_name", sa.Text, nullable=False),
    # display_name folded by the one write path: names are filtered and ordered by it, identically on
    # both backends (SQLite's lower() folds ASCII only, PostgreSQL's follows the server's locale)
    sa.Column("name_folded", FoldedText, nullable=False, server_default=""),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("deleted_at", Timestamp, nullable=True),
    sa.Column("merged_into", sa.ForeignKey("entities.id"), nullable=True),
    sa.Index(None, "kind"),
    sa.Index(None, "merged_into"),
    # pages of entities walk it in name order (a sort of 100k names per page otherwise); a name of
    # 1000 characters may exceed a PostgreSQL B-tree entry, so the server sorts instead
    _only_on("sqlite", sa.Index("ix_entities_name_folded", "name_folded")),
)

identifiers = sa.Table(
    "identifiers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("entity_id", sa.ForeignKey("entities.id"), nullable=False),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("normalized", sa.Text, nullable=False),
    # value folded as entities.name_folded is: what a name query matches an identifier on
    sa.Column("value_folded", FoldedText, nullable=False, server_default=""),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("removed_at", Timestamp, nullable=True),
    # A PostgreSQL B-tree entry holds at most about 2700 bytes, and a normalized name of 1000
    # characters of Chinese or emoji is 3000-4000: on the server the look-up index is a hash, which
    # holds any length (the look-ups are by equality only). SQLite indexes any length in a B-tree.
    _only_on("sqlite", sa.Index("ix_identifiers_type_normalized", "type", "normalized")),
    _only_on("postgresql", sa.Index("ix_identifiers_normalized_hash", "normalized", postgresql_using="hash")),
    sa.Index(None, "entity_id"),
)

facts = sa.Table(
    "facts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("subject_id", sa.ForeignKey("entities.id"), nullable=False),
    sa.Column("predicate", sa.ForeignKey("predicates.name"), nullable=False),
    sa.Column("value_json", sa.Text, nullable=False),
    sa.Column("object_id", sa.ForeignKey("entities.id"), nullable=True),
    # who the fact is attributed to, and how it was obtained (OD-K14)
    sa.Column("origin", sa.String(200), nullable=False),
    sa.Column("source", sa.String(200), nullable=False),
    sa.Column("source_ref", sa.Text, nullable=True),
    # who actually wrote it: "user", "assistant" or "gem:<id>"; decides retract and changes.manage
    sa.Column("writer", sa.String(200), nullable=False),
    sa.Column("pinned", sa.Boolean, nullable=False, default=False),
    sa.Column("valid_from", Timestamp, nullable=False),
    sa.Column("valid_to", Timestamp, nullable=True),
    sa.Column("recorded_at", Timestamp, nullable=False),
    sa.Column("expired_by", sa.Integer, nullable=True),
    sa.Index(None, "subject_id", "predicate", "valid_to"),
    # only what is not the user's: queries ask by writer for a gem's facts (see migration 0012)
    sa.Index(
        None, "writer", sqlite_where=sa.text(NOT_BY_USER["writer"]), postgresql_where=sa.text(NOT_BY_USER["writer"])
    ),
)

changes = sa.Table(
    "changes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.String(300), nullable=True),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("op", sa.String(50), nullable=False),
    sa.Column("target_type", sa.String(20), nullable=False),
    sa.Column("target_id", sa.Integer, nullable=True),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("before_json", sa.Text, nullable=True),
    sa.Column("after_json", sa.Text, nullable=True),
    sa.Column("proposed_json", sa.Text, nullable=True),
    sa.Column("status", sa.String(10), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("reverted_by", sa.Integer, nullable=True),
    sa.CheckConstraint("status IN ('applied', 'conflict', 'reverted')", name="status"),
    sa.Index(
        None, "run_id", sqlite_where=sa.text("run_id IS NOT NULL"), postgresql_where=sa.text("run_id IS NOT NULL")
    ),
    sa.Index(
        None,
        "actor",
        "created_at",
        sqlite_where=sa.text(NOT_BY_USER["actor"]),
        postgresql_where=sa.text(NOT_BY_USER["actor"]),
    ),
    sa.Index(None, "created_at"),
)

change_objects = sa.Table(
    "change_objects",
    metadata,
    sa.Column("change_id", sa.ForeignKey("changes.id"), primary_key=True),
    sa.Column("object_type", sa.String(20), primary_key=True),
    sa.Column("object_id", sa.Integer, primary_key=True),
    sa.Index(None, "object_type", "object_id"),
    # the primary key is the table: one b-tree less to update per change
    sqlite_with_rowid=False,
)

quota_usage = sa.Table(
    "quota_usage",
    metadata,
    sa.Column("writer", sa.String(200), primary_key=True),
    sa.Column("day", sa.String(10), primary_key=True),
    sa.Column("writes", sa.Integer, nullable=False),
    sa.Column("chars", sa.BigInteger, nullable=False),
)

gems = sa.Table(
    "gems",
    metadata,
    sa.Column("id", sa.String(100), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("version", sa.String(100), nullable=True),
    sa.Column("manifest_json", sa.Text, nullable=False),
    sa.Column("source_path", sa.Text, nullable=True),
    # per-install salt of the gem's keys (refs, private storage): uninstall deletes it, and with it
    # every key derived for that installation
    sa.Column("key_salt", sa.String(64), nullable=False),
    sa.Column("installed_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

gem_grants = sa.Table(
    "gem_grants",
    metadata,
    sa.Column("gem_id", sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("permission", sa.String(500), primary_key=True),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("changed_at", Timestamp, nullable=False),
)

gem_settings = sa.Table(
    "gem_settings",
    metadata,
    sa.Column("gem_id", sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("value_json", sa.Text, nullable=False),
    sa.Column("changed_at", Timestamp, nullable=False),
)

collections = sa.Table(
    "collections",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("parent_id", sa.ForeignKey("collections.id"), nullable=True),
    sa.Column("builtin", sa.String(10), nullable=True),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("deleted_at", Timestamp, nullable=True),
    sa.Index(None, "parent_id"),
)

documents = sa.Table(
    "documents",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("collection_id", sa.ForeignKey("collections.id"), nullable=False),
    sa.Column("key", sa.Text, nullable=True),
    sa.Column("title", sa.Text, nullable=False),
    # null for imported documents (text + sourceUri): only their index is kept (K-DOC-06)
    sa.Column("body", sa.Text, nullable=True),
    sa.Column("meta_json", sa.Text, nullable=False),
    sa.Column("source_uri", sa.Text, nullable=True),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("writer", sa.String(200), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # the document date of OD-K39: meta.date when it is an ISO date, else updated_at
    sa.Column("doc_date", Timestamp, nullable=False),
    sa.Column("deleted_at", Timestamp, nullable=True),
    sa.Index(None, "collection_id", "doc_date"),
    sa.Index(None, "created_by"),
    _only_on(
        "sqlite",
        sa.Index(
            "uq_documents_live_key",
            "collection_id",
            "key",
            unique=True,
            sqlite_where=sa.text("key IS NOT NULL AND deleted_at IS NULL"),
        ),
    ),
    # On PostgreSQL a key of 1000 characters may be more than a B-tree entry holds (see identifiers):
    # uniqueness is kept over the key's digest, and look-ups by key go through a hash index.
    _only_on(
        "postgresql",
        sa.Index(
            "uq_documents_live_key_digest",
            "collection_id",
            sa.func.md5(sa.column("key")),
            unique=True,
            postgresql_where=sa.text("key IS NOT NULL AND deleted_at IS NULL"),
        ),
    ),
    _only_on("postgresql", sa.Index("ix_documents_key_hash", "key", postgresql_using="hash")),
)

chunks = sa.Table(
    "chunks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("document_id", sa.ForeignKey("documents.id"), nullable=False),
    sa.Column("idx", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("start", sa.Integer, nullable=False),
    sa.Column("end", sa.Integer, nullable=False),
    # sha256 of what is embedded for the chunk (its document's title, then its text): a vector is
    # stored only while the chunk still has the hash it was computed from
    sa.Column("text_hash", sa.String(64), nullable=False),
    sa.Index(None, "document_id", "idx"),
    # ids are never reused, so a vector computed for a deleted chunk can never attach to a new one
    sqlite_autoincrement=True,
)


class PgVector(sa.types.UserDefinedType[str]):
    """pgvector's ``vector`` type, of any dimension (``dim=None``) or of one (``vector(dim)``)."""

    cache_ok = True

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def get_col_spec(self, **_kw: Any) -> str:
        return "vector" if self.dim is None else f"vector({int(self.dim)})"


# a reflected ``vector`` column (migrations, ``compare_metadata``) is known, not a warning
postgresql_base.ischema_names.setdefault("vector", PgVector)


class VectorBytes(sa.types.TypeDecorator[bytes]):
    """A vector as the code reads and writes it: float32 little-endian bytes (``vectors.to_blob``).

    SQLite stores the bytes as they are (a BLOB). PostgreSQL stores a pgvector ``vector`` of any
    dimension, so that the server computes distances and keeps an HNSW index
    (:mod:`notochord.search.vector_store_pg`); the bytes are converted on the way in and out, so
    every statement that writes or reads ``chunk_vectors.vector`` is the same on both backends.
    """

    impl = sa.LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(PgVector())
        return dialect.type_descriptor(sa.LargeBinary())

    def process_bind_param(self, value: bytes | None, dialect: sa.Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        return vector_text(np.frombuffer(bytes(value), dtype="<f4"))

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> bytes | None:
        if value is None or dialect.name != "postgresql":
            return value  # type: ignore[no-any-return,unused-ignore]
        return bytes(parse_vector_text(str(value)).astype("<f4").tobytes())


def vector_text(vector: Any) -> str:
    """pgvector's text form of a float vector; ``%.9g`` gives every float32 back exactly."""
    return "[" + ",".join(map("{:.9g}".format, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def parse_vector_text(text: str) -> Any:
    """A float32 array from pgvector's text form ``[1,2,3]``."""
    return np.array(text.strip("[]").split(","), dtype=np.float32) if text.strip("[]") else np.zeros(0, np.float32)


chunk_vectors = sa.Table(
    "chunk_vectors",
    metadata,
    sa.Column("chunk_id", sa.ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("model_id", sa.String(200), primary_key=True),
    sa.Column("vector", VectorBytes, nullable=False),
    # the chunk's text_hash when the vector was computed; equal to it, or the vector is stale
    sa.Column("text_hash", sa.String(64), nullable=False),
)

mentions = sa.Table(
    "mentions",
    metadata,
    sa.Column("chunk_id", sa.ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("entity_id", sa.ForeignKey("entities.id"), primary_key=True),
    sa.Index(None, "entity_id"),
)

collection_ticks = sa.Table(
    "collection_ticks",
    metadata,
    sa.Column("gem_id", sa.ForeignKey("gems.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("collection_id", sa.ForeignKey("collections.id"), primary_key=True),
    sa.Column("ticked_at", Timestamp, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(300), primary_key=True),
    sa.Column("gem_id", sa.String(100), nullable=False),
    sa.Column("tool", sa.String(200), nullable=True),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("conversation", sa.Text, nullable=True),
    sa.Column("folder", sa.Text, nullable=True),
    sa.Column("input_json", sa.Text, nullable=True),
    sa.Column("output_json", sa.Text, nullable=True),
    sa.Column("error_json", sa.Text, nullable=True),
    sa.Column("isolation_json", sa.Text, nullable=True),
    sa.Column("log", sa.Text, nullable=True),
    sa.Column("started_at", Timestamp, nullable=False),
    sa.Column("finished_at", Timestamp, nullable=True),
    sa.Index(None, "gem_id", "started_at"),
)

# ---------------------------------------------------------------------- knowledge-base service
#
# The REST service's organizations keep their knowledge bases in their own space (OD-B24 as
# overridden). Ids are UUID strings. A knowledge base owns one ``builtin = 'kb'`` collection, its
# document store, created and deleted with it; deleting a knowledge base is physical (KB-DEL-04).

kb_knowledge_bases = sa.Table(
    "kb_knowledge_bases",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("organization_id", sa.String(63), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("settings_json", sa.Text, nullable=False),
    sa.Column("collection_id", sa.ForeignKey("collections.id"), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index(None, "organization_id", "created_at"),
)

# A local mirror of the Bot Service's agents (OD-B18); ``deleted_at`` marks a soft delete.
kb_agents = sa.Table(
    "kb_agents",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("organization_id", sa.String(63), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("status", sa.String(10), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Column("deleted_at", Timestamp, nullable=True),
    sa.CheckConstraint("status IN ('draft', 'published', 'archived')", name="status"),
    sa.Index(None, "organization_id", "created_at"),
)

# Links live in the knowledge base's space and cascade with it (KB-DEL-05). The agent is named by id
# and organization, not by foreign key: a link made before cross-organization links were refused
# points into another space (KB-ULK-05).
kb_agent_links = sa.Table(
    "kb_agent_links",
    metadata,
    sa.Column("kb_id", sa.ForeignKey("kb_knowledge_bases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("agent_id", sa.String(36), primary_key=True),
    sa.Column("agent_organization_id", sa.String(63), nullable=False),
    sa.Column("permissions_json", sa.Text, nullable=False),
    sa.Column("priority", sa.BigInteger, nullable=False),
    sa.Column("linked_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index(None, "agent_id"),
)

# One row per (resource, user): the highest level granted; delete ⊇ edit ⊇ view (OD-B10).
kb_grants = sa.Table(
    "kb_grants",
    metadata,
    sa.Column("resource_type", sa.String(10), primary_key=True),
    sa.Column("resource_id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(200), primary_key=True),
    sa.Column("permission", sa.String(10), nullable=False),
    sa.Column("granted_by", sa.String(200), nullable=False),
    sa.Column("granted_at", Timestamp, nullable=False),
    sa.CheckConstraint("resource_type IN ('kb', 'agent')", name="resource_type"),
    sa.CheckConstraint("permission IN ('view', 'edit', 'delete')", name="permission"),
)

# Only the three documented actions are written (OD-B19).
kb_audit_log = sa.Table(
    "kb_audit_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("organization_id", sa.String(63), nullable=False),
    sa.Column("actor_user_id", sa.String(200), nullable=False),
    sa.Column("actor_email", sa.String(320), nullable=True),
    sa.Column("action", sa.String(100), nullable=False),
    sa.Column("resource_type", sa.String(30), nullable=False),
    sa.Column("resource_id", sa.String(36), nullable=False),
    sa.Column("details_json", sa.Text, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index(None, "organization_id", "created_at"),
    sa.Index(None, "resource_id"),
)

# The cost ledger (OD-B20): one row per billable event, attributed to the owning organization.
kb_usage = sa.Table(
    "kb_usage",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("organization_id", sa.String(63), nullable=False),
    sa.Column("kind", sa.String(30), nullable=False),
    sa.Column("kb_id", sa.String(36), nullable=False),
    sa.Column("vectors_deleted", sa.Integer, nullable=False),
    sa.Column("bytes_deleted", sa.BigInteger, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index(None, "organization_id", "created_at"),
)
