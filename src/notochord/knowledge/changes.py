"""The change log: listing, and undo by change or by run (K-CHG, OD-K43, OD-K44).

Rules:

- Every write appends its change in the write's own transaction (:mod:`notochord.knowledge.writes`).
- ``list`` is newest first; ``since`` is inclusive (a date means 00:00 local on that date).
- The visible state is always what the applied (not reverted) changes produce when replayed in
  order. Undo keeps it that way by undoing only what can be undone exactly, like an editor's
  "undo" of one edit among many:

  - Reverting restores the state right before the change.
  - It is refused with ``superseded`` when a later, still-applied change altered one of the objects
    this change altered, whoever made it: the later change replaced or edited this change's effect,
    so there is nothing exact left to undo. Revert the later change first; ``revert(run_id=…)``
    does this by itself, newest first. So after ``city = Delft`` (1) and ``city = Leiden`` (2),
    reverting 1 is refused; reverting 2 brings Delft back, and reverting 1 then leaves no city.
  - A value never comes back whose own write was undone (an older vault may hold such logs).
  - Bringing a value back into a ``cardinality: one`` slot is refused when a later write went into
    that slot: that write replaced the slot's content at the time.
  - Undoing an entity's creation or a merge is refused once later writes made facts about the
    entity or pointing at it (they would end up on the wrong entity); undoing an entity's deletion
    brings back the relations that expired with it. A relation never comes back pointing at an
    entity deleted since (undo the deletion first).
  - A change that only wrote *into* a place (a document created in a collection, an identifier
    added to an entity) does not supersede other changes of that place.
  - Conflicts are only dismissed (marked ``reverted``); ``resolve`` settles one instead, by taking
    the proposed value or keeping the current one, as a change of its own that can be reverted
    (which reopens the conflict).
- ``revert(run_id=…)`` undoes the run's applied and conflict changes visible to the caller, newest
  first, in one transaction: all of them or none. A run whose changes were all undone before is
  ``already_reverted``. A run id that no change visible to the caller carries is not found
  (``no run``), unless the run exists and recorded no change: a run of the space's run record (of
  the calling gem, when a gem asks) or the caller's own current run. Such a run is reverted with
  count 0 and nothing is written: its undo has nothing to do, and ``already_reverted`` would claim
  that someone undid it before. So a mistyped run id never reads as an undo done earlier, and
  another writer's run reads to a gem exactly like one that never existed.
- A revert is itself a change (op ``changes.revert``) and cannot be reverted; write again instead.

Each op that can be reverted registers a handler in :data:`REVERTERS`, under ``"<op>:<target type>"``
when the op spans several kinds of object (``uninstall.delete:fact``) or else under ``"<op>"``;
modules that add ops (documents, collections) register theirs on import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import change_objects, changes, entities, facts, identifiers, not_by_user, predicates, runs
from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError, RevertError
from notochord.knowledge.arguments import shown, whole_number
from notochord.knowledge.quotas import DailyLimits, charge, refuse_unstorable_filter
from notochord.knowledge.records import Change, RevertResult
from notochord.knowledge.timeranges import parse_moment
from notochord.knowledge.writes import Actor, Store, WriteTx, entities_changing

__all__ = ["REVERTERS", "ChangeLog", "RevertPermit", "Reverter", "parse_since"]

Reverter = Callable[[WriteTx, sa.Row[Any]], None]
"""Undo one change row inside an open write transaction (the change row is not yet marked)."""

REVERTERS: dict[str, Reverter] = {}


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def to_record(row: sa.Row[Any]) -> Change:
    return Change(
        id=row.id,
        run_id=row.run_id,
        actor=row.actor,
        op=row.op,
        target_type=row.target_type,
        target_id=row.target_id,
        summary=row.summary,
        status=row.status,
        proposed=_loads(row.proposed_json),
        before=_loads(row.before_json),
        after=_loads(row.after_json),
        created_at=row.created_at,
    )


def parse_since(since: str | int | float | datetime, *, tz: Any) -> str:
    """``since`` as a comparable ISO UTC string: a date is 00:00 local, a number epoch ms (OD-K21)."""
    return parse_moment(since, tz=tz, what="since")


Visible = Callable[[sa.Row[Any]], bool]

RevertPermit = Callable[[sa.Connection, Sequence[sa.Row[Any]]], DailyLimits | None]
"""A writer's permission to undo the given change rows, asked on the revert's write transaction:
raises the refusal, or answers with the writer's daily quota (``None``: no quota)."""


