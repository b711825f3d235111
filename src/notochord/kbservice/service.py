"""The knowledge-base service, wired over an open data directory.

``KbService(nc)`` is the one object the HTTP edge (and any other entry point) talks to. Every
method takes the caller as the keyword-only ``actor`` and asks the permission question through
:mod:`notochord.kbservice.policy`; the service holds no state beyond the directory's id cache.

Text extraction and the organizations' network rules live in higher layers (``gems``), so the
composition root hands them in: ``KbService(nc, extractor=extract_isolated, network_rules=...)``.
Without an extractor only Markdown and plain text can be added; without network rules no URL can be.
"""

from __future__ import annotations

from notochord.kbservice.agents import Agents
from notochord.kbservice.audit import AuditLog
from notochord.kbservice.documents import Extractor, IngestLimits, KbDocuments, NetworkRulesSource
from notochord.kbservice.grants import Grants
from notochord.kbservice.knowledge_bases import KnowledgeBases
from notochord.kbservice.links import Links
from notochord.kbservice.retrieval import KbRetrieval
from notochord.kbservice.spaces import Directory, Spaces

__all__ = ["KbService"]


class KbService:
    """Knowledge bases, agents, links, grants, documents, retrieval and the audit log of every
    organization."""

    def __init__(
        self,
        spaces: Spaces,
        *,
        extractor: Extractor | None = None,
        network_rules: NetworkRulesSource | None = None,
        limits: IngestLimits | None = None,
    ) -> None:
        self.directory = Directory(spaces)
        self.knowledge_bases = KnowledgeBases(self.directory)
        self.agents = Agents(self.directory)
        self.links = Links(self.directory)
        self.grants = Grants(self.directory)
        self.audit = AuditLog(self.directory)
        self.documents = KbDocuments(self.directory, extractor=extractor, network_rules=network_rules, limits=limits)
        self.retrieval = KbRetrieval(self.directory, self.links)
