"""The knowledge-base service: knowledge bases, agents, links, grants, audit log and cost ledger.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TS = sa.String(24)


def upgrade() -> None:
    op.create_table(
        "kb_knowledge_bases",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("organization_id", sa.String(63), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("settings_json", sa.Text, nullable=False),
        sa.Column("collection_id", sa.Integer, sa.ForeignKey("collections.id"), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_kb_knowledge_bases_organization_id_created_at",
        "kb_knowledge_bases",
        ["organization_id", "created_at"],
    )
    op.create_table(
        "kb_agents",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("organization_id", sa.String(63), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
        sa.CheckConstraint("status IN ('draft', 'published', 'archived')", name="ck_kb_agents_status"),
    )
    op.create_index("ix_kb_agents_organization_id_created_at", "kb_agents", ["organization_id", "created_at"])
    op.create_table(
        "kb_agent_links",
        sa.Column(
            "kb_id",
            sa.String(36),
            sa.ForeignKey("kb_knowledge_bases.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("agent_id", sa.String(36), primary_key=True),
        sa.Column("agent_organization_id", sa.String(63), nullable=False),
        sa.Column("permissions_json", sa.Text, nullable=False),
        sa.Column("priority", sa.BigInteger, nullable=False),
        sa.Column("linked_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_kb_agent_links_agent_id", "kb_agent_links", ["agent_id"])
    op.create_table(
        "kb_grants",
        sa.Column("resource_type", sa.String(10), primary_key=True),
        sa.Column("resource_id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(200), primary_key=True),
        sa.Column("permission", sa.String(10), nullable=False),
        sa.Column("granted_by", sa.String(200), nullable=False),
        sa.Column("granted_at", TS, nullable=False),
        sa.CheckConstraint("resource_type IN ('kb', 'agent')", name="ck_kb_grants_resource_type"),
        sa.CheckConstraint("permission IN ('view', 'edit', 'delete')", name="ck_kb_grants_permission"),
    )
    op.create_table(
        "kb_audit_log",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("organization_id", sa.String(63), nullable=False),
        sa.Column("actor_user_id", sa.String(200), nullable=False),
        sa.Column("actor_email", sa.String(320)),
        sa.Column("action", sa.String(100), nullable=False),
        sa.Column("resource_type", sa.String(30), nullable=False),
        sa.Column("resource_id", sa.String(36), nullable=False),
        sa.Column("details_json", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_kb_audit_log_organization_id_created_at", "kb_audit_log", ["organization_id", "created_at"])
    op.create_index("ix_kb_audit_log_resource_id", "kb_audit_log", ["resource_id"])
    op.create_table(
        "kb_usage",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("organization_id", sa.String(63), nullable=False),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("kb_id", sa.String(36), nullable=False),
        sa.Column("vectors_deleted", sa.Integer, nullable=False),
        sa.Column("bytes_deleted", sa.BigInteger, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_kb_usage_organization_id_created_at", "kb_usage", ["organization_id", "created_at"])