def _made_by(actor: str) -> sa.ColumnElement[bool]:
    """The changes ``actor`` made, in terms the partial index on ``changes.actor`` answers (it holds
    only what the user did not do)."""
    mine = changes.c.actor == actor
    return mine if actor == "user" else sa.and_(mine, not_by_user(changes.c.actor))


class ChangeLog:
    def __init__(self, store: Store) -> None:
        self._store = store

    def list(
        self,
        *,
        since: str | int | float | datetime | None = None,
        status: str | None = None,
        run_id: str | None = None,
        actor: str | None = None,
        where: sa.ColumnElement[bool] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Change]:
        """Changes newest first, skipping the newest ``offset``. ``where`` is an extra SQL filter (a
        caller's visible scope)."""
        if status is not None and (not isinstance(status, str) or status not in {"applied", "conflict", "reverted"}):
            raise KnowledgeValidationError(f"status {shown(status)} is not one of applied, conflict, reverted")
        refuse_unstorable_filter("runId", run_id)
        refuse_unstorable_filter("actor", actor)
        query = sa.select(changes)
        if since is not None:
            query = query.where(changes.c.created_at >= parse_since(since, tz=self._store.clock.tz))
        if status is not None:
            query = query.where(changes.c.status == status)
        if run_id is not None:
            query = query.where(changes.c.run_id == run_id)
        if actor is not None:
            query = query.where(_made_by(actor))
        if where is not None:
            query = query.where(where)
        query = query.order_by(changes.c.id.desc())
        if limit is not None:
            query = query.limit(whole_number("limit", limit))
        if whole_number("offset", offset):
            query = query.offset(offset)
        with self._store.read() as conn:
            return [to_record(r) for r in conn.execute(query)]

    def get(self, change_id: int) -> Change:
        with self._store.read() as conn:
            row = conn.execute(sa.select(changes).where(changes.c.id == change_id)).first()
        if row is None:
            raise KnowledgeNotFoundError("change")
        return to_record(row)

    def revert(
        self,
        *,
        actor: Actor,
        change_id: int | None = None,
        run_id: str | None = None,
        run_actor: str | None = None,
        visible: Visible | None = None,
        limits: DailyLimits | None = None,
        current_run_id: str | None = None,
        permit: RevertPermit | None = None,
    ) -> RevertResult:
        """Undo one change, or every change of a run (optionally only those of ``run_actor``).

        ``visible(row)`` decides which changes the caller may see; an invisible single change reads
        as not found, and invisible changes of a run are left alone.

        ``permit`` (a gem's revert) is asked once, inside the write transaction, about the change
        (whatever its status) or the run's changes still to undo; its quota replaces ``limits``. So a
        switch turned off before the revert's write is always obeyed (P-KVAL-09).
        """
        if change_id is None and run_id is None:
            raise KnowledgeValidationError(
                "revert needs the id of a change or of a run, and got neither; a write that changed nothing "
                "(a duplicate, say) has no change id, so there is nothing of it to revert"
            )
        if change_id is not None and run_id is not None:
            raise KnowledgeValidationError("revert takes the id of a change or of a run, not both; give one")
        refuse_unstorable_filter("runId", run_id)
        refuse_unstorable_filter("the run's writer", run_actor)
        opening_limits = limits if permit is None else None
        with self._store.write(actor=actor, run_id=current_run_id, limits=opening_limits) as tx:
            if change_id is not None:
                row = tx.conn.execute(sa.select(changes).where(changes.c.id == change_id)).first()
                if row is None or (visible is not None and not visible(row)):
                    raise KnowledgeNotFoundError("change")
                targets: Sequence[sa.Row[Any]] = [row]
            else:
                query = sa.select(changes).where(changes.c.run_id == run_id)
                if run_actor is not None:
                    query = query.where(_made_by(run_actor))
                # the run's own reverts are not undone one by one: undoing what they reverted is
                # already part of bringing the whole run back out
                query = query.where(changes.c.op != "changes.revert")
                targets = [
                    r for r in tx.conn.execute(query.order_by(changes.c.id.desc())) if visible is None or visible(r)
                ]
            if permit is not None:
                asked = targets if change_id is not None else [r for r in targets if r.status != "reverted"]
                answered = permit(tx.conn, asked)
                if answered is not None and not actor.is_user:
                    charge(tx.conn, writer=str(actor), day=tx.day, chars=0, limits=answered)
            if not targets and run_id is not None:
                if not _run_exists(tx.conn, run_id, run_actor=run_actor, visible=visible, current=current_run_id):
                    raise KnowledgeNotFoundError(
                        "run",
                        f"{shown(run_id)}: no change carries that run id; the change list shows each change's run",
                    )
                return RevertResult(status="reverted", count=0)
            pending = [r for r in targets if r.status != "reverted"]
            if not pending:
                return RevertResult(status="already_reverted", count=0)
            for row in pending:
                self._revert_one(tx, row)
            return RevertResult(status="reverted", count=len(pending))

    def _revert_one(self, tx: WriteTx, row: sa.Row[Any]) -> None:
        if row.op == "changes.revert":
            raise KnowledgeValidationError(
                "a revert cannot itself be reverted; make the change again instead", reason="revert_of_revert"
            )
        if row.status == "applied":
            _check_not_superseded(tx.conn, row)
            handler = REVERTERS.get(f"{row.op}:{row.target_type}") or REVERTERS.get(row.op)
            if handler is None:
                raise KnowledgeValidationError(
                    f"changes of type {row.op} cannot be reverted", reason="not_revertible", values={"op": str(row.op)}
                )
            handler(tx, row)
        touched = tx.conn.execute(
            sa.select(change_objects.c.object_type, change_objects.c.object_id).where(
                change_objects.c.change_id == row.id
            )
        ).all()
        revert_id = tx.record(
            op="changes.revert",
            target_type="change",
            target_id=row.id,
            touched=[(t, i) for t, i in touched],
            summary=f"reverted: {row.summary}"[:1000],
        )
        tx.conn.execute(
            sa.update(changes).where(changes.c.id == row.id).values(status="reverted", reverted_by=revert_id)
        )


