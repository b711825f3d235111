"""The JSON shapes of the service's responses (OD-B05, OD-B06), as documented in OpenAPI.

Field names are the documented snake_case storage names; the wrappers' camelCase names
(``knowledgeBase``, ``knowledgeBases``, ``knowledgeBaseId``, ``agentId``) are aliases.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from notochord.kbservice import Agent, AuditEntry, Grant, KnowledgeBase, LinkedAgent, LinkedKnowledgeBase, UsageRecord
from notochord.kbservice.documents import KbDocument
from notochord.kbservice.retrieval import Graph, Passage

__all__ = [
    "AgentEnvelope",
    "AgentList",
    "AgentOut",
    "AuditList",
    "DocumentBatchEnvelope",
    "DocumentDetailEnvelope",
    "DocumentDetailOut",
    "DocumentEnvelope",
    "DocumentList",
    "DocumentOut",
    "GrantEnvelope",
    "GrantList",
    "GraphOut",
    "KnowledgeBaseEnvelope",
    "KnowledgeBaseList",
    "KnowledgeBaseOut",
    "LinkResult",
    "LinkedAgentList",
    "LinkedKnowledgeBaseList",
    "Message",
    "PassageOut",
    "RetrieveResults",
    "RetrievedPassageOut",
    "SearchResults",
    "UsageList",
    "agent_out",
    "audit_out",
    "document_detail_out",
    "document_out",
    "grant_out",
    "graph_out",
    "kb_out",
    "linked_agent_out",
    "linked_kb_out",
    "passage_out",
    "retrieved_passage_out",
    "usage_out",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _camel(field_name: str, wire_name: str) -> Any:
    """A field written as ``wire_name`` in JSON and read under either name."""
    return Field(validation_alias=AliasChoices(wire_name, field_name), serialization_alias=wire_name)


class KnowledgeBaseOut(_Model):
    id: str
    name: str
    description: str | None
    organization_id: str
    settings: dict[str, Any]
    created_at: str
    updated_at: str


class LinkedKnowledgeBaseOut(KnowledgeBaseOut):
    permissions: dict[str, Any]
    priority: int
    linked_at: str


class KnowledgeBaseEnvelope(_Model):
    knowledge_base: KnowledgeBaseOut = _camel("knowledge_base", "knowledgeBase")


class KnowledgeBaseList(_Model):
    knowledge_bases: list[KnowledgeBaseOut] = _camel("knowledge_bases", "knowledgeBases")
    total: int
    limit: int
    offset: int


class LinkedKnowledgeBaseList(_Model):
    knowledge_bases: list[LinkedKnowledgeBaseOut] = _camel("knowledge_bases", "knowledgeBases")
    count: int


class LinkedAgentOut(_Model):
    id: str
    name: str
    status: str
    priority: int


class LinkedAgentList(_Model):
    agents: list[LinkedAgentOut]


class AgentOut(_Model):
    id: str
    name: str
    status: str
    organization_id: str
    created_at: str
    updated_at: str


class AgentEnvelope(_Model):
    agent: AgentOut


class AgentList(_Model):
    agents: list[AgentOut]
    total: int
    limit: int
    offset: int


class Message(_Model):
    message: str


class LinkResult(_Model):
    message: str
    knowledge_base_id: str = _camel("knowledge_base_id", "knowledgeBaseId")
    agent_id: str = _camel("agent_id", "agentId")


class GrantOut(_Model):
    resource_type: str
    resource_id: str
    user_id: str
    permission: str
    granted_by: str
    granted_at: str


class GrantEnvelope(_Model):
    grant: GrantOut


class GrantList(_Model):
    grants: list[GrantOut]


class AuditEntryOut(_Model):
    id: int
    organization_id: str
    actor_user_id: str
    actor_email: str | None
    action: str
    resource_type: str
    resource_id: str
    details: dict[str, Any]
    created_at: str


class AuditList(_Model):
    entries: list[AuditEntryOut]
    total: int
    limit: int
    offset: int


class UsageOut(_Model):
    id: int
    organization_id: str
    kind: str
    kb_id: str
    vectors_deleted: int
    bytes_deleted: int
    created_at: str


class UsageList(_Model):
    records: list[UsageOut]
    total: int
    limit: int
    offset: int


def kb_out(kb: KnowledgeBase) -> KnowledgeBaseOut:
    return KnowledgeBaseOut(
        id=kb.id,
        name=kb.name,
        description=kb.description,
        organization_id=kb.organization_id,
        settings=kb.settings,
        created_at=kb.created_at,
        updated_at=kb.updated_at,
    )


def linked_kb_out(linked: LinkedKnowledgeBase) -> LinkedKnowledgeBaseOut:
    return LinkedKnowledgeBaseOut(
        **kb_out(linked.knowledge_base).model_dump(),
        permissions=linked.permissions,
        priority=linked.priority,
        linked_at=linked.linked_at,
    )


def linked_agent_out(agent: LinkedAgent) -> LinkedAgentOut:
    return LinkedAgentOut(id=agent.id, name=agent.name, status=agent.status, priority=agent.priority)


def agent_out(agent: Agent) -> AgentOut:
    return AgentOut(
        id=agent.id,
        name=agent.name,
        status=agent.status,
        organization_id=agent.organization_id,
        created_at=agent.created_at,
        updated_at=agent.updated_at,
    )


def grant_out(grant: Grant) -> GrantOut:
    return GrantOut(
        resource_type=grant.resource_type,
        resource_id=grant.resource_id,
        user_id=grant.user_id,
        permission=grant.permission,
        granted_by=grant.granted_by,
        granted_at=grant.granted_at,
    )


def audit_out(entry: AuditEntry) -> AuditEntryOut:
    return AuditEntryOut(
        id=entry.id,
        organization_id=entry.organization_id,
        actor_user_id=entry.actor_user_id,
        actor_email=entry.actor_email,
        action=entry.action,
        resource_type=entry.resource_type,
        resource_id=entry.resource_id,
        details=entry.details,
        created_at=entry.created_at,
    )


def usage_out(record: UsageRecord) -> UsageOut:
    return UsageOut(
        id=record.id,
        organization_id=record.organization_id,
        kind=record.kind,
        kb_id=record.kb_id,
        vectors_deleted=record.vectors_deleted,
        bytes_deleted=record.bytes_deleted,
        created_at=record.created_at,
    )


# ---------------------------------------------------------------------- documents and retrieval


class DocumentOut(_Model):
    """A document of a knowledge base, with the upload's file name and type."""

    id: str
    kb_id: str
    title: str
    source_type: str = Field(description="text, file, url or structured")
    source_url: str | None
    filename: str | None
    content_type: str | None
    status: str = Field(description="ready, or indexing while its vectors are being computed")
    chunk_count: int
    created_by: str | None
    created_at: str
    updated_at: str


