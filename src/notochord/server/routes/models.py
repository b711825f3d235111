"""The JSON shapes of the service's responses (OD-B05, OD-B06), as documented in OpenAPI.

Field names are the documented snake_case storage names; the wrappers' camelCase names
(``knowledgeBase``, ``knowledgeBases``, ``knowledgeBaseId``, ``agentId``) are aliases.

Each model is the one declared mapping of its resource: it reads the service's record by attribute
(``from_attributes``), so a converter is ``Model.model_validate(record)`` and never restates the
fields. Only passages are reshaped (their locator and knowledge base are nested objects).
"""

from __future__ import annotations

import dataclasses
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
    model_config = ConfigDict(extra="forbid", from_attributes=True)


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
    return KnowledgeBaseOut.model_validate(kb)


def linked_kb_out(linked: LinkedKnowledgeBase) -> LinkedKnowledgeBaseOut:
    link = {"permissions": linked.permissions, "priority": linked.priority, "linked_at": linked.linked_at}
    return LinkedKnowledgeBaseOut.model_validate({**kb_out(linked.knowledge_base).model_dump(), **link})


def linked_agent_out(agent: LinkedAgent) -> LinkedAgentOut:
    return LinkedAgentOut.model_validate(agent)


def agent_out(agent: Agent) -> AgentOut:
    return AgentOut.model_validate(agent)


def grant_out(grant: Grant) -> GrantOut:
    return GrantOut.model_validate(grant)


def audit_out(entry: AuditEntry) -> AuditEntryOut:
    return AuditEntryOut.model_validate(entry)


def usage_out(record: UsageRecord) -> UsageOut:
    return UsageOut.model_validate(record)


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
    return DocumentOut.model_validate(document)


def document_detail_out(document: KbDocument) -> DocumentDetailOut:
    return DocumentDetailOut.model_validate(dataclasses.replace(document, content=document.content or ""))


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
    return GraphOut.model_validate(graph)
