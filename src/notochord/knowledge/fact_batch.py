"""``put_many``: many facts in one transaction, each written exactly as one ``put`` would be.

A batch is decided item by item, in order, as single puts inside one transaction would decide it
(duplicate, conflict, replacement of a ``one`` value, accumulation of a ``many`` value), against
the current facts read once for the whole batch: the slots of every ``one`` predicate the batch
writes and the rows holding the values it writes under ``many`` predicates, kept current in memory
as the batch goes. Each item is validated, charged to the quota and resolved in order (so the
first refused item is the one a loop of puts would refuse), and recorded as its own change; the
objects its changes touched and the facts it expired are written in one statement each at the end
of the transaction. The rules are :mod:`notochord.knowledge.facts`' and
:mod:`notochord.knowledge.batches`'.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa

from notochord.db.schema import changes, facts
from notochord.knowledge.batches import item_errors
from notochord.knowledge.fact_rows import EXPIRE_ONE, INSERT_FACT, PutArguments, prepare_put, short
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, charge
from notochord.knowledge.records import PutResult
from notochord.knowledge.vocabulary import Resolution
from notochord.knowledge.writes import Actor, Store, WriteTx

__all__ = ["FactWriter", "put_batch"]

# Row-value lists per statement: well below every backend's limit of bound parameters.
_CHUNK = 300

INSERT_FACT_WITH_ID = Prepared(sa.insert(facts))
_LAST_FACT = Prepared(sa.select(sa.func.max(facts.c.id)))
_LAST_CHANGE = Prepared(sa.select(sa.func.max(changes.c.id)))


class FactWriter(Protocol):
    """What a batch needs of :class:`~notochord.knowledge.facts.Facts`."""

    def resolve_put(self, conn: sa.Connection, given: PutArguments) -> tuple[int, str, int | None, Resolution]: ...

    def declare(
        self, conn: sa.Connection, given: PutArguments, resolution: Resolution, *, actor: Actor, now: str
    ) -> Resolution: ...

    def same_object(self, conn: sa.Connection, stored: int | None, given: int | None) -> bool: ...

    def members(self, conn: sa.Connection, entity_id: int) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class _Item:
    given: PutArguments
    subject_id: int
    object_id: int | None
    name: str
    whole: bool  # a `one` predicate: its whole slot is read
    members: tuple[int, ...]


@dataclass(slots=True)
class _Live:
    """A current fact of a slot, as far as the batch's decisions need it."""

    subject_id: int
    id: int
    value_json: str
    object_id: int | None
    origin: str


def put_batch(
    writer: FactWriter,
    store: Store,
    items: Sequence[Mapping[str, Any]],
    *,
    actor: Actor,
    run_id: str,
    limits: DailyLimits | None,
) -> list[PutResult]:
    """Write ``items`` (checked argument mappings of ``put``) in one transaction; one result each."""
    results: list[PutResult] = []
    with store.write(actor=actor, run_id=run_id) as tx:
        tx.defer_objects = True
        conn = tx.conn
        resolved: list[_Item] = []
        for index, arguments in enumerate(items):
            with item_errors(index):
                given = prepare_put(actor, **arguments)
                if limits is not None and not actor.is_user:
                    charge(conn, writer=str(actor), day=tx.day, chars=len(given.value_json), limits=limits)
                subject_id, _kind, object_id, resolution = writer.resolve_put(conn, given)
                resolution = writer.declare(conn, given, resolution, actor=actor, now=tx.now)
                members = tuple(writer.members(conn, subject_id))
                resolved.append(
                    _Item(given, subject_id, object_id, resolution.name, resolution.cardinality == "one", members)
                )
        slots = _current_slots(conn, resolved)
        expired: list[dict[str, Any]] = []
        new_facts: list[dict[str, Any]] = []
        next_fact = _next_ids(tx)
        writer_name = str(actor)
        for item in resolved:
            given = item.given
            slot = slots.setdefault((item.subject_id, item.name), [])
            duplicate = next(
                (
                    row
                    for row in slot
                    if row.value_json == given.value_json and writer.same_object(conn, row.object_id, item.object_id)
                ),
                None,
            )
            if duplicate is not None:
                results.append(PutResult(status="duplicate", id=duplicate.id, predicate=item.name, change_id=None))
                continue
            if item.whole and slot and not actor.is_user:
                blocker = next((row for row in slot if row.origin == "user"), None)
                if blocker is not None:
                    change_id = tx.record(
                        op="facts.put",
                        target_type="fact",
                        target_id=blocker.id,
                        summary=f"conflict on {item.name}: kept the user's value",
                        before=json.loads(blocker.value_json),
                        after={"object": item.object_id, "sourceRef": given.source_ref},
                        proposed=given.value,
                        status="conflict",
                    )
                    conflict = PutResult(status="conflict", id=blocker.id, predicate=item.name, change_id=change_id)
                    results.append(conflict)
                    continue
            row = {
                "subject_id": item.subject_id,
                "predicate": item.name,
                "value_json": given.value_json,
                "object_id": item.object_id,
                "origin": given.origin,
                "source": given.source,
                "source_ref": given.source_ref,
                "writer": writer_name,
                "pinned": given.pinned,
                "valid_from": tx.now,
                "valid_to": None,
                "recorded_at": tx.now,
            }
            if next_fact is None:
                fact_id = int(INSERT_FACT.scalar(conn, row))
            else:
                fact_id = row["id"] = next_fact
                next_fact += 1
                new_facts.append(row)
            replaced = list(slot) if item.whole else []
            change_id = tx.record(
                op="facts.put",
                target_type="fact",
                target_id=fact_id,
                touched=[("fact", r.id) for r in replaced],
                summary=f"{item.name} = {short(given.value)}" + (f" (replaced {len(replaced)})" if replaced else ""),
                before=[json.loads(r.value_json) for r in replaced] or None,
                after=given.value,
            )
            expired.extend({"fact_id": r.id, "at": tx.now, "by": change_id} for r in replaced)
            live = _Live(item.subject_id, fact_id, given.value_json, item.object_id, given.origin)
            if item.whole:
                slot.clear()
            bisect.insort(slot, live, key=_order)
            results.append(PutResult(status="applied", id=fact_id, predicate=item.name, change_id=change_id))
        # facts first: the expiries may end facts of this batch
        INSERT_FACT_WITH_ID.run_many(conn, new_facts)
        tx.flush()
        EXPIRE_ONE.run_many(conn, expired)
    return results


