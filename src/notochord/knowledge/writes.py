"""The one write path of the knowledge store.

Every write of a knowledge table goes through ``knowledge/`` (other packages call its operations;
``tests/contracts/test_write_seam.py`` holds them to it), and every write in ``knowledge/`` goes
through :meth:`Store.write`, which in a single transaction that holds the write lock:

1. charges the writer's daily quota (when the writer has one),
2. lets the caller apply the write,
3. appends the change record(s) and the objects each change touched,

and commits all of it or none of it. Work that may lag behind (embeddings) is queued by the caller
inside the same transaction and processed after commit.

:meth:`Store.batch` runs many writes in one transaction: inside it, every
``read`` and ``write`` of that store on the same thread joins the batch's transaction, and each write
still checks its permission, charges its quota and appends its own change record, so each stays
undoable alone. The batch commits all of them or none of them.

A write with a :class:`Permit` (every gem write) asks it once, inside that transaction, when the
operation knows what it is about to touch (:meth:`WriteTx.allow` with a :class:`Writing`): the
permit reads the writer's grants on the transaction's connection, refuses or answers with the daily
quota, and the quota is charged right after. No revoke can commit between the question and the
write (P-KVAL-09), and the grants are read once for both.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from notochord.clock import Clock, iso_utc, local_date
from notochord.db.engine import read_tx
from notochord.db.schema import change_objects, changes, space_meta
from notochord.db.writer import lasting_memo, write_session
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.actors import ASSISTANT, USER, Actor, Permit, Writing
from notochord.knowledge.many_rows import insert_rows
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import (
    DailyLimits,
    charge,
    check_run_id,
    refuse_nul_in,
    refuse_nul_statement,
    storable,
)

__all__ = [
    "ASSISTANT",
    "ENTITY_VERSION_KEY",
    "GRANTS_VERSION_KEY",
    "USER",
    "VOCABULARY_VERSION_KEY",
    "Actor",
    "DataVersions",
    "Permit",
    "Store",
    "WriteTx",
    "Writing",
    "change_json",
    "data_versions",
    "entities_changing",
    "forget_lookups",
    "lookup_memo",
    "shares_entity_lookups",
]

ENTITY_VERSION_KEY = "entity_data_version"
"""``space_meta`` key of a token that changes with every recorded write of an entity or identifier."""
VOCABULARY_VERSION_KEY = "vocabulary_version"
"""``space_meta`` key of a token that changes with every change of the predicate vocabulary."""
GRANTS_VERSION_KEY = "gem_grants_version"
"""``space_meta`` key of a token that changes with every write of a gem's switches (``notochord.gems.grants``)."""
_ENTITY_OBJECTS = frozenset({"entity", "identifier"})

# Built once: compiling a statement costs more than running it on SQLite.
_INSERT_CHANGE = Prepared(sa.insert(changes).returning(changes.c.id))
_INSERT_CHANGE_WITH_ID = Prepared(sa.insert(changes))
_INSERT_OBJECTS = Prepared(sa.insert(change_objects))
_CHANGE_COLUMNS = (
    "id",
    "run_id",
    "actor",
    "op",
    "target_type",
    "target_id",
    "summary",
    "before_json",
    "after_json",
    "proposed_json",
    "status",
    "created_at",
)
_OBJECT_COLUMNS = ("change_id", "object_type", "object_id")
# what the changes of one batch share, bound once a statement (see many_rows.insert_rows)
_CHANGE_SHARED = frozenset({"run_id", "actor", "op", "target_type", "proposed_json", "status", "created_at"})
_OBJECT_SHARED = frozenset({"object_type"})
_BUMP_ENTITY_VERSION = Prepared(
    sa.update(space_meta).where(space_meta.c.key == ENTITY_VERSION_KEY).values(value=sa.bindparam("token"))
)
_INSERT_ENTITY_VERSION = Prepared(sa.insert(space_meta).values(key=ENTITY_VERSION_KEY, value=sa.bindparam("token")))
_READ_VERSIONS = Prepared(
    sa.select(space_meta.c.key, space_meta.c.value).where(
        sa.or_(*(space_meta.c.key == k for k in (ENTITY_VERSION_KEY, VOCABULARY_VERSION_KEY, GRANTS_VERSION_KEY)))
    )
)
# memo keys
_VERSIONS = "data_versions"
_ENTITIES_CHANGING = "entities_changing"


