"""What ``ctx.knowledge`` returns: frozen models whose JSON is exactly the documented shape.

Attributes are snake_case for Python gems; ``model_dump(by_alias=True)`` gives the seed's camelCase
keys (``validFrom``, ``displayName``, ``runId``, ``createdAt``, …), which is also what travels over the
JSON-RPC bridge to JavaScript gems. Every id in these models is a ref of the calling gem.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = [
    "AddIdentifierResult",
    "ChangeView",
    "EntityView",
    "FactView",
    "IdentifierView",
    "ProfileFact",
    "PutResult",
    "ResolvedEntity",
    "RetractResult",
    "RevertResult",
]


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    def __getitem__(self, key: str) -> Any:
        """Also readable like the seed's plain objects: ``result["status"]``, ``fact["validFrom"]``."""
        for name, field in type(self).model_fields.items():
            if key in (name, field.alias):
                return getattr(self, name)
        raise KeyError(key)


class ProfileFact(_Result):
    predicate: str
    value: Any


class FactView(_Result):
    ref: str
    predicate: str
    value: Any
    object: str | None
    valid_from: str


class PutResult(_Result):
    status: Literal["applied", "duplicate", "conflict"]
    ref: str
    predicate: str


class RetractResult(_Result):
    status: Literal["retracted", "already_retracted"]


class IdentifierView(_Result):
    type: str
    value: str


class ResolvedEntity(_Result):
    ref: str
    kind: str
    display_name: str
    created: bool


class EntityView(_Result):
    ref: str
    kind: str
    display_name: str
    identifiers: tuple[IdentifierView, ...]


class AddIdentifierResult(_Result):
    status: Literal["added", "exists"]


class ChangeView(_Result):
    ref: str
    run_id: str | None
    actor: str
    op: str
    summary: str
    status: Literal["applied", "conflict", "reverted"]
    proposed: Any
    created_at: str


class RevertResult(_Result):
    status: Literal["reverted", "already_reverted"]
    count: int