def _next_ids(tx: WriteTx) -> int | None:
    """On SQLite, the id of the batch's first new fact, and its changes' ids known up front (``None``
    elsewhere: each row is inserted as it is decided).

    The batch holds the write lock, and SQLite gives a new row the largest id plus one, so these are
    the ids the same puts one by one would get; the rows then go in one statement per table.
    """
    if tx.conn.dialect.name != "sqlite":
        return None
    tx.defer_changes(int(_LAST_CHANGE.scalar(tx.conn, {}) or 0) + 1)
    return int(_LAST_FACT.scalar(tx.conn, {}) or 0) + 1


def _order(row: _Live) -> int:
    # oldest first, as a single put reads a slot (fact_rows.slot_rows)
    return row.id


def _chunks(values: Iterable[Any]) -> Iterator[list[Any]]:
    ordered = sorted(values)
    for start in range(0, len(ordered), _CHUNK):
        yield ordered[start : start + _CHUNK]


def _current_slots(conn: sa.Connection, resolved: Sequence[_Item]) -> dict[tuple[int, str], list[_Live]]:
    """The current facts the batch's decisions depend on, by (canonical subject, predicate).

    Read per predicate with plain ``IN`` lists, which every backend answers from the
    (subject, predicate, valid_to) index (SQLite does not for a list of row values), then narrowed
    to the exact (subject, predicate[, value]) keys of the batch.
    """
    canonical = {member: item.subject_id for item in resolved for member in item.members}
    whole: dict[str, set[int]] = {}
    valued: dict[str, dict[int, set[str]]] = {}
    for item in resolved:
        for member in item.members:
            if item.whole:
                whole.setdefault(item.name, set()).add(member)
            else:
                valued.setdefault(item.name, {}).setdefault(member, set()).add(item.given.value_json)
    current = facts.c.valid_to.is_(None)
    rows: list[Any] = []
    for predicate, subjects in whole.items():
        for chunk in _chunks(subjects):
            rows.extend(
                conn.execute(
                    sa.select(facts).where(facts.c.subject_id.in_(chunk), facts.c.predicate == predicate, current)
                ).all()
            )
    for predicate, by_subject in valued.items():
        values = set().union(*by_subject.values())
        for chunk in _chunks(by_subject):
            for value_chunk in _chunks(values):
                found = conn.execute(
                    sa.select(facts).where(
                        facts.c.subject_id.in_(chunk),
                        facts.c.predicate == predicate,
                        current,
                        facts.c.value_json.in_(value_chunk),
                    )
                ).all()
                rows.extend(r for r in found if r.value_json in by_subject[r.subject_id])
    slots: dict[tuple[int, str], list[_Live]] = {}
    for row in rows:
        slot = slots.setdefault((canonical[row.subject_id], row.predicate), [])
        slot.append(_Live(row.subject_id, row.id, row.value_json, row.object_id, row.origin))
    for slot in slots.values():
        slot.sort(key=_order)
    return slots