@dataclass
class _Batch:
    store: Store
    conn: sa.Connection
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict)


# The open batch of this thread (or task).
_BATCH: contextvars.ContextVar[_Batch | None] = contextvars.ContextVar("notochord_write_batch", default=None)
# The open read transaction of this thread (or task) and what it looked up.
_READ: contextvars.ContextVar[tuple[sa.Connection, dict[Any, Any]] | None] = contextvars.ContextVar(
    "notochord_read_memo", default=None
)


@dataclass(frozen=True, slots=True)
class DataVersions:
    """The tokens a transaction sees for the entity data and the vocabulary ("" before any write)."""

    entities: str
    vocabulary: str
    grants: str | None = None
    """The gems' switches' token, ``None`` in a space without one."""


def lookup_memo(conn: sa.Connection) -> dict[Any, Any] | None:
    """What the open transaction on ``conn`` has looked up so far (``None`` outside :class:`Store`'s
    transactions). Only that transaction's own writes can change it: a write holds the write lock,
    a read sees one snapshot; writes that change what was looked up call :func:`forget_lookups`."""
    batch = _BATCH.get()
    if batch is not None and batch.conn is conn:
        return batch.memo
    read = _READ.get()
    if read is not None and read[0] is conn:
        return read[1]
    return None


def forget_lookups(conn: sa.Connection) -> None:
    """Drop what the transaction on ``conn`` looked up (it changed entities or the vocabulary)."""
    memo = lookup_memo(conn)
    if memo is not None:
        changing = memo.get(_ENTITIES_CHANGING, False)
        memo.clear()
        if changing:
            memo[_ENTITIES_CHANGING] = True


def entities_changing(conn: sa.Connection) -> bool:
    """Mark the write on ``conn`` as one that changes merges or deletions of entities.

    Called before such an update, so that look-ups made from then on in this transaction are not
    shared with other transactions under the entity-data version they started from. Returns
    whether the transaction had already been marked."""
    memo = lookup_memo(conn)
    if memo is None:
        return False
    was = bool(memo.get(_ENTITIES_CHANGING, False))
    memo[_ENTITIES_CHANGING] = True
    forget_lookups(conn)
    return was


def shares_entity_lookups(conn: sa.Connection) -> bool:
    """Whether look-ups on ``conn`` may be shared with other transactions of the same version."""
    memo = lookup_memo(conn)
    return memo is not None and not memo.get(_ENTITIES_CHANGING, False)


def data_versions(conn: sa.Connection) -> DataVersions:
    """The entity-data and vocabulary versions ``conn`` sees, read once per transaction (one
    statement for both): caches across transactions are keyed by them."""
    memo = lookup_memo(conn)
    if memo is not None:
        found = memo.get(_VERSIONS)
        if found is not None:
            return found  # type: ignore[no-any-return]
    # on SQLite's writer connection they are known from the last write while nothing changed them
    lasting = lasting_memo(conn)
    versions = None if lasting is None else lasting.get(_VERSIONS)
    if versions is None:
        read = {row.key: row.value for row in _READ_VERSIONS.rows(conn, {})}
        versions = DataVersions(
            str(read.get(ENTITY_VERSION_KEY) or ""),
            str(read.get(VOCABULARY_VERSION_KEY) or ""),
            read.get(GRANTS_VERSION_KEY),
        )
        if lasting is not None:
            lasting[_VERSIONS] = versions
    if memo is not None:
        memo[_VERSIONS] = versions
    return versions


# One encoder for every change's JSON: ``json.dumps`` with options builds a new one per call.
_CHANGE_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def _one_line(summary: str) -> str:
    """``summary`` as the one line a change's summary is: each line break in the names and values
    it quotes (``\\n``, ``\\r\\n``, a vertical tab, U+2028, …) written as a space."""
    if summary.isprintable():  # no break of any kind: the usual summary, one C call
        return summary
    return " ".join(summary.splitlines())