class DocumentDetailOut(DocumentOut):
    content: str
    data: Any = Field(default=None, description="The structured record, for source_type structured.")


class DocumentEnvelope(_Model):
    document: DocumentOut


class DocumentBatchEnvelope(_Model):
    documents: list[DocumentOut]


class DocumentDetailEnvelope(_Model):
    document: DocumentDetailOut


class DocumentList(_Model):
    documents: list[DocumentOut]
    total: int
    limit: int
    offset: int


class LocatorOut(_Model):
    """Where a passage lies: its document, the chunk number and character offsets (``to`` exclusive)."""

    document_id: str
    chunk: int
    from_: int = _camel("from_", "from")
    to: int


class PassageOut(_Model):
    kb_id: str
    document_id: str
    title: str
    text: str
    score: float
    locator: LocatorOut
    source_type: str
    source_url: str | None


class KnowledgeBaseTag(_Model):
    id: str
    name: str
    priority: int


class RetrievedPassageOut(PassageOut):
    knowledge_base: KnowledgeBaseTag = _camel("knowledge_base", "knowledgeBase")


class SearchResults(_Model):
    results: list[PassageOut]
    count: int


class RetrieveResults(_Model):
    passages: list[RetrievedPassageOut]
    count: int


class GraphEntityOut(_Model):
    id: str
    name: str
    kind: str = Field(description="name, acronym or email")
    documents: int
    mentions: int


class GraphEdgeOut(_Model):
    source: str
    target: str
    weight: int = Field(description="How many passages name both entities.")


class GraphOut(_Model):
    entities: list[GraphEntityOut]
    edges: list[GraphEdgeOut]
    truncated: bool


def document_out(document: KbDocument) -> DocumentOut:
    return DocumentOut(
        id=document.id,
        kb_id=document.kb_id,
        title=document.title,
        source_type=document.source_type,
        source_url=document.source_url,
        filename=document.filename,
        content_type=document.content_type,
        status=document.status,
        chunk_count=document.chunk_count,
        created_by=document.created_by,
        created_at=document.created_at,
        updated_at=document.updated_at,
    )


def document_detail_out(document: KbDocument) -> DocumentDetailOut:
    return DocumentDetailOut(**document_out(document).model_dump(), content=document.content or "", data=document.data)


def passage_out(passage: Passage) -> PassageOut:
    return PassageOut(
        kb_id=passage.kb_id,
        document_id=passage.document_id,
        title=passage.title,
        text=passage.text,
        score=passage.score,
        locator=LocatorOut(document_id=passage.document_id, chunk=passage.chunk, from_=passage.start, to=passage.end),
        source_type=passage.source_type,
        source_url=passage.source_url,
    )


def retrieved_passage_out(passage: Passage) -> RetrievedPassageOut:
    return RetrievedPassageOut(
        **passage_out(passage).model_dump(),
        knowledge_base=KnowledgeBaseTag(id=passage.kb_id, name=passage.kb_name, priority=passage.priority),
    )


def graph_out(graph: Graph) -> GraphOut:
    return GraphOut(
        entities=[
            GraphEntityOut(id=e.id, name=e.name, kind=e.kind, documents=e.documents, mentions=e.mentions)
            for e in graph.entities
        ],
        edges=[GraphEdgeOut(source=e.source, target=e.target, weight=e.weight) for e in graph.edges],
        truncated=graph.truncated,
    )
