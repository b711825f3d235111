"""Host-side records: what the user-side API returns (internal ids, full provenance).

Gems never see these; the gem facade maps them to ref-bearing models of the documented JSON shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from notochord.knowledge.predicates import Cardinality

__all__ = [
    "Change",
    "Entity",
    "Fact",
    "Identifier",
    "PinResult",
    "Predicate",
    "PutResult",
    "ResolveOutcome",
    "ResolveResult",
    "RetractResult",
    "RevertResult",
]

PutStatus = Literal["applied", "duplicate", "conflict"]
ChangeStatus = Literal["applied", "conflict", "reverted"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class Predicate(_Record):
    name: str
    cardinality: Cardinality
    description: str | None
    display_en: str | None
    display_zh: str | None
    declared_by: str
    aliases: tuple[str, ...] = ()


class Fact(_Record):
    id: int
    subject: int
    predicate: str
    value: Any
    object: int | None
    origin: str
    source: str
    source_ref: str | None
    writer: str
    pinned: bool
    valid_from: str
    valid_to: str | None
    recorded_at: str


class PutResult(_Record):
    status: PutStatus
    id: int
    """The new fact (applied), the identical current fact (duplicate) or the user's fact that
    blocked the write (conflict)."""
    predicate: str
    change_id: int | None


class RetractResult(_Record):
    status: Literal["retracted", "already_retracted"]
    change_id: int | None


class PinResult(_Record):
    pinned: bool
    change_id: int | None


class Identifier(_Record):
    type: str
    value: str


class Entity(_Record):
    id: int
    kind: str
    display_name: str
    identifiers: tuple[Identifier, ...]
    created_by: str
    created_at: str


class ResolveResult(_Record):
    entity: Entity
    created: bool


class Change(_Record):
    id: int
    run_id: str | None
    actor: str
    op: str
    target_type: str
    target_id: int | None
    summary: str
    status: ChangeStatus
    proposed: Any
    before: Any
    after: Any
    created_at: str


class RevertResult(_Record):
    """What an undo did: ``reverted`` with the changes it undid (0 for a run that recorded none), or
    ``already_reverted`` when every change it names was undone before."""

    status: Literal["reverted", "already_reverted"]
    count: int


class ResolveOutcome(_Record):
    """A settled conflict: the resolution's change, and the fact written when the proposal was taken."""

    status: Literal["took_theirs", "kept_mine"]
    change_id: int
    fact_id: int | None
