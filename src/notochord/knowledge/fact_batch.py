"""``put_many``: many facts in one transaction, each written exactly as one ``put`` would be.

A batch is decided item by item, in order, as single puts inside one transaction would decide it
(duplicate, conflict, replacement of a ``one`` value, accumulation of a ``many`` value), against
the current facts read once for the whole batch: the slots of every ``one`` predicate the batch
writes and the rows holding the values it writes under ``many`` predicates, kept current in memory
as the batch goes. The work is done in passes over the whole batch rather than statement by
statement per item:

1. every item is validated (no database), up to the first one refused: the writer's defaults
   worked out once, an item of the usual shape checked by a single put's checks, any other by
   the single put's own validation (:func:`~notochord.knowledge.fact_rows.put_preparer`);
2. in order, each item is charged to the quota (counted in memory, the counter read and written
   once) and resolved: its subject, object and predicate, each distinct one once (the entities of
   the batch are answered from the transaction's look-ups, those not looked up yet read in one
   statement first), new predicates declared as the first item naming them reaches them. The
   first refused item, by index, is the one a loop of puts would refuse;
3. the current facts of every slot the batch touches are read, on SQLite for 100 (or 10) bound
   keys per statement;
4. the decisions are made in memory, each value encoded once for its fact and its change;
5. the facts, the changes, the objects they touched and the facts they expired are written in
   a few statements per table, with the ids single puts would get (the batch holds the write
   lock): on SQLite the largest ids plus one, known up front, the rows in multi-row statements
   (:mod:`notochord.knowledge.many_rows`); on PostgreSQL provisional ids until the decisions are
   made, then as many ids drawn from each table's sequence in one statement, and the rows sent
   with ``COPY``.

Every text a row holds was refused for U+0000 where it entered (the item's validation, the
vocabulary, the change's summary), so the rows are not checked again statement by statement. The
rules are :mod:`notochord.knowledge.facts`' and :mod:`notochord.knowledge.batches`'.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import sqlalchemy as sa

from notochord.db.bulk import draw_ids
from notochord.db.schema import changes, facts
from notochord.errors import KnowledgeNotFoundError
from notochord.knowledge.batches import item_errors
from notochord.knowledge.fact_rows import (
    EXPIRE_ONE,
    PutArguments,
    Subject,
    put_preparer,
    record_user_conflict,
    short,
)
from notochord.knowledge.many_rows import (
    KEYS_PER_SHORT_STATEMENT,
    KEYS_PER_STATEMENT,
    insert_rows,
    keyed_rows,
    values_list,
)
from notochord.knowledge.prepared import Prepared
from notochord.knowledge.quotas import DailyLimits, QuotaTally
from notochord.knowledge.records import PutResult
from notochord.knowledge.vocabulary import Resolution
from notochord.knowledge.writes import Actor, Store, WriteTx, change_json

__all__ = ["FactWriter", "put_batch"]

# Row-value lists per statement: well below every backend's limit of bound parameters.
_CHUNK = 300

INSERT_FACT_WITH_ID = Prepared(sa.insert(facts))
_FACT_COLUMNS = (
    "id",
    "subject_id",
    "predicate",
    "value_json",
    "object_id",
    "origin",
    "source",
    "source_ref",
    "writer",
    "pinned",
    "valid_from",
    "valid_to",
    "recorded_at",
)
# what one writer's batch writes alike in every row: the rows' own values are bound once a statement
_FACT_SHARED = frozenset({"origin", "source", "source_ref", "writer", "valid_from", "valid_to", "recorded_at"})
_EXPIRY = ("at", "by", "fact_id")
_LAST_FACT = Prepared(sa.select(sa.func.max(facts.c.id)))
_LAST_CHANGE = Prepared(sa.select(sa.func.max(changes.c.id)))
# The current facts of the batch's slots on SQLite, for a chunk of keys at a time: the keys are the
# rows of a VALUES list, (subject, predicate, value or null) (null: the whole slot of a `one`
# predicate), each looked up on the (subject_id, predicate, valid_to) index. The keys are read once
# (MATERIALIZED, SQLite 3.35 like RETURNING), not again for every fact of a slot the index visits.
_SLOTS_SQLITE = {
    count: f"WITH k(s, p, v) AS MATERIALIZED (VALUES {values_list(3, count)}) "
    "SELECT f.id, f.subject_id, f.predicate, f.value_json, f.object_id, f.origin "
    "FROM k JOIN facts AS f ON f.subject_id = k.s AND f.predicate = k.p AND f.valid_to IS NULL "
    "AND (k.v IS NULL OR f.value_json = k.v)"
    for count in (KEYS_PER_STATEMENT, KEYS_PER_SHORT_STATEMENT)
}


class FactWriter(Protocol):
    """What a batch needs of :class:`~notochord.knowledge.facts.Facts`."""

    def subject_of(self, conn: sa.Connection, subject: Subject) -> tuple[int, str]: ...

    def object_of(self, conn: sa.Connection, object_id: int | str, *, by_ref: bool) -> int: ...

    def predicate_of(self, conn: sa.Connection, given: PutArguments) -> Resolution: ...

    def declare(
        self, conn: sa.Connection, given: PutArguments, resolution: Resolution, *, actor: Actor, now: str
    ) -> Resolution: ...

    def same_object(self, conn: sa.Connection, stored: int | None, given: int | None) -> bool: ...

    def members(self, conn: sa.Connection, entity_id: int) -> list[int]: ...

    def known(self, conn: sa.Connection, entity_ids: Iterable[int]) -> Mapping[int, tuple[int, str, tuple[int, ...]]]:
        """Canonical id, kind and members of the entities answered without a chain to follow."""
        ...


class _Item(NamedTuple):
    given: PutArguments
    subject_id: int
    object_id: int | None
    name: str
    whole: bool  # a `one` predicate: its whole slot is read
    members: tuple[int, ...]


class _Live(NamedTuple):
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
    with _cycle_collection_paused(), store.write(actor=actor, run_id=run_id) as tx:
        resolved = _resolved(writer, tx, *_validated(actor, items), limits=limits)
        return _apply(writer, tx, resolved, _current_slots(tx.conn, resolved))


@contextlib.contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Hold off Python's cycle collector while a batch runs.

    A batch allocates a few small objects per item that live until it ends (arguments, rows,
    results); in a process holding many objects, these set off full collections that cost more
    than the batch's own work (measured on batches of 500: about 40–70 µs a fact, and three to five
    times that in a batch where one landed). Reference counting still frees everything as usual; cycles
    are collected when the batch is over. Another thread's batch may turn collection back on
    early, which only costs speed.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _validated(
    actor: Actor, items: Sequence[Mapping[str, Any]]
) -> tuple[list[PutArguments], tuple[int, Exception] | None]:
    """The items' validated arguments up to the first refused item, and that item's index and error."""
    prepare = put_preparer(actor)
    given: list[PutArguments] = []
    for index, arguments in enumerate(items):
        try:
            given.append(prepare(arguments))
        except Exception as error:  # raised in index order by _resolved, as a loop of puts raises it
            return given, (index, error)
    return given, None


def _entity_ids(given: Sequence[PutArguments]) -> set[int]:
    found: set[int] = set()
    for g in given:
        for entity in (g.subject, g.object_id):
            if entity.__class__ is int:
                found.add(entity)
    return found


def _resolved(
    writer: FactWriter,
    tx: WriteTx,
    given: Sequence[PutArguments],
    refused: tuple[int, Exception] | None,
    *,
    limits: DailyLimits | None,
) -> list[_Item]:
    """Charge and resolve the items in order; raise the first refusal (by index) of either pass.

    Each distinct subject, object and predicate is resolved once. The entities named by id are
    looked up for the whole batch first (:meth:`FactWriter.known`); nothing the batch does before
    its rows are written changes an entity (declaring a predicate changes the vocabulary only), so
    those answers hold for every item. An entity they leave out, and any subject that is not an
    entity id (``"self"``, or a mistake), is resolved on its own at the first item naming it, so the
    first refused item is the one a loop of puts would refuse.
    """
    conn, actor = tx.conn, tx.actor
    tally = None if limits is None or actor.is_user else QuotaTally(conn, writer=str(actor), day=tx.day, limits=limits)
    known = writer.known(conn, _entity_ids(given))
    # answers by entity id (a batch names entities by their ids), and by type and value for the
    # rest, so that True is not taken for entity 1; a gem's refs (by_ref) are checked on their own
    by_id: dict[int, tuple[int, tuple[int, ...]]] = {}
    others: dict[tuple[type, Any, bool], tuple[int, tuple[int, ...]]] = {}
    objects: dict[tuple[type, Any, bool], int] = {}
    named: dict[str | None, Resolution] = {}
    hinted: dict[str | None, Resolution] = {}
    resolved: list[_Item] = []
    append = resolved.append
    index = 0
    try:
        for index, g in enumerate(given):  # noqa: B007 (the handler below names it)
            if tally is not None:
                tally.add(len(g.value_json))
            subject_given = g.subject
            if subject_given.__class__ is int and not g.by_ref:
                subject = by_id.get(subject_given)
                if subject is None:
                    entry = known.get(subject_given)
                    subject = by_id[subject_given] = (
                        _subject(writer, conn, g) if entry is None else (entry[0], entry[2])
                    )
            else:
                key = (subject_given.__class__, subject_given, g.by_ref)
                subject = others.get(key)
                if subject is None:
                    subject = others[key] = _subject(writer, conn, g)
            object_id = g.object_id
            if object_id is not None:
                if object_id.__class__ is int and not g.by_ref and object_id in known:
                    object_id = known[object_id][0]
                else:
                    object_key = (object_id.__class__, object_id, g.by_ref)
                    found = objects.get(object_key)
                    if found is None:
                        found = objects[object_key] = writer.object_of(conn, object_id, by_ref=g.by_ref)
                    object_id = found
            resolutions = named if g.hint is None else hinted
            resolution = resolutions.get(g.predicate if g.hint is None else g.hint)
            if resolution is None:
                resolution = writer.predicate_of(conn, g)
                if resolution.is_new:
                    resolution = writer.declare(conn, g, resolution, actor=actor, now=tx.now)
                    # the vocabulary changed: a hint may now resolve to the new predicate
                    named.clear()
                    hinted.clear()
                resolutions[g.predicate if g.hint is None else g.hint] = resolution
            append(_Item(g, subject[0], object_id, resolution.name, resolution.cardinality == "one", subject[1]))
    except Exception:
        # one handler for the whole loop (a context per item costs more than the item's look-ups)
        with item_errors(index):
            raise
    if refused is not None:
        with item_errors(refused[0]):
            raise refused[1]
    if tally is not None:
        tally.save(conn)
    return resolved


def _subject(writer: FactWriter, conn: sa.Connection, given: PutArguments) -> tuple[int, tuple[int, ...]]:
    """A put's canonical subject and its members, looked up on their own (as a single put does)."""
    subject_id, kind = writer.subject_of(conn, given.subject)
    if given.by_ref and given.subject != "self" and kind == "self":
        raise KnowledgeNotFoundError("entity")
    return subject_id, tuple(writer.members(conn, subject_id))


