"""The one write path of the knowledge store.

Every write of a knowledge table goes through ``knowledge/`` (other packages call its operations;
``tests/contracts/test_write_seam.py`` holds them to it), and every write in ``knowledge/`` goes
through :meth:`Store.write`, which in a single transaction that holds the write lock:

1. charges the writer's daily quota (when the writer has one),
2. lets the caller apply the write,
3. appends the change record(s) and the objects each change touched,

and commits all of it or none of it. Work that may lag behind (embeddings) is queued by the caller
inside the same transaction and processed after commit.

A write with a :class:`Permit` (every gem write) asks it once, inside that transaction, when the
operation knows what it is about to touch (:meth:`WriteTx.allow` with a :class:`Writing`): the
permit reads the writer's grants on the transaction's connection, refuses or answers with the daily
quota, and the quota is charged right after. No revoke can commit between the question and the
write (P-KVAL-09), and the grants are read once for both.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import sqlalchemy as sa

from notochord.clock import Clock, iso_utc, local_date
from notochord.db.engine import read_tx, write_tx
from notochord.db.schema import change_objects, changes
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.quotas import DailyLimits, charge

__all__ = ["ASSISTANT", "USER", "Actor", "Permit", "Store", "WriteTx", "Writing"]

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


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


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


@dataclass
class WriteTx:
    """An open write transaction: apply writes on ``conn``, then :meth:`record` each change."""

    conn: sa.Connection
    actor: Actor
    run_id: str | None
    now: str
    recorded: list[int] = field(default_factory=list)
    permit: Permit | None = None
    chars: int = 0
    day: str = ""
    allowed: bool = False

    def allow(self, writing: Writing) -> None:
        """Ask the permit about ``writing`` and charge the quota it answers with.

        Every operation opened with a permit calls this once, before it changes a row; without a
        permit it does nothing (the quota was charged when the transaction opened).
        """
        if self.permit is None or self.allowed:
            return
        limits = self.permit(self.conn, writing)
        if limits is not None and not self.actor.is_user:
            charge(self.conn, writer=str(self.actor), day=self.day, chars=self.chars, limits=limits)
        self.allowed = True

    def record(
        self,
        *,
        op: str,
        target_type: str,
        target_id: int | None,
        summary: str,
        touched: Iterable[tuple[str, int]] = (),
        before: Any = None,
        after: Any = None,
        proposed: Any = None,
        status: str = "applied",
    ) -> int:
        """Append one change record and the objects it touched; return the change id."""
        change_id = self.conn.execute(
            sa.insert(changes)
            .values(
                run_id=self.run_id,
                actor=str(self.actor),
                op=op,
                target_type=target_type,
                target_id=target_id,
                summary=summary[:1000],
                before_json=_dump(before),
                after_json=_dump(after),
                proposed_json=_dump(proposed),
                status=status,
                created_at=self.now,
            )
            .returning(changes.c.id)
        ).scalar_one()
        objects = {(target_type, target_id)} if target_id is not None else set()
        objects.update(touched)
        if objects:
            self.conn.execute(
                sa.insert(change_objects),
                [{"change_id": change_id, "object_type": t, "object_id": i} for t, i in sorted(objects)],
            )
        self.recorded.append(change_id)
        return int(change_id)


class Store:
    """A space's database and clock: the shared handle of every knowledge module."""

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def now(self) -> str:
        return iso_utc(self.clock.now())

    def today(self) -> str:
        return local_date(self.clock).isoformat()

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with read_tx(self.engine) as conn:
            yield conn

    @contextlib.contextmanager
    def write(
        self,
        *,
        actor: Actor,
        run_id: str | None,
        chars: int = 0,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> Iterator[WriteTx]:
        """Open the write path. ``limits`` is the writer's daily quota (``None`` for the user).

        With ``permit``, the quota is the permit's answer instead, and it is charged when the
        operation calls :meth:`WriteTx.allow`; an operation that writes without asking is a bug,
        and its transaction rolls back.
        """
        with write_tx(self.engine) as conn:
            now_moment = self.clock.now()
            day = now_moment.astimezone(self.clock.tz).date().isoformat()
            if permit is None and limits is not None and not actor.is_user:
                charge(conn, writer=str(actor), day=day, chars=chars, limits=limits)
            tx = WriteTx(
                conn=conn, actor=actor, run_id=run_id, now=iso_utc(now_moment), permit=permit, chars=chars, day=day
            )
            yield tx
            if permit is not None and tx.recorded and not tx.allowed:
                raise KnowledgeValidationError("a write recorded a change without asking its permission first")