def _run_exists(
    conn: sa.Connection, run_id: str, *, run_actor: str | None, visible: Visible | None, current: str | None
) -> bool:
    """Whether ``run_id`` names a run the caller knows of, though none of its changes can be undone:
    its own current run, a run it made that recorded only undos, or a run of the space's record
    (the calling gem's own, when ``run_actor`` is a gem)."""
    if run_id == current:
        return True
    query = sa.select(changes).where(changes.c.run_id == run_id)
    if run_actor is not None:
        query = query.where(_made_by(run_actor))
    if visible is None:
        if conn.execute(query.limit(1)).first() is not None:
            return True
    elif any(visible(r) for r in conn.execute(query)):
        return True
    recorded = sa.select(runs.c.id).where(runs.c.id == run_id)
    if run_actor is not None:
        # a run of another gem reads to a gem as unknown, like its changes (run ids are scoped per gem)
        recorded = recorded.where(sa.literal("gem:") + runs.c.gem_id == run_actor)
    return conn.execute(recorded).first() is not None


# Ops whose recorded objects include places they only wrote *into* (the collection a document was
# created in, the entity an identifier was added to): only their target is their own, so two
# documents created in the same collection do not supersede each other.
_CONTEXT_OPS = ("documents.create", "documents.move", "collections.create", "entities.addIdentifier")
_FACT_WRITES = ("facts.put", "changes.resolve")