def _apply(
    writer: FactWriter, tx: WriteTx, resolved: Sequence[_Item], slots: dict[tuple[int, str], list[_Live]]
) -> list[PutResult]:
    """Decide each item against the slots (kept current as the batch goes) and write the rows."""
    conn, now, writer_name = tx.conn, tx.now, str(tx.actor)
    tx.defer_objects = True
    # SQLite: the ids single puts would get; elsewhere -1, -2, … until the sequences give them
    provisional = conn.dialect.name != "sqlite"
    if provisional:
        tx.defer_changes_provisionally()
        next_fact, step = -1, -1
    else:
        next_fact, step = _next_ids(tx), 1
    record = tx.change_recorder(op="facts.put", target_type="fact")
    results: list[PutResult] = []
    new_facts: list[tuple[Any, ...]] = []
    expired: list[tuple[str, int, int]] = []
    is_user = tx.actor.is_user
    for item in resolved:
        given, subject_id, object_id, name, whole, _members = item
        value_json = given.value_json
        slot = slots.get((subject_id, name))
        if slot is None:
            slot = slots[(subject_id, name)] = []
        duplicate = None
        for row in slot:
            if row.value_json == value_json and writer.same_object(conn, row.object_id, object_id):
                duplicate = row
                break
        if duplicate is not None:
            results.append(PutResult(status="duplicate", id=duplicate.id, predicate=name, change_id=None))
            continue
        if whole and slot and not is_user:
            blocker = next((row for row in slot if row.origin == "user"), None)
            if blocker is not None:
                change_id = record_user_conflict(
                    tx,
                    blocker,
                    name=name,
                    object_id=object_id,
                    source_ref=given.source_ref,
                    value=given.value,
                )
                results.append(PutResult(status="conflict", id=blocker.id, predicate=name, change_id=change_id))
                continue
        fact_id = next_fact
        next_fact += step
        new_facts.append(
            (
                fact_id,
                subject_id,
                name,
                value_json,
                object_id,
                given.origin,
                given.source,
                given.source_ref,
                writer_name,
                given.pinned,
                now,
                None,
                now,
            )
        )
        value = given.value
        shown = value if value.__class__ is str and len(value) <= 80 else short(value)
        if whole and slot:
            replaced = slot
            change_id = record(
                fact_id,
                f"{name} = {shown} (replaced {len(replaced)})",
                "[" + ", ".join(_stored_json(r.value_json) for r in replaced) + "]",
                change_json(value, value_json),
                [("fact", r.id) for r in replaced],
            )
            expired.extend((now, change_id, r.id) for r in replaced)
            slot = slots[(subject_id, name)] = []
        else:
            change_id = record(fact_id, f"{name} = {shown}", None, change_json(value, value_json), ())
        # the newest fact of its slot: stored facts have smaller ids, and provisional ids sort after them
        slot.append(_Live(subject_id, fact_id, value_json, object_id, given.origin))
        results.append(PutResult(status="applied", id=fact_id, predicate=name, change_id=change_id))
    if provisional:
        new_facts, expired, results = _renumbered(tx, new_facts, expired, results)
    # facts first: the expiries may end facts of this batch
    insert_rows(conn, INSERT_FACT_WITH_ID, facts, _FACT_COLUMNS, new_facts, copy=True, shared=_FACT_SHARED)
    tx.flush()
    EXPIRE_ONE.run_tuples(conn, _EXPIRY, expired, texts_checked=True)
    return results


