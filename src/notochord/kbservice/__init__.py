"""The knowledge-base REST service's domain: organizations, members, knowledge bases, grants,
agents, links, audit and cost records (SPEC §16–§22). Pure of any web framework.

Knowledge bases here share no ids, permissions or API with ``ctx.knowledge`` (OD-B24); each one's
documents live in a ``builtin = 'kb'`` collection of its organization's space.
"""

from __future__ import annotations

from notochord.kbservice.actors import Actor, OrgRole, actor_from_claims
from notochord.kbservice.agents import Agent
from notochord.kbservice.audit import AuditEntry, UsageRecord
from notochord.kbservice.grants import Grant
from notochord.kbservice.knowledge_bases import Deletion, KnowledgeBase
from notochord.kbservice.links import LinkedAgent, LinkedKnowledgeBase
from notochord.kbservice.policy import Action, Decision, Level, OrgScope, Outcome, Resource, ResourceType, decide
from notochord.kbservice.service import KbService
from notochord.kbservice.validation import JsonBody, Paging

__all__ = [
    "Action",
    "Actor",
    "Agent",
    "AuditEntry",
    "Decision",
    "Deletion",
    "Grant",
    "JsonBody",
    "KbService",
    "KnowledgeBase",
    "Level",
    "LinkedAgent",
    "LinkedKnowledgeBase",
    "OrgRole",
    "OrgScope",
    "Outcome",
    "Paging",
    "Resource",
    "ResourceType",
    "UsageRecord",
    "actor_from_claims",
    "decide",
]