def _own_objects() -> sa.ColumnElement[bool]:
    """Of ``changes`` joined with ``change_objects``: the rows naming an object the change itself altered."""
    return sa.or_(
        changes.c.op.not_in(_CONTEXT_OPS),
        sa.and_(
            change_objects.c.object_type == changes.c.target_type, change_objects.c.object_id == changes.c.target_id
        ),
    )


def _superseded(row: sa.Row[Any], later: Any) -> RevertError:
    """``later`` is the row (id, actor, summary) of the later change in the way."""
    return RevertError(
        f"cannot revert change {row.id}: superseded by the later change {later.id} of {later.actor} "
        f"({later.summary}); revert that one first (or the whole run), or edit the value directly",
        reason="superseded",
        values={
            "change": str(row.id),
            "later": str(later.id),
            "actor": str(later.actor),
            "summary": str(later.summary),
        },
    )


def _check_not_superseded(conn: sa.Connection, row: sa.Row[Any]) -> None:
    mine = (
        sa.select(change_objects.c.object_type, change_objects.c.object_id)
        .join(changes, changes.c.id == change_objects.c.change_id)
        .where(change_objects.c.change_id == row.id, _own_objects())
    )
    _refuse_later_work(
        conn, row, _own_objects(), sa.tuple_(change_objects.c.object_type, change_objects.c.object_id).in_(mine)
    )


def _refuse_later_work(conn: sa.Connection, row: sa.Row[Any], *touching: sa.ColumnElement[bool]) -> None:
    """Refuse undoing ``row`` when a later applied change (not an undo) touched an object ``touching``
    selects: undo never overwrites a later edit (OD-K44)."""
    later = conn.execute(
        sa.select(changes.c.id, changes.c.actor, changes.c.summary)
        .join(change_objects, change_objects.c.change_id == changes.c.id)
        .where(
            changes.c.id > row.id,
            changes.c.status == "applied",
            changes.c.op != "changes.revert",
            *touching,
        )
        .order_by(changes.c.id)
        .limit(1)
    ).first()
    if later is not None:
        raise _superseded(row, later)


# ------------------------------------------------------------------ reverters of the core ops


def _cardinality(conn: sa.Connection, predicate: str) -> str:
    return str(conn.execute(sa.select(predicates.c.cardinality).where(predicates.c.name == predicate)).scalar_one())


def _root(conn: sa.Connection, entity_id: int) -> int:
    """The entity at the end of ``entity_id``'s merge chain, deleted or not."""
    seen = {entity_id}
    current = entity_id
    while True:
        parent = conn.execute(sa.select(entities.c.merged_into).where(entities.c.id == current)).scalar()
        if parent is None or parent in seen:
            return current
        seen.add(parent)
        current = parent


def _members(conn: sa.Connection, entity_id: int) -> list[int]:
    """Every entity sharing ``entity_id``'s merge group: the facts of one slot live on these."""
    found = [_root(conn, entity_id)]
    frontier = list(found)
    while frontier:
        rows = conn.execute(sa.select(entities.c.id).where(entities.c.merged_into.in_(frontier))).scalars()
        frontier = [r for r in rows if r not in found]
        found.extend(frontier)
    return found


def _live(conn: sa.Connection, entity_id: int) -> bool:
    """Whether the entity, followed through its merges, still exists."""
    seen: set[int] = set()
    current: int | None = entity_id
    while current is not None and current not in seen:
        seen.add(current)
        row = conn.execute(
            sa.select(entities.c.deleted_at, entities.c.merged_into).where(entities.c.id == current)
        ).first()
        if row is None or row.deleted_at is not None:
            return False
        current = row.merged_into
    return current is None