def _renumbered(
    tx: WriteTx, new_facts: list[tuple[Any, ...]], expired: list[tuple[str, int, int]], results: list[PutResult]
) -> tuple[list[tuple[Any, ...]], list[tuple[str, int, int]], list[PutResult]]:
    """The batch's rows and results with the ids its facts and changes get from the database's
    sequences (one statement for both): provisional id -k becomes the k-th id drawn, so the ids ascend
    in the order of the items, as they do one put at a time (the batch holds the write lock)."""
    drawn = draw_ids(tx.conn, {"facts": len(new_facts), "changes": tx.provisional_changes})
    fact_ids, change_ids = drawn["facts"], drawn["changes"]

    def fact(given: int) -> int:
        return fact_ids[-given - 1] if given < 0 else given

    def change(given: int) -> int:
        return change_ids[-given - 1] if given < 0 else given

    tx.renumber(change, {"fact": fact})
    return (
        [(fact(row[0]), *row[1:]) for row in new_facts],
        [(at, change(by), fact(fact_id)) for at, by, fact_id in expired],
        [
            PutResult(
                status=r.status,
                id=fact(r.id),
                predicate=r.predicate,
                change_id=None if r.change_id is None else change(r.change_id),
            )
            for r in results
        ],
    )


def _stored_json(value_json: str) -> str:
    """How a change records a stored value (its canonical JSON ``value_json``), as :meth:`WriteTx.record` would."""
    if value_json[0] not in "[{":
        return value_json  # a string, number, boolean or null reads the same either way
    return str(change_json(json.loads(value_json)))


