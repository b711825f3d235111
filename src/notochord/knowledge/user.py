"""The host API: what the user, the assistant and the system do, outside any gem (OD-K46).

Synchronous, with internal ids. Writes made through ``space.user`` are said by the user (they win
``cardinality: one`` conflicts and are pinned by default when about ``self``); writes through
``space.as_assistant`` are the assistant's, count against its daily quota, and may be marked
``source="inferred"``. Nothing here is reachable from a gem's ``ctx``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.facts import MISSING, Subject
from notochord.knowledge.quotas import DailyLimits
from notochord.knowledge.records import (
    Change,
    Entity,
    Fact,
    PinResult,
    PutResult,
    RetractResult,
    RevertResult,
)
from notochord.knowledge.writes import USER, Actor

__all__ = ["HostChanges", "HostEntities", "HostFacts", "HostKnowledge"]

_HOST_SOURCES = {"user", "extracted", "inferred"}


class HostFacts:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def put(
        self,
        *,
        predicate: str,
        value: Any = MISSING,
        subject: Subject = "self",
        object: int | None = None,
        pin: bool | None = None,
        source: str | None = None,
        source_ref: str | None = None,
        run_id: str | None = None,
    ) -> PutResult:
        """Write a fact under a full predicate name (added to the vocabulary if new)."""
        if source is not None and source not in _HOST_SOURCES:
            raise KnowledgeValidationError(
                f"source {source!r} is not one of {', '.join(sorted(_HOST_SOURCES))}"
            )
        if source == "inferred" and self._actor.is_user:
            raise KnowledgeValidationError(
                "the user's own facts are said, not inferred; write as the assistant"
            )
        return self._core.facts.put(
            actor=self._actor,
            subject=subject,
            predicate=predicate,
            value=value,
            object_id=object,
            pin=pin,
            source=source,
            source_ref=source_ref,
            run_id=run_id,
            limits=self._limits,
        )

    def lookup(
        self, subject: Subject, prefix: str | None = None, *, include_inferred: bool = False
    ) -> list[Fact]:
        return self._core.facts.lookup(subject, prefix, include_inferred=include_inferred)

    def profile(self, prefix: str | None = None) -> list[Fact]:
        """The standing profile: the user's pinned current facts."""
        return self._core.facts.lookup("self", prefix, pinned_only=True)

    def get(self, fact_id: int) -> Fact:
        return self._core.facts.get(fact_id)

    def retract(self, fact_id: int, *, run_id: str | None = None) -> RetractResult:
        return self._core.facts.retract(
            actor=self._actor, fact_id=fact_id, run_id=run_id, limits=self._limits
        )

    def pin(self, fact_id: int, pinned: bool = True) -> PinResult:
        return self._core.facts.pin(actor=self._actor, fact_id=fact_id, pinned=pinned)


class HostEntities:
    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self._core = core
        self._actor = actor
        self._limits = None if actor.is_user else DailyLimits()

    def resolve(
        self, *, kind: str = "person", create: bool = False, run_id: str | None = None, **identifiers: str
    ) -> Entity | None:
        """Find an entity by identifiers (``email=``, ``phone=``, ``domain=``, ``url=``, ``handle=``,
        ``name=``); with ``create=True`` make one when none matches."""
        found = self._core.entities.resolve(
            actor=self._actor, given=identifiers, kind=kind, create=create, run_id=run_id, limits=self._limits
        )
        return None if found is None else found.entity

    def get(self, entity_id: int) -> Entity:
        return self._core.entities.get(entity_id)

    def list(self, kind: str = "person", *, query: str | None = None) -> list[Entity]:
        return self._core.entities.list(kind=kind, query=query)

    def add_identifier(self, entity_id: int, id_type: str, value: str) -> str:
        status, _ = self._core.entities.add_identifier(
            actor=self._actor, entity_id=entity_id, id_type=id_type, value=value, limits=self._limits
        )
        return status

    def merge(self, *, keep: int, merge: int) -> int:
        """Merge ``merge`` into ``keep``; the old id keeps working. Returns the change id."""
        return self._core.entities.merge(actor=self._actor, keep=keep, merge=merge)

    def delete(self, entity_id: int) -> int:
        """Delete an entity (revertible). Returns the change id."""
        return self._core.entities.delete(actor=self._actor, entity_id=entity_id)


class HostKnowledge:
    """``space.user`` / ``space.as_assistant``: the knowledge as one writer sees and edits it."""

    def __init__(self, core: KnowledgeCore, actor: Actor) -> None:
        self.actor = actor
        self.facts = HostFacts(core, actor)
        self.entities = HostEntities(core, actor)


class HostChanges:
    """``space.changes``: every change of the space, listed and reverted by the user."""

    def __init__(self, core: KnowledgeCore) -> None:
        self._core = core

    def list(
        self,
        *,
        since: str | int | float | datetime | None = None,
        status: str | None = None,
        run_id: str | None = None,
        actor: str | None = None,
        limit: int | None = None,
    ) -> list[Change]:
        return self._core.changes.list(since=since, status=status, run_id=run_id, actor=actor, limit=limit)

    def get(self, change_id: int) -> Change:
        return self._core.changes.get(change_id)

    def revert(self, change_id: int | None = None, *, run_id: str | None = None) -> RevertResult:
        """Undo one change, or every change of a run, as the user."""
        return self._core.changes.revert(actor=USER, change_id=change_id, run_id=run_id)