def _dump(value: Any) -> str | None:
    return None if value is None else _CHANGE_ENCODER.encode(value)


def change_json(value: Any, compact: str | None = None) -> str | None:
    """How a change records ``value`` (``before``, ``after``, ``proposed``). ``compact``: the value's
    canonical compact JSON (:func:`~notochord.knowledge.quotas.compact_json`) when known; for a
    string, number, boolean or null it is the same text, so it is not encoded again."""
    if value is None:
        return None
    if compact is not None and compact[0] not in "[{":
        return compact
    return _CHANGE_ENCODER.encode(value)


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
    defer_objects: bool = False
    """Collect the touched-object rows of :meth:`record` and write them in one statement when the
    transaction's operation ends (a batch of many changes)."""
    _deferred: list[tuple[int, str, int]] = field(default_factory=list)
    _next_change: int | None = None
    _change_step: int = 1
    _copy: bool = False
    _deferred_changes: list[tuple[Any, ...]] = field(default_factory=list)

    def defer_changes(self, first_id: int) -> None:
        """From now on give each change the next id from ``first_id`` and write the change rows in
        one statement when the operation ends (with :attr:`defer_objects`). ``first_id`` must be
        the id the database would give the next change (the caller read it under the write lock)."""
        self._next_change, self._change_step = first_id, 1
        self.defer_objects = True

    def defer_changes_provisionally(self) -> None:
        """:meth:`defer_changes` where the next ids cannot be known up front (PostgreSQL's sequences):
        the changes are numbered -1, -2, … until :meth:`renumber` gives them their ids, and their
        rows then go with ``COPY``."""
        self._next_change, self._change_step = -1, -1
        self.defer_objects = True
        self._copy = True

    @property
    def provisional_changes(self) -> int:
        """How many changes hold provisional ids (see :meth:`defer_changes_provisionally`)."""
        return sum(1 for row in self._deferred_changes if row[0] < 0)

    def renumber(self, change: Callable[[int], int], objects: Mapping[str, Callable[[int], int]]) -> None:
        """Give the deferred rows their ids: ``change`` maps each provisional change id, ``objects``
        each provisional id of an object of that type (the facts of a batch) that a change targets
        or touched. Ids that are not provisional (not negative) stay as they are."""

        def of(kind: str, given: Any) -> Any:
            found = objects.get(kind)
            return found(given) if found is not None and given is not None and given < 0 else given

        self._deferred_changes = [
            (change(row[0]) if row[0] < 0 else row[0], *row[1:5], of(row[4], row[5]), *row[6:])
            for row in self._deferred_changes
        ]
        self._deferred = [
            (change(c) if c < 0 else c, kind, of(kind, object_id)) for c, kind, object_id in self._deferred
        ]
        self.recorded = [change(c) if c < 0 else c for c in self.recorded]

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
        """Append one change record and the objects it touched; return the change id.

        A change touching an entity or an identifier also renews the entity-data version, which
        tells cached derivations of the entities (the mention automaton) that they are stale.
        """
        return self.record_encoded(
            op=op,
            target_type=target_type,
            target_id=target_id,
            summary=summary,
            touched=touched,
            before_json=_dump(before),
            after_json=_dump(after),
            proposed_json=_dump(proposed),
            status=status,
        )

    def record_encoded(
        self,
        *,
        op: str,
        target_type: str,
        target_id: int | None,
        summary: str,
        touched: Iterable[tuple[str, int]] = (),
        before_json: str | None = None,
        after_json: str | None = None,
        proposed_json: str | None = None,
        status: str = "applied",
    ) -> int:
        """:meth:`record`, with ``before``, ``after`` and ``proposed`` already encoded as :meth:`record`
        encodes them (:func:`change_json`): a batch encodes a value once for its fact and its change."""
        summary = _one_line(summary)[:1000]
        # the change's only free texts: the JSON columns are checked as they are encoded
        if not (storable(summary) and storable(self.run_id)):
            refuse_nul_in("changes", {"summary": summary, "run_id": self.run_id})
        touched = tuple(touched)
        if self._next_change is None:
            change_id = _INSERT_CHANGE.scalar(
                self.conn,
                {
                    "run_id": self.run_id,
                    "actor": str(self.actor),
                    "op": op,
                    "target_type": target_type,
                    "target_id": target_id,
                    "summary": summary,
                    "before_json": before_json,
                    "after_json": after_json,
                    "proposed_json": proposed_json,
                    "status": status,
                    "created_at": self.now,
                },
                texts_checked=True,  # the summary and the run id just above; the rest is code's or JSON
            )
        else:
            change_id = self._defer_change(
                self.run_id,
                str(self.actor),
                (op, target_type, target_id, summary, before_json, after_json, proposed_json, status),
            )
        rows = _object_rows(change_id, target_type, target_id, touched)
        if rows:
            if self.defer_objects:
                self._deferred.extend(rows)
            else:
                _INSERT_OBJECTS.run_tuples(self.conn, _OBJECT_COLUMNS, rows, texts_checked=True)
            if target_type in _ENTITY_OBJECTS or (touched and any(t in _ENTITY_OBJECTS for t, _ in touched)):
                _bump_entity_version(self.conn)
                forget_lookups(self.conn)
        self.recorded.append(change_id)
        return int(change_id)

    def _defer_change(self, run_id: str | None, actor: str, fields: tuple[Any, ...]) -> int:
        """Number a change (see :meth:`defer_changes`) and hold its row until :meth:`flush`;
        ``fields`` are its op, target type and id, summary, before, after, proposed and status."""
        change_id = self._next_change
        assert change_id is not None
        self._next_change = change_id + self._change_step
        self._deferred_changes.append((change_id, run_id, actor, *fields, self.now))
        return change_id

    def change_recorder(
        self, *, op: str, target_type: str
    ) -> Callable[[int, str, str | None, str | None, Sequence[tuple[str, int]]], int]:
        """:meth:`record_encoded` of many applied changes of one ``op`` on ``target_type`` (a batch's),
        with what they share (the actor, the run id and its check) worked out once.

        The returned function takes a change's target id, summary, ``before`` and ``after`` JSON and
        touched objects, and records it exactly as :meth:`record_encoded` would; it may be called
        interleaved with :meth:`record`, and until :meth:`flush`.
        """
        # a change of an entity renews the transaction's look-ups; only a fact-like change is deferred here
        deferred = self._next_change is not None and self.defer_objects and target_type not in _ENTITY_OBJECTS
        run_id, actor = self.run_id, str(self.actor)
        run_id_storable = storable(run_id)

        def recorded(
            target_id: int,
            summary: str,
            before_json: str | None,
            after_json: str | None,
            touched: Sequence[tuple[str, int]],
        ) -> int:
            if not deferred:
                return self.record_encoded(
                    op=op,
                    target_type=target_type,
                    target_id=target_id,
                    summary=summary,
                    touched=touched,
                    before_json=before_json,
                    after_json=after_json,
                )
            summary = _one_line(summary)[:1000]
            if not (run_id_storable and storable(summary)):
                refuse_nul_in("changes", {"summary": summary, "run_id": run_id})
            change_id = self._defer_change(
                run_id, actor, (op, target_type, target_id, summary, before_json, after_json, None, "applied")
            )
            self._deferred.extend(_object_rows(change_id, target_type, target_id, touched))
            if touched and any(t in _ENTITY_OBJECTS for t, _ in touched):
                _bump_entity_version(self.conn)
                forget_lookups(self.conn)
            self.recorded.append(change_id)
            return change_id

        return recorded

    def flush(self) -> None:
        """Write the change rows and object rows collected while deferred (changes first: the
        objects refer to them)."""
        changes_rows, self._deferred_changes = self._deferred_changes, []
        insert_rows(
            self.conn,
            _INSERT_CHANGE_WITH_ID,
            changes,
            _CHANGE_COLUMNS,
            changes_rows,
            copy=self._copy,
            shared=_CHANGE_SHARED,
        )
        rows, self._deferred = self._deferred, []
        insert_rows(
            self.conn, _INSERT_OBJECTS, change_objects, _OBJECT_COLUMNS, rows, copy=self._copy, shared=_OBJECT_SHARED
        )


