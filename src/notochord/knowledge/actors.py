"""Who performs a call, and what a write is about to touch, in the terms permission decisions use.

An :class:`Actor` is the user, the assistant or one gem; :class:`Writing` describes a write before
it changes a row, and a :class:`Permit` answers it (see :mod:`notochord.knowledge.writes`: asked
once, inside the write's transaction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.quotas import DailyLimits

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["ASSISTANT", "USER", "Actor", "Permit", "Writing"]

_GEM_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Actor:
    """Who performs a call: the user, the assistant, or one gem."""

    kind: str
    gem_id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in {"user", "assistant", "gem"}:
            raise KnowledgeValidationError(f"unknown actor kind {self.kind!r}")
        if (self.kind == "gem") != (self.gem_id is not None):
            raise KnowledgeValidationError("a gem actor needs a gem id, and only a gem actor has one")
        if self.gem_id is not None and not _GEM_ID.match(self.gem_id):
            raise KnowledgeValidationError(f"malformed gem id {self.gem_id!r}")

    @classmethod
    def gem(cls, gem_id: str) -> Actor:
        return cls("gem", gem_id)

    @classmethod
    def parse(cls, text: str) -> Actor:
        if text in {"user", "assistant"}:
            return cls(text)
        if text.startswith("gem:"):
            return cls.gem(text[4:])
        raise KnowledgeValidationError(f"unknown actor {text!r}: use user, assistant or gem:<id>")

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    def __str__(self) -> str:
        return f"gem:{self.gem_id}" if self.gem_id else self.kind


USER = Actor("user")
ASSISTANT = Actor("assistant")


@dataclass(frozen=True, slots=True)
class Writing:
    """What a write is about to touch, in the terms a permission decision needs; one shape for
    every kind of write (facts, entities, documents, collections).

    - ``fact``: ``subject_kind`` and ``predicate``; ``writer`` when an existing fact is retracted;
      ``sets_origin`` when the write sets its own origin or source;
    - ``entity``: ``kind``;
    - ``document``: ``collection_id`` (where it is or goes); ``writer`` when it already exists;
    - ``collection``: ``collection_id``, the parent it is created in (``None``: top level).
    """

    what: Literal["fact", "entity", "document", "collection"]
    subject_kind: str | None = None
    predicate: str | None = None
    kind: str | None = None
    collection_id: int | None = None
    writer: str | None = None
    sets_origin: bool = False


class Permit(Protocol):
    """A writer's permission, asked on the write transaction's connection.

    Raises the refusal, or answers with the writer's daily quota (``None``: no quota).
    """

    def __call__(self, conn: sa.Connection, writing: Writing) -> DailyLimits | None: ...