def _written_by_applied_change(conn: sa.Connection, fact_id: int) -> bool:
    """False when the change that wrote the fact has been reverted (its value must not come back)."""
    # through change_objects, whose (type, id) index finds the fact's changes without a scan
    status = conn.execute(
        sa.select(changes.c.status)
        .join(change_objects, change_objects.c.change_id == changes.c.id)
        .where(
            change_objects.c.object_type == "fact",
            change_objects.c.object_id == fact_id,
            changes.c.target_type == "fact",
            changes.c.target_id == fact_id,
            changes.c.op.in_(_FACT_WRITES),
        )
        .order_by(changes.c.id)
        .limit(1)
    ).scalar()
    return status != "reverted"


def restore_facts(tx: WriteTx, row: sa.Row[Any], candidates: Sequence[sa.Row[Any]]) -> None:
    """Make current again the facts that change ``row`` expired, as far as history allows.

    A fact whose own write was undone stays gone. A fact is refused (superseded) when a later,
    still-applied write went into its ``one`` slot: that write replaced the slot's content, and
    bringing the old value back beside it would contradict it.
    """
    conn = tx.conn
    restoring = [f for f in candidates if f.expired_by == row.id and _written_by_applied_change(conn, f.id)]
    ids = [f.id for f in restoring]
    for fact in restoring:
        if fact.object_id is not None and not _live(conn, fact.object_id):
            raise RevertError(
                f"cannot revert change {row.id}: superseded, the entity {fact.predicate} points at was deleted "
                "since; undo that deletion first",
                reason="entity_deleted",
                values={"change": str(row.id), "predicate": str(fact.predicate)},
            )
        _check_not_said_again(conn, row, fact, ids)
        if _cardinality(conn, fact.predicate) != "one":
            continue
        later = conn.execute(_later_writes_of(conn, row, fact, ids).limit(1)).first()
        if later is not None:
            raise _superseded(row, later)
    if ids:
        conn.execute(sa.update(facts).where(facts.c.id.in_(ids)).values(valid_to=None, expired_by=None))


def _later_writes_of(
    conn: sa.Connection, row: sa.Row[Any], fact: sa.Row[Any], restoring: Sequence[int]
) -> sa.Select[Any]:
    """The applied fact writes after change ``row`` on ``fact``'s predicate and subject (merged
    people included), other than the facts being restored, oldest first."""
    return (
        sa.select(changes.c.id, changes.c.actor, changes.c.summary, facts.c.object_id)
        .join(facts, facts.c.id == changes.c.target_id)
        .where(
            changes.c.id > row.id,
            changes.c.status == "applied",
            changes.c.op.in_(_FACT_WRITES),
            changes.c.target_type == "fact",
            facts.c.predicate == fact.predicate,
            facts.c.subject_id.in_(_members(conn, fact.subject_id)),
            facts.c.id.not_in(restoring),
        )
        .order_by(changes.c.id)
    )


def _check_not_said_again(conn: sa.Connection, row: sa.Row[Any], fact: sa.Row[Any], restoring: Sequence[int]) -> None:
    """Refuse bringing ``fact`` back when a write after change ``row`` made the same value current
    again: replaying the applied changes, that write would have been a duplicate, so restoring
    would leave the one value current twice (K-FACT-21). Copies that were current side by side
    before ``row`` (a merge of two people who both held the value) are no obstacle."""
    same = conn.execute(
        _later_writes_of(conn, row, fact, restoring).where(
            facts.c.valid_to.is_(None), facts.c.value_json == fact.value_json
        )
    ).all()
    wanted = None if fact.object_id is None else _root(conn, fact.object_id)
    for later in same:
        if (None if later.object_id is None else _root(conn, later.object_id)) == wanted:
            raise _superseded(row, later)


def _expired_by(conn: sa.Connection, change_id: int) -> Sequence[sa.Row[Any]]:
    return conn.execute(sa.select(facts).where(facts.c.expired_by == change_id).order_by(facts.c.id)).all()