def _object_rows(
    change_id: int, target_type: str, target_id: int | None, touched: Sequence[tuple[str, int]]
) -> list[tuple[int, str, int]]:
    """The touched-object rows of a change: what it touched and its own target, each once, in order."""
    if touched:
        objects = set(touched)
        if target_id is not None:
            objects.add((target_type, target_id))
        return [(change_id, t, i) for t, i in sorted(objects)]
    return [] if target_id is None else [(change_id, target_type, target_id)]


def _bump_entity_version(conn: sa.Connection) -> None:
    # A random token, not a counter: a version seen inside a transaction that rolled back is never
    # reused by another one, so a cache keyed by it is never stale.
    token = {"token": uuid.uuid4().hex}
    if not _BUMP_ENTITY_VERSION.run(conn, token):
        _INSERT_ENTITY_VERSION.run(conn, token)


class Store:
    """A space's database and clock: the shared handle of every knowledge module.

    No text holding U+0000 reaches the database through its engine (PostgreSQL cannot store it,
    so neither backend does): every write statement is checked before it is sent, and the write
    is refused with the field named (:func:`~notochord.knowledge.quotas.refuse_nul_in`).
    """

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        if not sa.event.contains(engine, "before_execute", refuse_nul_statement):
            sa.event.listen(engine, "before_execute", refuse_nul_statement)

    def now(self) -> str:
        return iso_utc(self.clock.now())

    def today(self) -> str:
        return local_date(self.clock).isoformat()

    def _batch(self) -> _Batch | None:
        current = _BATCH.get()
        return current if current is not None and current.store is self else None

    def _batch_conn(self) -> sa.Connection | None:
        current = self._batch()
        return None if current is None else current.conn

    def memo(self, conn: sa.Connection) -> dict[Any, Any] | None:
        """Look-ups remembered for the rest of the open transaction on ``conn`` (see :func:`lookup_memo`)."""
        return lookup_memo(conn)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the open batch has committed (at once when there is none)."""
        current = self._batch()
        if current is None:
            callback()
        elif callback not in current.after_commit:
            current.after_commit.append(callback)

    @contextlib.contextmanager
    def batch(self) -> Iterator[sa.Connection]:
        """One write transaction for every read and write of this store inside the block.

        Each :meth:`write` inside still runs its check, charges its quota and records its own
        change; an error anywhere rolls all of them back (K-CHG, K-QUOTA). A
        batch inside a batch joins the outer one. Other threads are not affected. What must wait
        for the commit (waking the embedding worker) is queued with :meth:`after_commit`.
        """
        joined = self._batch_conn()
        if joined is not None:
            yield joined
            return
        with write_session(self.engine) as conn:
            opened = _Batch(self, conn)
            token = _BATCH.set(opened)
            try:
                yield conn
            finally:
                _BATCH.reset(token)
        for callback in opened.after_commit:
            callback()

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        joined = self._batch_conn()
        if joined is not None:
            yield joined
            return
        with read_tx(self.engine) as conn:
            token = _READ.set((conn, {}))
            try:
                yield conn
            finally:
                _READ.reset(token)

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
        and its transaction rolls back. Inside :meth:`batch` the write joins the batch's transaction.
        """
        if run_id is not None:
            check_run_id(run_id)
        # Outside a batch the write is a batch of one: its look-ups are remembered the same way.
        with self.batch() as conn:
            now_moment = self.clock.now()
            day = now_moment.astimezone(self.clock.tz).date().isoformat()
            if permit is None and limits is not None and not actor.is_user:
                charge(conn, writer=str(actor), day=day, chars=chars, limits=limits)
            tx = WriteTx(
                conn=conn, actor=actor, run_id=run_id, now=iso_utc(now_moment), permit=permit, chars=chars, day=day
            )
            yield tx
            tx.flush()
            if permit is not None and tx.recorded and not tx.allowed:
                raise KnowledgeValidationError("a write recorded a change without asking its permission first")
