"""The knowledge core: vocabulary, entities, identifiers, facts, changes, quotas.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.String(24)


def upgrade() -> None:
    op.create_table(
        "space_meta",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "predicates",
        sa.Column("name", sa.String(400), primary_key=True),
        sa.Column("cardinality", sa.String(4), nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("display_en", sa.Text),
        sa.Column("display_zh", sa.Text),
        sa.Column("declared_by", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer, nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint("cardinality IN ('one', 'many')", name="cardinality"),
    )
    op.create_table(
        "predicate_aliases",
        sa.Column("alias", sa.Text, primary_key=True),
        sa.Column("predicate", sa.String(400), sa.ForeignKey("predicates.name"), primary_key=True),
        sa.Column("declared_by", sa.String(200), nullable=False),
    )
    op.create_table(
        "entities",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(100), nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
        sa.Column("merged_into", sa.Integer, sa.ForeignKey("entities.id")),
    )
    op.create_index("ix_entities_kind", "entities", ["kind"])
    op.create_table(
        "identifiers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("entity_id", sa.Integer, sa.ForeignKey("entities.id"), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("normalized", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("removed_at", TS),
    )
    op.create_index("ix_identifiers_type_normalized", "identifiers", ["type", "normalized"])
    op.create_index("ix_identifiers_entity_id", "identifiers", ["entity_id"])
    op.create_table(
        "facts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("subject_id", sa.Integer, sa.ForeignKey("entities.id"), nullable=False),
        sa.Column("predicate", sa.String(400), sa.ForeignKey("predicates.name"), nullable=False),
        sa.Column("value_json", sa.Text, nullable=False),
        sa.Column("object_id", sa.Integer, sa.ForeignKey("entities.id")),
        sa.Column("origin", sa.String(200), nullable=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("source_ref", sa.Text),
        sa.Column("writer", sa.String(200), nullable=False),
        sa.Column("pinned", sa.Boolean, nullable=False),
        sa.Column("valid_from", TS, nullable=False),
        sa.Column("valid_to", TS),
        sa.Column("recorded_at", TS, nullable=False),
        sa.Column("expired_by", sa.Integer),
    )
    op.create_index("ix_facts_subject_id_predicate_valid_to", "facts", ["subject_id", "predicate", "valid_to"])
    op.create_index("ix_facts_writer", "facts", ["writer"])
    op.create_table(
        "changes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.String(300)),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("op", sa.String(50), nullable=False),
        sa.Column("target_type", sa.String(20), nullable=False),
        sa.Column("target_id", sa.Integer),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("before_json", sa.Text),
        sa.Column("after_json", sa.Text),
        sa.Column("proposed_json", sa.Text),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("reverted_by", sa.Integer),
        sa.CheckConstraint("status IN ('applied', 'conflict', 'reverted')", name="status"),
    )
    op.create_index("ix_changes_run_id", "changes", ["run_id"])
    op.create_index("ix_changes_actor_created_at", "changes", ["actor", "created_at"])
    op.create_index("ix_changes_created_at", "changes", ["created_at"])
    op.create_table(
        "change_objects",
        sa.Column("change_id", sa.Integer, sa.ForeignKey("changes.id"), primary_key=True),
        sa.Column("object_type", sa.String(20), primary_key=True),
        sa.Column("object_id", sa.Integer, primary_key=True),
    )
    op.create_index("ix_change_objects_object_type_object_id", "change_objects", ["object_type", "object_id"])
    op.create_table(
        "quota_usage",
        sa.Column("writer", sa.String(200), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("writes", sa.Integer, nullable=False),
        sa.Column("chars", sa.BigInteger, nullable=False),
    )