def _next_ids(tx: WriteTx) -> int:
    """On SQLite, the id of the batch's first new fact, and its changes' ids known up front.

    The batch holds the write lock, and SQLite gives a new row the largest id plus one, so these are
    the ids the same puts one by one would get; the rows then go in a few statements per table.
    """
    tx.defer_changes(int(_LAST_CHANGE.scalar(tx.conn, {}) or 0) + 1)
    return int(_LAST_FACT.scalar(tx.conn, {}) or 0) + 1


def _order(row: _Live) -> int:
    # oldest first, as a single put reads a slot (fact_rows.slot_rows); a provisional id (-1, -2, …)
    # is newer than every stored fact, and -2 newer than -1
    return row.id if row.id > 0 else _PROVISIONAL - row.id


_PROVISIONAL = 1 << 62


def _chunks(values: Iterable[Any]) -> Iterator[list[Any]]:
    ordered = sorted(values)
    for start in range(0, len(ordered), _CHUNK):
        yield ordered[start : start + _CHUNK]


def _current_slots(conn: sa.Connection, resolved: Sequence[_Item]) -> dict[tuple[int, str], list[_Live]]:
    """The current facts the batch's decisions depend on, by (canonical subject, predicate): the
    whole slot of a ``one`` predicate, the rows holding the batch's values of a ``many`` one."""
    canonical: dict[int, int] = {}
    keys: set[tuple[int, str, str | None]] = set()
    for given, subject_id, _object_id, name, whole, members in resolved:
        value_json = None if whole else given.value_json
        for member in members:
            canonical[member] = subject_id
            keys.add((member, name, value_json))
    if not keys:
        return {}
    rows: Iterable[Any]
    if conn.dialect.name == "sqlite":
        rows = keyed_rows(conn, _SLOTS_SQLITE.__getitem__, sorted(keys, key=_key_order))
    else:
        rows = _read_slots(conn, keys)
    slots: dict[tuple[int, str], list[_Live]] = {}
    seen: set[int] = set()
    for fact_id, subject_id, predicate, value_json, object_id, origin in rows:
        if fact_id in seen:
            continue
        seen.add(fact_id)
        slot = slots.setdefault((canonical[subject_id], predicate), [])
        slot.append(_Live(subject_id, fact_id, value_json, object_id, origin))
    for slot in slots.values():
        slot.sort(key=_order)
    return slots


