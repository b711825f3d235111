"""Facts: bitemporal subject · predicate · value rows (K-FACT, OD-K14…K19).

Rules:

- A fact is current while ``valid_to`` is null. Replacing or retracting expires it (``valid_to``,
  ``expired_by``); rows are never deleted.
- ``put`` on a predicate: an identical current fact (canonical JSON value and the same object after
  merges) gives ``duplicate`` and writes nothing; on a ``one`` predicate a current value said by the
  user (``origin == 'user'``) blocks any other writer with ``conflict`` (recorded, with the rejected
  value as ``proposed``); otherwise ``one`` replaces and ``many`` accumulates. ``duplicate`` is checked
  before ``conflict`` (OD-K17).
- Order of work (OD-K07): validation and size limits (here, once: the gem API passes its arguments
  through), then in one write transaction resolving ids and the predicate (once), the caller's
  :class:`~notochord.knowledge.writes.Permit` (asked once, on that transaction's connection), the
  quota and the write.
- A gem may not claim the user's or the assistant's voice: ``origin`` ``user``/``assistant`` and
  ``source`` ``user``/``inferred`` are reserved.
- Inferred facts (``source == 'inferred'``) are never returned by lookups meant for gems.
- A conflict is settled by the user (:meth:`Facts.resolve_conflict`): taking the proposal writes it
  as the user's own value (``origin == 'user'``, so no gem overwrites it either), keeping the
  current value writes nothing; both close the conflict in one change, and reverting that change
  reopens it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import changes, facts
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError
from notochord.knowledge.arguments import flag, shown
from notochord.knowledge.batches import BatchOutcome, batch_run_id, check_items
from notochord.knowledge.entities import Entities
from notochord.knowledge.fact_batch import put_batch
from notochord.knowledge.fact_rows import (
    INSERT_FACT,
    MISSING,
    PutArguments,
    Subject,
    expire,
    prepare_put,
    record_user_conflict,
    short,
    slot_rows,
    written_by,
)
from notochord.knowledge.predicates import (
    MAX_PREDICATE,
    PredicateRange,
    is_segment,
    predicate_problem,
    ranges_clause,
)
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, compact_json
from notochord.knowledge.records import Fact, PinResult, PutResult, ResolveOutcome, RetractResult
from notochord.knowledge.vocabulary import Resolution, Vocabulary
from notochord.knowledge.writes import Actor, Permit, Store, WriteTx, Writing

__all__ = ["MISSING", "Facts", "Subject"]


PUT_ARGUMENTS = frozenset(
    {"subject", "predicate", "hint", "value", "object_id", "description", "origin", "source", "source_ref", "pin"}
)
"""What one item of :meth:`Facts.put_many` may hold."""


def check_query_prefix(prefix: str | None) -> str | None:
    """A query prefix is one or more whole predicate levels (OD-K11)."""
    if prefix is None or prefix == "":
        return None
    if isinstance(prefix, str) and len(prefix) > MAX_PREDICATE:
        # longer than any predicate, and longer than the store's pattern matching takes
        raise KnowledgeValidationError(f"prefix exceeds limit of {MAX_PREDICATE} characters (got {len(prefix)})")
    if not isinstance(prefix, str) or not all(is_segment(s) for s in prefix.split(".")):
        raise KnowledgeValidationError(
            f"prefix {shown(prefix)} is malformed: use whole dot-separated levels such as location.home"
        )
    return prefix


_LOOKUP_SHAPES = 512


def _lookup_query(
    prefix: str | None,
    rules: tuple[PredicateRange, ...] | None,
    pinned_only: bool,
    include_inferred: bool,
    single: bool,
) -> sa.Select[Any]:
    """The current facts of one subject (``:subject``) or a merge closure (``:subjects``)."""
    subject = (
        facts.c.subject_id == sa.bindparam("subject")
        if single
        else facts.c.subject_id.in_(sa.bindparam("subjects", expanding=True))
    )
    query = sa.select(facts).where(subject, facts.c.valid_to.is_(None))
    if prefix:
        query = query.where(PredicateRange(prefix, wildcard=True).clause(facts.c.predicate))
    if rules is not None:
        query = query.where(ranges_clause(rules, facts.c.predicate))
    if pinned_only:
        query = query.where(facts.c.pinned.is_(True))
    if not include_inferred:
        query = query.where(facts.c.source != "inferred")
    return query.order_by(facts.c.predicate, facts.c.id)


class Facts:
    def __init__(self, store: Store, vocabulary: Vocabulary, entities: Entities) -> None:
        self._store = store
        self._vocabulary = vocabulary
        self._entities = entities
        # lookup statements by shape (prefix, ranges, flags): built and compiled once each
        self._lookups: dict[tuple[Any, ...], Prepared] = {}

    # ------------------------------------------------------------ ids

    def subject_of(self, conn: sa.Connection, subject: Subject) -> tuple[int, str]:
        """Canonical entity id and kind of a subject (``"self"`` or an entity id)."""
        if subject == "self":
            return self._entities.self_id(conn), "self"
        if isinstance(subject, bool) or not isinstance(subject, int):
            raise KnowledgeValidationError("subject must be 'self' or an entity")
        canonical = self._entities.canonical(conn, subject)
        return canonical, self._entities.kind_of(conn, canonical)

    def resolve_put(self, conn: sa.Connection, given: PutArguments) -> tuple[int, str, int | None, Resolution]:
        """The canonical subject id and kind, the canonical object and the predicate of a put."""
        subject_id, subject_kind = self.subject_of(conn, given.subject)
        if given.by_ref and given.subject != "self" and subject_kind == "self":
            raise KnowledgeNotFoundError("entity")
        object_id = given.object_id
        if object_id is not None:
            object_id = self.object_of(conn, object_id, by_ref=given.by_ref)
        return subject_id, subject_kind, object_id, self.predicate_of(conn, given)

    def object_of(self, conn: sa.Connection, object_id: int | str, *, by_ref: bool) -> int:
        """The canonical entity a put's object points to: ``"self"`` is the user, whom a gem's ref
        never points to."""
        if object_id == "self":
            return self._entities.self_id(conn)
        if isinstance(object_id, str):
            raise KnowledgeValidationError("object must be an entity or 'self'")
        canonical = self._entities.canonical(conn, object_id)
        if by_ref and self._entities.kind_of(conn, canonical) == "self":
            raise KnowledgeNotFoundError("entity")
        return canonical

    def predicate_of(self, conn: sa.Connection, given: PutArguments) -> Resolution:
        """The predicate a put names (``predicate``) or hints at (``hint``)."""
        return self._resolve(conn, predicate=given.predicate, hint=given.hint)

    def known(self, conn: sa.Connection, entity_ids: Iterable[int]) -> dict[int, tuple[int, str, tuple[int, ...]]]:
        """What the transaction will ask about these entities, read in one go (a batch's): see
        :meth:`~notochord.knowledge.entities.Entities.known`."""
        return self._entities.known(conn, entity_ids)

    def declare(
        self, conn: sa.Connection, given: PutArguments, resolution: Resolution, *, actor: Actor, now: str
    ) -> Resolution:
        """``resolution``, with its predicate added to the vocabulary first when it is new."""
        if not resolution.is_new:
            return resolution
        added = self._vocabulary.add(
            conn,
            name=resolution.name,
            cardinality="many",
            description=given.description,
            declared_by="user" if actor.is_user and given.predicate else f"hint:{actor}",
            now=now,
        )
        return Resolution(added.name, "many", is_new=False)

    def same_object(self, conn: sa.Connection, stored: int | None, given: int | None) -> bool:
        return self._same_object(conn, stored, given)

    def members(self, conn: sa.Connection, entity_id: int) -> list[int]:
        return self._entities.members(conn, entity_id)

    def to_record(self, row: sa.Row[Any]) -> Fact:
        return Fact(
            id=row.id,
            subject=row.subject_id,
            predicate=row.predicate,
            value=json.loads(row.value_json),
            object=row.object_id,
            origin=row.origin,
            source=row.source,
            source_ref=row.source_ref,
            writer=row.writer,
            pinned=bool(row.pinned),
            valid_from=row.valid_from,
            valid_to=row.valid_to,
            recorded_at=row.recorded_at,
        )

    # ------------------------------------------------------------ reading

    def lookup(
        self,
        subject: Subject,
        prefix: str | None = None,
        *,
        rules: Sequence[PredicateRange] | Callable[[sa.Connection, str], Sequence[PredicateRange]] | None = None,
        pinned_only: bool = False,
        include_inferred: bool = False,
        by_ref: bool = False,
    ) -> list[Fact]:
        """Current facts of ``subject`` under ``prefix``, limited to ``rules`` when given.

        Permission ranges are part of the SQL, so nothing outside them is read at all. ``rules`` may
        be a function of the read's connection and the subject's kind (a gem's readable ranges): the
        subject is then resolved once, and the grants read in the same snapshot as the facts.
        ``by_ref``: the subject id came from a gem's ref, so the user reads as ``no entity``.
        """
        prefix = check_query_prefix(prefix)
        with self._store.read() as conn:
            subject_id, kind = self.subject_of(conn, subject)
            if by_ref and subject != "self" and kind == "self":
                raise KnowledgeNotFoundError("entity")
            if callable(rules):
                rules = rules(conn, kind)
                if not rules:
                    return []
            members = self._entities.members(conn, subject_id)
            key = (prefix, None if rules is None else tuple(rules), pinned_only, include_inferred, len(members) == 1)
            statement = self._lookups.get(key)
            if statement is None:
                if len(self._lookups) >= _LOOKUP_SHAPES:
                    self._lookups.clear()
                statement = self._lookups[key] = Prepared(_lookup_query(*key))
            if len(members) == 1:
                rows: Sequence[Any] = statement.rows(conn, {"subject": members[0]})
            else:
                rows = conn.execute(statement.statement, {"subjects": members}).all()
            return [self.to_record(r) for r in rows]

    def get(self, fact_id: int) -> Fact:
        with self._store.read() as conn:
            row = conn.execute(sa.select(facts).where(facts.c.id == fact_id)).first()
            if row is None:
                raise KnowledgeNotFoundError("fact")
            return self.to_record(row)

    # ------------------------------------------------------------ writing

    def put(
        self,
        *,
        actor: Actor,
        subject: Subject = "self",
        predicate: str | None = None,
        hint: str | None = None,
        value: Any = MISSING,
        object_id: int | str | None = None,
        description: str | None = None,
        origin: str | None = None,
        source: str | None = None,
        source_ref: str | None = None,
        pin: bool | None = None,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
        decode_ref: Callable[[object], int] | None = None,
    ) -> PutResult:
        """Write one fact. Exactly one of ``predicate`` (a full name) or ``hint`` is given.

        A full ``predicate`` unknown to the vocabulary is added with cardinality ``many``; a ``hint``
        is resolved as described in :mod:`notochord.knowledge.vocabulary`. ``decode_ref``: the subject
        (unless ``"self"``) and the object are a gem's refs, decoded to entity ids after validation;
        refs never reach the user (``"self"`` does), so one that turns out to be the user is ``not
        found: no entity``. ``permit`` is asked once,
        inside the write transaction, about the resolved subject kind and predicate.
        """
        # 1. validation and single-write limits
        given = prepare_put(
            actor,
            subject=subject,
            predicate=predicate,
            hint=hint,
            value=value,
            object_id=object_id,
            description=description,
            origin=origin,
            source=source,
            source_ref=source_ref,
            pin=pin,
            decode_ref=decode_ref,
        )
        value, value_json, object_id = given.value, given.value_json, given.object_id
        with self._store.write(actor=actor, run_id=run_id, chars=len(value_json), limits=limits, permit=permit) as tx:
            conn = tx.conn
            # 2. resolving ids, 3. resolving the predicate: once, on the connection that writes
            subject_id, subject_kind, object_id, resolution = self.resolve_put(conn, given)
            origin, source, source_ref, pinned = given.origin, given.source, given.source_ref, given.pinned
            sets_origin = given.sets_origin
            # 4. permission, 5. quota
            tx.allow(Writing("fact", subject_kind=subject_kind, predicate=resolution.name, sets_origin=sets_origin))
            # 6. apply and record
            resolution = self.declare(conn, given, resolution, actor=actor, now=tx.now)
            name = resolution.name
            members = self._entities.members(conn, subject_id)
            whole = resolution.cardinality == "one"
            current = slot_rows(conn, members, name, value_json=None if whole else value_json)
            # Only rows with the same value can be duplicates: on a `many` predicate holding thousands of
            # values the read is one indexed lookup of them, not a scan; a `one` slot is read whole.
            for row in current:
                if row.value_json == value_json and self._same_object(conn, row.object_id, object_id):
                    return PutResult(status="duplicate", id=row.id, predicate=name, change_id=None)
            if resolution.cardinality == "one" and current:
                said_by_user = [r for r in current if r.origin == "user"]
                if said_by_user and not actor.is_user:
                    blocker = said_by_user[0]
                    change_id = record_user_conflict(
                        tx, blocker, name=name, object_id=object_id, source_ref=source_ref, value=value
                    )
                    return PutResult(status="conflict", id=blocker.id, predicate=name, change_id=change_id)
            fact_id = INSERT_FACT.scalar(
                conn,
                {
                    "subject_id": subject_id,
                    "predicate": name,
                    "value_json": value_json,
                    "object_id": object_id,
                    "origin": origin,
                    "source": source,
                    "source_ref": source_ref,
                    "writer": str(actor),
                    "pinned": pinned,
                    "valid_from": tx.now,
                    "valid_to": None,
                    "recorded_at": tx.now,
                },
                # refused for U+0000 where they entered: prepare_put, the vocabulary; the JSON escapes it
                texts_checked=True,
            )
            replaced = current if resolution.cardinality == "one" else []
            change_id = tx.record(
                op="facts.put",
                target_type="fact",
                target_id=fact_id,
                touched=[("fact", r.id) for r in replaced],
                summary=f"{name} = {short(value)}" + (f" (replaced {len(replaced)})" if replaced else ""),
                before=[json.loads(r.value_json) for r in replaced] or None,
                after=value,
            )
            expire(conn, replaced, at=tx.now, by=change_id)
            return PutResult(status="applied", id=fact_id, predicate=name, change_id=change_id)

    def retract(
        self,
        *,
        actor: Actor,
        fact_id: int,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
        permit: Permit | None = None,
    ) -> RetractResult:
        """Expire a current fact. ``permit`` is asked inside the write transaction, about the fact's
        subject kind, predicate and writer (as for :meth:`put`)."""
        with self._store.write(actor=actor, run_id=run_id, limits=limits, permit=permit) as tx:
            row = tx.conn.execute(sa.select(facts).where(facts.c.id == fact_id)).first()
            if row is None:
                raise KnowledgeNotFoundError("fact")
            # the facts of a deleted entity wait, untouched, for the deletion to be undone; its kind
            # is the kept entity's, as lookups and puts see it
            subject_kind = self._entities.kind_of(tx.conn, self._entities.canonical(tx.conn, row.subject_id))
            tx.allow(Writing("fact", subject_kind=subject_kind, predicate=row.predicate, writer=row.writer))
            if row.valid_to is not None:
                return RetractResult(status="already_retracted", change_id=None)
            change_id = tx.record(
                op="facts.retract",
                target_type="fact",
                target_id=fact_id,
                summary=f"retracted {row.predicate} = {short(json.loads(row.value_json))}",
                before=json.loads(row.value_json),
            )
            tx.conn.execute(sa.update(facts).where(facts.c.id == fact_id).values(valid_to=tx.now, expired_by=change_id))
            return RetractResult(status="retracted", change_id=change_id)

    def pin(self, *, actor: Actor, fact_id: int, pinned: bool, run_id: str | None = None) -> PinResult:
        """Pin or unpin a fact in the standing profile (the user's choice, OD-K15)."""
        if actor.kind == "gem":
            raise KnowledgeValidationError("only the user pins facts")
        flag("pinned", pinned)
        with self._store.write(actor=actor, run_id=run_id) as tx:
            row = tx.conn.execute(sa.select(facts).where(facts.c.id == fact_id)).first()
            if row is None:
                raise KnowledgeNotFoundError("fact")
            if bool(row.pinned) == pinned:
                return PinResult(pinned=pinned, change_id=None)
            tx.conn.execute(sa.update(facts).where(facts.c.id == fact_id).values(pinned=pinned))
            change_id = tx.record(
                op="facts.pin",
                target_type="fact",
                target_id=fact_id,
                summary=f"{'pinned' if pinned else 'unpinned'} {row.predicate}",
                before=bool(row.pinned),
                after=pinned,
            )
            return PinResult(pinned=pinned, change_id=change_id)

    def resolve_conflict(self, *, actor: Actor, change_id: int, take: str) -> ResolveOutcome:
        """Settle an open conflict: ``take="theirs"`` writes the proposed value as the user's,
        replacing the current one; ``take="mine"`` keeps the current value. Either way the
        conflict closes, and the resolution is a change of its own whose revert reopens it."""
        if take not in ("theirs", "mine"):
            raise KnowledgeValidationError(
                f"take must be 'theirs' or 'mine', not {shown(take)}",
                reason="resolve_choice",
                values={"take": shown(take)},
            )
        if not actor.is_user:
            raise KnowledgeValidationError("only the user resolves conflicts")
        with self._store.write(actor=actor, run_id=None) as tx:
            conn = tx.conn
            conflict = conn.execute(sa.select(changes).where(changes.c.id == change_id)).first()
            if conflict is None:
                raise KnowledgeNotFoundError("change")
            if conflict.status != "conflict":
                raise KnowledgeValidationError(
                    f"change {change_id} is not an open conflict (its status is {conflict.status}); "
                    "only changes listed with status conflict can be resolved",
                    reason="not_open_conflict",
                    values={"change": str(change_id), "status": str(conflict.status)},
                )
            kept = conn.execute(sa.select(facts).where(facts.c.id == conflict.target_id)).one()
            proposed = json.loads(conflict.proposed_json) if conflict.proposed_json is not None else None
            extra = json.loads(conflict.after_json) if conflict.after_json is not None else {}
            settled = {"take": take, "conflict": change_id}
            if take == "mine":
                resolution = tx.record(
                    op="changes.resolve",
                    target_type="change",
                    target_id=change_id,
                    summary=f"kept {kept.predicate} = {short(json.loads(kept.value_json))}; "
                    f"declined {short(proposed)} from {conflict.actor}",
                    after=settled,
                )
                fact_id = None
            else:
                subject_id = self._entities.canonical(conn, kept.subject_id)
                object_id = extra.get("object")
                if object_id is not None:
                    object_id = self._entities.canonical(conn, object_id)
                replaced = conn.execute(
                    sa.select(facts).where(
                        facts.c.subject_id.in_(self._entities.members(conn, subject_id)),
                        facts.c.predicate == kept.predicate,
                        facts.c.valid_to.is_(None),
                    )
                ).all()
                fact_id = conn.execute(
                    sa.insert(facts)
                    .values(
                        subject_id=subject_id,
                        predicate=kept.predicate,
                        # canonical, as every put stores it: restating the value must read as a duplicate
                        value_json=compact_json(proposed),
                        object_id=object_id,
                        # the user chose it: from now on it is the user's value, as if typed in
                        origin="user",
                        source="user",
                        source_ref=extra.get("sourceRef"),
                        writer=str(actor),
                        pinned=subject_id == self._entities.self_id(conn),
                        valid_from=tx.now,
                        valid_to=None,
                        recorded_at=tx.now,
                    )
                    .returning(facts.c.id)
                ).scalar_one()
                resolution = tx.record(
                    op="changes.resolve",
                    target_type="fact",
                    target_id=fact_id,
                    touched=[("fact", r.id) for r in replaced],
                    summary=f"took {kept.predicate} = {short(proposed)} proposed by {conflict.actor}",
                    before=[json.loads(r.value_json) for r in replaced] or None,
                    after=settled,
                )
                expire(conn, replaced, at=tx.now, by=resolution)
            conn.execute(
                sa.update(changes).where(changes.c.id == change_id).values(status="reverted", reverted_by=resolution)
            )
            return ResolveOutcome(
                status="took_theirs" if take == "theirs" else "kept_mine", change_id=resolution, fact_id=fact_id
            )

    # ------------------------------------------------------------ batches

    def put_many(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        actor: Actor,
        run_id: str | None = None,
        limits: DailyLimits | None = None,
    ) -> BatchOutcome[PutResult]:
        """Write many facts in one transaction (K-FACT, K-CHG, K-QUOTA).

        Each item holds the arguments of :meth:`put` (``subject``, ``predicate`` or ``hint``,
        ``value``, ``object_id``, ``description``, ``origin``, ``source``, ``source_ref``, ``pin``)
        and is written exactly as :meth:`put` writes it, in order, each its own counted write and its
        own change record; the rules of :mod:`notochord.knowledge.batches` apply.
        """
        checked = check_items(items, PUT_ARGUMENTS, what="put_many")
        batch_run = batch_run_id(run_id)
        return BatchOutcome(
            batch_run, put_batch(self, self._store, checked, actor=actor, run_id=batch_run, limits=limits)
        )

    # ------------------------------------------------------------ helpers

    def expire_by_writer(self, tx: WriteTx, *, writer: str, reason: str) -> int:
        """Expire, inside ``tx``, every live fact ``writer`` wrote; one revertible change each.

        Uninstall's removal of a gem's facts (K-UNINST, OD-K48); each summary is
        ``"<reason>: <predicate>"``. Returns how many facts expired.
        """
        rows: Sequence[sa.Row[Any]] = tx.conn.execute(
            sa.select(facts).where(written_by(writer), facts.c.valid_to.is_(None))
        ).all()
        for row in rows:
            change_id = tx.record(
                op="uninstall.delete",
                target_type="fact",
                target_id=row.id,
                summary=f"{reason}: {row.predicate}",
                before=json.loads(row.value_json),
            )
            tx.conn.execute(sa.update(facts).where(facts.c.id == row.id).values(valid_to=tx.now, expired_by=change_id))
        return len(rows)

    def _resolve(self, conn: sa.Connection, *, predicate: str | None, hint: str | None) -> Resolution:
        if hint is not None:
            return self._vocabulary.resolve(conn, hint)
        assert predicate is not None
        known = self._vocabulary.get(conn, predicate) if isinstance(predicate, str) else None
        if known is not None:
            return Resolution(known.name, known.cardinality, is_new=False)
        problem = predicate_problem(predicate)
        if problem:
            raise KnowledgeValidationError(problem)
        return Resolution(predicate, "many", is_new=True)

    def _same_object(self, conn: sa.Connection, stored: int | None, given: int | None) -> bool:
        if stored is None or given is None:
            return stored is given
        try:
            return self._entities.canonical(conn, stored) == given
        except KnowledgeNotFoundError:
            return False