def _check_no_later_fact_work(conn: sa.Connection, row: sa.Row[Any], entity_ids: Sequence[int]) -> None:
    """Refuse undoing an entity's creation or merge once later writes built facts on it.

    Those facts were written about (or pointing at) the entity as it stood; taking it away or
    splitting it would leave them attached to the wrong entity.
    """
    about = sa.or_(facts.c.subject_id.in_(entity_ids), facts.c.object_id.in_(entity_ids))
    built_on = sa.select(facts.c.id).where(about)
    _refuse_later_work(conn, row, change_objects.c.object_type == "fact", change_objects.c.object_id.in_(built_on))


def _revert_put(tx: WriteTx, row: sa.Row[Any]) -> None:
    conn = tx.conn
    new = conn.execute(sa.select(facts).where(facts.c.id == row.target_id)).one()
    if new.valid_to is None:
        conn.execute(sa.update(facts).where(facts.c.id == new.id).values(valid_to=tx.now))
    restore_facts(tx, row, _expired_by(conn, row.id))


def _revert_expiry(tx: WriteTx, row: sa.Row[Any]) -> None:
    """Undo a retraction, or the expiry of a fact when its gem was uninstalled with its data."""
    restore_facts(tx, row, _expired_by(tx.conn, row.id))


def _revert_pin(tx: WriteTx, row: sa.Row[Any]) -> None:
    tx.conn.execute(sa.update(facts).where(facts.c.id == row.target_id).values(pinned=bool(_loads(row.before_json))))


def _check_no_later_entity_work(conn: sa.Connection, row: sa.Row[Any], entity_ids: Sequence[int]) -> None:
    """Refuse undoing an entity's creation once a later change wrote *into* the entity (an identifier
    added): an identifier names only what it was added to, so the ordinary superseded check passes
    it by, yet taking the entity away would silently take that later edit with it."""
    _refuse_later_work(conn, row, change_objects.c.object_type == "entity", change_objects.c.object_id.in_(entity_ids))


def _revert_entity_create(tx: WriteTx, row: sa.Row[Any]) -> None:
    members = _members(tx.conn, row.target_id)
    _check_no_later_entity_work(tx.conn, row, members)
    _check_no_later_fact_work(tx.conn, row, members)
    entities_changing(tx.conn)
    tx.conn.execute(sa.update(entities).where(entities.c.id == row.target_id).values(deleted_at=tx.now))


def _revert_add_identifier(tx: WriteTx, row: sa.Row[Any]) -> None:
    tx.conn.execute(sa.update(identifiers).where(identifiers.c.id == row.target_id).values(removed_at=tx.now))


def _revert_merge(tx: WriteTx, row: sa.Row[Any]) -> None:
    _check_no_later_fact_work(tx.conn, row, _members(tx.conn, row.target_id))
    entities_changing(tx.conn)
    tx.conn.execute(sa.update(entities).where(entities.c.id == row.target_id).values(merged_into=None))


def _revert_entity_delete(tx: WriteTx, row: sa.Row[Any]) -> None:
    """Bring the entity back, and with it the relations that expired with it (same change)."""
    entities_changing(tx.conn)
    tx.conn.execute(sa.update(entities).where(entities.c.id == row.target_id).values(deleted_at=None))
    restore_facts(tx, row, _expired_by(tx.conn, row.id))


def _revert_resolve(tx: WriteTx, row: sa.Row[Any]) -> None:
    """Undo a settled conflict: drop the taken value (if one was taken) and reopen the conflict."""
    if row.target_type == "fact":
        _revert_put(tx, row)
    settled = _loads(row.after_json)
    tx.conn.execute(
        sa.update(changes).where(changes.c.id == settled["conflict"]).values(status="conflict", reverted_by=None)
    )


REVERTERS.update(
    {
        "facts.put": _revert_put,
        "changes.resolve": _revert_resolve,
        "facts.retract": _revert_expiry,
        "uninstall.delete:fact": _revert_expiry,
        "facts.pin": _revert_pin,
        "entities.create": _revert_entity_create,
        "entities.addIdentifier": _revert_add_identifier,
        "entities.merge": _revert_merge,
        "entities.delete": _revert_entity_delete,
    }
)