def _key_order(key: tuple[int, str, str | None]) -> tuple[int, str, str]:
    return key[0], key[1], key[2] or ""


def _read_slots(conn: sa.Connection, keys: set[tuple[int, str, str | None]]) -> list[Any]:
    """The rows of the slot ``keys`` through SQLAlchemy (PostgreSQL): per predicate with plain ``IN``
    lists, which the (subject, predicate, valid_to) index answers, narrowed to the exact keys."""
    whole: dict[str, set[int]] = {}
    valued: dict[str, dict[int, set[str]]] = {}
    for member, name, value_json in keys:
        if value_json is None:
            whole.setdefault(name, set()).add(member)
        else:
            valued.setdefault(name, {}).setdefault(member, set()).add(value_json)
    current = facts.c.valid_to.is_(None)
    columns = (facts.c.id, facts.c.subject_id, facts.c.predicate, facts.c.value_json, facts.c.object_id, facts.c.origin)
    rows: list[Any] = []
    for predicate, subjects in whole.items():
        for chunk in _chunks(subjects):
            rows.extend(
                conn.execute(
                    sa.select(*columns).where(facts.c.subject_id.in_(chunk), facts.c.predicate == predicate, current)
                ).all()
            )
    for predicate, by_subject in valued.items():
        values = set().union(*by_subject.values())
        for chunk in _chunks(by_subject):
            for value_chunk in _chunks(values):
                found = conn.execute(
                    sa.select(*columns).where(
                        facts.c.subject_id.in_(chunk),
                        facts.c.predicate == predicate,
                        current,
                        facts.c.value_json.in_(value_chunk),
                    )
                ).all()
                rows.extend(r for r in found if r.value_json in by_subject[r.subject_id])
    return rows
