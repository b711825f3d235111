"""Property: undo is always right (K-CHG-03, OD-K44).

Random sequences of the user's writes — fact puts on ``one`` and ``many`` predicates (values and
relations), retracts, pins, entity creations, merges and deletes, document upserts, moves and
deletes, each in no run or one of two runs — are interleaved with reverts by change and by run.
After every step the visible state (people, every current fact of the user and of each person,
the documents of two collections) must equal the state a plain-Python oracle recomputes by
replaying, from the start, the effects of the changes that are applied and not reverted.

A revert may be refused (``superseded``, nothing changes), but the latest change can always be
undone right after it was made, and a relation never points at an entity that is gone.

Each example runs on a fresh copy of one migrated SQLite file, without an embedder.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from notochord.clock import FixedClock
from notochord.db.engine import create_sqlite_engine
from notochord.db.migrate import migrate
from notochord.db.schema import documents, entities, facts
from notochord.errors import KnowledgeError, KnowledgeNotFoundError, KnowledgeValidationError, RevertError
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.quotas import DailyLimits
from notochord.knowledge.user import HostChanges, HostKnowledge
from notochord.knowledge.writes import ASSISTANT, USER

CARDINALITY = {"location.home.city": "one", "pref.food.like": "many"}
RELATIONS = {"relation.spouse": "one", "relation.colleague": "many"}
VALUES = ("Delft", "Leiden", "Utrecht")
RUNS = (None, "r1", "r2")
NAMES = ("Ann", "Bob", "Cat", "Dan")
TEXTS = ("one", "two")
KEYS = ("k1", "k2")

runs = st.sampled_from(RUNS)
picks = st.integers(min_value=0, max_value=40)


# ---------------------------------------------------------------------------------- the oracle


@dataclass
class MFact:
    subject: int
    predicate: str
    value: Any
    object: int | None
    pinned: bool
    origin: str = "user"
    current: bool = True


@dataclass
class MDoc:
    collection: int
    key: str | None
    title: str
    body: str
    deleted: bool = False


@dataclass
class MEntity:
    name: str
    merged_into: int | None = None
    deleted: bool = False


@dataclass
class World:
    """The knowledge as the oracle sees it: built only by replaying effects."""

    entities: dict[int, MEntity] = field(default_factory=dict)
    facts: dict[int, MFact] = field(default_factory=dict)
    docs: dict[int, MDoc] = field(default_factory=dict)

    def canonical(self, entity_id: int) -> int | None:
        """The live entity an id stands for, or None (missing or deleted, as "no entity")."""
        seen: set[int] = set()
        current = entity_id
        while True:
            entity = self.entities.get(current)
            if entity is None or entity.deleted or current in seen:
                return None
            if entity.merged_into is None:
                return current
            seen.add(current)
            current = entity.merged_into

    def members(self, entity_id: int) -> set[int]:
        found = {entity_id}
        grew = True
        while grew:
            more = {i for i, e in self.entities.items() if e.merged_into in found} - found
            found |= more
            grew = bool(more)
        return found

    def slot(self, subject: int, predicate: str) -> list[int]:
        members = self.members(subject)
        return sorted(
            i for i, f in self.facts.items() if f.current and f.subject in members and f.predicate == predicate
        )


Effect = tuple[Any, ...]


def apply(world: World, effect: Effect) -> None:
    kind, target, *rest = effect
    if kind == "fact":
        world.facts[target] = copy.copy(rest[0])
    elif kind == "fact.current":
        if target in world.facts:
            world.facts[target].current = rest[0]
    elif kind == "fact.pinned":
        if target in world.facts:
            world.facts[target].pinned = rest[0]
    elif kind == "entity":
        world.entities[target] = MEntity(rest[0])
    elif kind == "entity.merged_into":
        if target in world.entities:
            world.entities[target].merged_into = rest[0]
    elif kind == "entity.deleted":
        if target in world.entities:
            world.entities[target].deleted = True
    elif kind == "doc":
        if rest[0] is None:
            world.docs.pop(target, None)
        else:
            world.docs[target] = replace(rest[0])
    else:  # pragma: no cover - a typo in the oracle
        raise AssertionError(kind)


@dataclass
class MChange:
    id: int
    run: str | None
    effects: list[Effect]
    reverted: bool = False
    conflict: tuple[int, Any] | None = None
    """For a conflict: the user's fact that blocked the write, and the proposed value."""
    resolved_by: MChange | None = None

    @property
    def pending(self) -> bool:
        """Whether a revert would still undo something (a settled conflict is closed)."""
        settled = self.resolved_by is not None and not self.resolved_by.reverted
        return not self.reverted and not settled


# ---------------------------------------------------------------------------------- the store


def clock() -> FixedClock:
    return FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")


@dataclass
class Bench:
    """One migrated store with three people and a collection, reset to that state for every example.

    Resetting copies the saved pages back with SQLite's online backup: far cheaper than migrating
    or opening a new store per example, and the store is as real as any other.
    """

    core: KnowledgeCore
    saved: sqlite3.Connection
    self_id: int
    people: dict[int, str]
    collections: list[int]

    def reset(self) -> None:
        raw = self.core.store.engine.raw_connection()
        try:
            driver = raw.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            self.saved.backup(driver)
        finally:
            raw.close()


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    path = tmp_path_factory.mktemp("undo") / "space.db"
    engine = create_sqlite_engine(path, busy_timeout_ms=5000)
    migrate(engine)
    core = KnowledgeCore(engine, clock(), embedder=None, background=False)
    core.initialise()
    user = HostKnowledge(core, USER)
    for name in NAMES[:3]:
        user.entities.resolve(name=name, create=True)
    projects = user.collections.create("Projects")
    with core.store.read() as conn:
        self_id = core.entities.self_id(conn)
    saved = sqlite3.connect(":memory:")
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        driver.backup(saved)
    finally:
        raw.close()
    yield Bench(
        core=core,
        saved=saved,
        self_id=self_id,
        people={e.id: e.display_name for e in user.entities.list("person")},
        collections=[user.collections.get("keep").id, projects.id],
    )
    saved.close()
    core.close()
    engine.dispose()


class UndoMachine(RuleBasedStateMachine):
    bench: Bench

    def __init__(self) -> None:
        super().__init__()
        self.bench.reset()
        self.core = self.bench.core
        self.user = HostKnowledge(self.core, USER)
        self.changes = HostChanges(self.core)
        self.log: list[MChange] = []
        self.fresh: int | None = None
        """The latest change, while nothing came after it: undoing it must always work."""
        self.self_id = self.bench.self_id
        self.initial = World()
        self.initial.entities[self.self_id] = MEntity("self")
        for person_id, name in self.bench.people.items():
            self.initial.entities[person_id] = MEntity(name)
        self.collections = self.bench.collections
        self.entity_ids = sorted(self.initial.entities)
        self.fact_ids: list[int] = []
        self.doc_ids: list[int] = []
        self.looked = False

    # ------------------------------------------------------------------ oracle helpers

    def world(self) -> World:
        world = copy.deepcopy(self.initial)
        for change in self.log:
            if not change.reverted:
                for effect in change.effects:
                    apply(world, effect)
        return world

    def record(self, change_id: int | None, run: str | None, effects: list[Effect]) -> None:
        assert change_id is not None
        self.log.append(MChange(change_id, run, effects))
        self.fresh = change_id

    def expect_refusal(self, error: type[KnowledgeError], call: Any) -> None:
        """The call fails; that it changed nothing is the invariant's job (the oracle did not move)."""
        with pytest.raises(error):
            call()

    def stored(self) -> dict[str, Any]:
        """What the store holds now: current facts, live people, live documents (three queries)."""
        with self.core.store.read() as conn:
            current = conn.execute(
                sa.select(facts.c.id, facts.c.subject_id, facts.c.predicate, facts.c.value_json)
                .add_columns(facts.c.object_id, facts.c.pinned, facts.c.origin)
                .where(facts.c.valid_to.is_(None))
            ).all()
            people = conn.execute(
                sa.select(entities.c.id, entities.c.merged_into).where(
                    entities.c.kind == "person", entities.c.deleted_at.is_(None)
                )
            ).all()
            docs = conn.execute(
                sa.select(documents.c.id, documents.c.collection_id, documents.c.key, documents.c.title)
                .add_columns(documents.c.body)
                .where(documents.c.deleted_at.is_(None))
            ).all()
        return {
            "facts": {i: (s, p, json.loads(v), o, bool(pin), who) for i, s, p, v, o, pin, who in current},
            "people": dict(people),
            "docs": {i: (c, k, t, b) for i, c, k, t, b in docs},
        }

    def replayed(self, world: World) -> dict[str, Any]:
        return {
            "facts": {
                i: (f.subject, f.predicate, f.value, f.object, f.pinned, f.origin)
                for i, f in world.facts.items()
                if f.current
            },
            "people": {i: e.merged_into for i, e in world.entities.items() if i != self.self_id and not e.deleted},
            "docs": {i: (d.collection, d.key, d.title, d.body) for i, d in world.docs.items() if not d.deleted},
        }

    def visible(self) -> dict[str, Any]:
        """What the host API shows: people, every person's and the user's facts, two collections."""
        people = sorted((e.id, e.display_name) for e in self.user.entities.list("person"))
        facts = {
            subject: sorted(
                (f.id, f.subject, f.predicate, f.value, f.object, f.pinned)
                for f in self.user.facts.lookup("self" if subject == self.self_id else subject)
            )
            for subject in [self.self_id, *(i for i, _ in people)]
        }
        docs = {
            c: sorted((d.id, d.key, d.title, d.body) for d in self.user.documents.list(c)) for c in self.collections
        }
        return {"people": people, "facts": facts, "docs": docs}

    def expected(self, world: World) -> dict[str, Any]:
        live = sorted(
            i for i, e in world.entities.items() if i != self.self_id and not e.deleted and e.merged_into is None
        )
        people = [(i, world.entities[i].name) for i in live]
        facts = {}
        for subject in [self.self_id, *live]:
            members = world.members(subject)
            facts[subject] = sorted(
                (i, f.subject, f.predicate, f.value, f.object, f.pinned)
                for i, f in world.facts.items()
                if f.current and f.subject in members
            )
        docs = {
            c: sorted((i, d.key, d.title, d.body) for i, d in world.docs.items() if d.collection == c and not d.deleted)
            for c in self.collections
        }
        return {"people": people, "facts": facts, "docs": docs}

    # ------------------------------------------------------------------ facts

    def _subject(self, pick: int | None) -> int:
        return self.self_id if pick is None else self.entity_ids[pick % len(self.entity_ids)]

    def _put(
        self, subject: int, predicate: str, cardinality: str, value: Any, obj: int | None, run: str | None
    ) -> None:
        world = self.world()
        subject_arg: str | int = "self" if subject == self.self_id else subject
        canonical = world.canonical(subject)
        target = None if obj is None else world.canonical(obj)
        if canonical is None or (obj is not None and target is None):
            self.expect_refusal(
                KnowledgeNotFoundError,
                lambda: self.user.facts.put(predicate=predicate, subject=subject_arg, value=value, object=obj),
            )
            return
        slot = world.slot(canonical, predicate)
        result = self.user.facts.put(predicate=predicate, subject=subject_arg, value=value, object=obj, run_id=run)
        for i in slot:
            held = world.facts[i]
            same_object = held.object is None if target is None else world.canonical(held.object or 0) == target
            if held.value == value and same_object:
                assert (result.status, result.id) == ("duplicate", i)
                return
        assert result.status == "applied"
        replaced = slot if cardinality == "one" else []
        new = MFact(canonical, predicate, value, target, pinned=subject == self.self_id)
        self.record(result.change_id, run, [("fact", result.id, new), *(("fact.current", i, False) for i in replaced)])
        self.fact_ids.append(result.id)

    @rule(
        predicate=st.sampled_from(sorted(CARDINALITY)),
        value=st.sampled_from(VALUES),
        person=st.none() | picks,
        run=runs,
    )
    def put_value(self, predicate: str, value: str, person: int | None, run: str | None) -> None:
        self._put(self._subject(person), predicate, CARDINALITY[predicate], value, None, run)

    @rule(predicate=st.sampled_from(sorted(RELATIONS)), person=st.none() | picks, other=picks, run=runs)
    def put_relation(self, predicate: str, person: int | None, other: int, run: str | None) -> None:
        target = self.entity_ids[other % len(self.entity_ids)]
        if target == self.self_id:
            return
        self._put(self._subject(person), predicate, RELATIONS[predicate], None, target, run)

    @precondition(lambda self: self.fact_ids)
    @rule(pick=picks, run=runs)
    def retract(self, pick: int, run: str | None) -> None:
        fact_id = self.fact_ids[pick % len(self.fact_ids)]
        world = self.world()
        held = world.facts.get(fact_id)
        # a fact whose writing was undone is not in the replay, but it still names its subject
        subject = held.subject if held is not None else self._written_subject(fact_id)
        if world.canonical(subject) is None:
            # the facts of a deleted entity, current or not, wait untouched for its deletion to be undone
            self.expect_refusal(KnowledgeNotFoundError, lambda: self.user.facts.retract(fact_id))
            return
        current = held.current if held is not None else False
        result = self.user.facts.retract(fact_id, run_id=run)
        if not current:
            assert (result.status, result.change_id) == ("already_retracted", None)
            return
        assert result.status == "retracted"
        self.record(result.change_id, run, [("fact.current", fact_id, False)])

    def _written_subject(self, fact_id: int) -> int:
        """The subject the change that wrote ``fact_id`` gave it, reverted or not."""
        for change in self.log:
            for effect in change.effects:
                if effect[0] == "fact" and effect[1] == fact_id and isinstance(effect[2], MFact):
                    return effect[2].subject
        raise AssertionError(f"no change wrote fact {fact_id}")

    @precondition(lambda self: self.fact_ids)
    @rule(pick=picks, pinned=st.booleans())
    def pin(self, pick: int, pinned: bool) -> None:
        fact_id = self.fact_ids[pick % len(self.fact_ids)]
        held = self.world().facts.get(fact_id)
        was = held.pinned if held is not None else self.user.facts.get(fact_id).pinned
        result = self.user.facts.pin(fact_id, pinned)
        if was == pinned:
            assert result.change_id is None
            return
        self.record(result.change_id, None, [("fact.pinned", fact_id, pinned)])

    # ------------------------------------------------------------------ entities

    @rule(name=st.sampled_from(NAMES), run=runs)
    def resolve_or_create(self, name: str, run: str | None) -> None:
        world = self.world()
        hits = sorted(
            {c for i, e in world.entities.items() if e.name == name and (c := world.canonical(i)) is not None}
        )
        found = self.user.entities.resolve(name=name, create=True, run_id=run)
        assert found is not None
        if hits:
            assert found.id == hits[0]
            return
        [latest] = self.changes.list(limit=1)
        assert (latest.op, latest.target_id) == ("entities.create", found.id)
        self.record(latest.id, run, [("entity", found.id, name)])
        self.entity_ids.append(found.id)

    @rule(keep=picks, merged=picks, run=runs)
    def merge(self, keep: int, merged: int, run: str | None) -> None:
        world = self.world()
        a, b = self.entity_ids[keep % len(self.entity_ids)], self.entity_ids[merged % len(self.entity_ids)]
        ca, cb = world.canonical(a), world.canonical(b)
        if ca is None or cb is None:
            self.expect_refusal(KnowledgeNotFoundError, lambda: self.user.entities.merge(keep=a, merge=b))
        elif ca == cb or self.self_id in (ca, cb):
            self.expect_refusal(KnowledgeValidationError, lambda: self.user.entities.merge(keep=a, merge=b))
        else:
            change_id = self.core.entities.merge(actor=USER, keep=a, merge=b, run_id=run)
            self.record(change_id, run, [("entity.merged_into", cb, ca)])

    @rule(pick=picks, run=runs)
    def delete_entity(self, pick: int, run: str | None) -> None:
        world = self.world()
        entity_id = self.entity_ids[pick % len(self.entity_ids)]
        canonical = world.canonical(entity_id)
        if canonical is None:
            self.expect_refusal(KnowledgeNotFoundError, lambda: self.user.entities.delete(entity_id))
            return
        if canonical == self.self_id:
            self.expect_refusal(KnowledgeValidationError, lambda: self.user.entities.delete(entity_id))
            return
        change_id = self.core.entities.delete(actor=USER, entity_id=entity_id, run_id=run)
        members = world.members(canonical)
        relations = [i for i, f in world.facts.items() if f.current and f.object in members]
        self.record(change_id, run, [("entity.deleted", canonical), *(("fact.current", i, False) for i in relations)])

    # ------------------------------------------------------------------ documents

    def _doc(self, pick: int) -> int:
        return self.doc_ids[pick % len(self.doc_ids)]

    def _live(self, world: World, doc_id: int) -> MDoc | None:
        doc = world.docs.get(doc_id)
        return None if doc is None or doc.deleted else doc

    @rule(
        where=st.integers(0, 1),
        key=st.none() | st.sampled_from(KEYS),
        title=st.sampled_from(TEXTS),
        body=st.sampled_from(TEXTS),
        run=runs,
    )
    def upsert(self, where: int, key: str | None, title: str, body: str, run: str | None) -> None:
        world = self.world()
        collection = self.collections[where]
        existing = [
            i for i, d in world.docs.items() if not d.deleted and d.collection == collection and key and d.key == key
        ]
        result = self.user.documents.upsert(collection=collection, key=key, title=title, body=body, run_id=run)
        if existing:
            [doc_id] = existing
            held = world.docs[doc_id]
            if (held.title, held.body) == (title, body):
                assert (result.status, result.id) == ("unchanged", doc_id)
                return
            assert (result.status, result.id) == ("updated", doc_id)
            self.record(result.change_id, run, [("doc", doc_id, replace(held, title=title, body=body))])
            return
        assert result.status == "created"
        self.record(result.change_id, run, [("doc", result.id, MDoc(collection, key, title, body))])
        self.doc_ids.append(result.id)

    @precondition(lambda self: self.doc_ids)
    @rule(pick=picks, title=st.sampled_from(TEXTS), body=st.sampled_from(TEXTS), run=runs)
    def update_by_id(self, pick: int, title: str, body: str, run: str | None) -> None:
        doc_id = self._doc(pick)
        held = self._live(self.world(), doc_id)
        if held is None:
            self.expect_refusal(
                KnowledgeNotFoundError, lambda: self.user.documents.upsert(id=doc_id, title=title, body=body)
            )
            return
        result = self.user.documents.upsert(id=doc_id, title=title, body=body, run_id=run)
        if (held.title, held.body) == (title, body):
            assert result.status == "unchanged"
            return
        assert result.status == "updated"
        self.record(result.change_id, run, [("doc", doc_id, replace(held, title=title, body=body))])

    @precondition(lambda self: self.doc_ids)
    @rule(pick=picks, run=runs)
    def delete_document(self, pick: int, run: str | None) -> None:
        doc_id = self._doc(pick)
        held = self._live(self.world(), doc_id)
        if held is None:
            self.expect_refusal(KnowledgeNotFoundError, lambda: self.user.documents.delete(doc_id))
            return
        change_id = self.core.documents.delete(actor=USER, doc_id=doc_id, run_id=run)
        self.record(change_id, run, [("doc", doc_id, replace(held, deleted=True))])

    @precondition(lambda self: self.doc_ids)
    @rule(pick=picks, where=st.integers(0, 1), run=runs)
    def move_document(self, pick: int, where: int, run: str | None) -> None:
        doc_id = self._doc(pick)
        held = self._live(self.world(), doc_id)
        collection = self.collections[where]
        if held is None:
            self.expect_refusal(KnowledgeNotFoundError, lambda: self.user.documents.move(doc_id, collection=collection))
            return
        if held.key is not None:
            self.expect_refusal(
                KnowledgeValidationError, lambda: self.user.documents.move(doc_id, collection=collection)
            )
            return
        change_id = self.core.documents.move(actor=USER, doc_id=doc_id, collection_id=collection, run_id=run)
        if held.collection == collection:
            assert change_id is None, "a move to where the document is records no change"
            return
        self.record(change_id, run, [("doc", doc_id, replace(held, collection=collection))])

    # ------------------------------------------------------------------ conflicts

    @rule(value=st.sampled_from(VALUES), run=runs)
    def assistant_puts_a_city(self, value: str, run: str | None) -> None:
        """The assistant writes the user's city: blocked (conflict) while the user's own value stands."""
        world = self.world()
        slot = world.slot(self.self_id, "location.home.city")
        result = self.core.facts.put(
            actor=ASSISTANT, predicate="location.home.city", value=value, run_id=run, limits=DailyLimits()
        )
        if any(world.facts[i].value == value for i in slot):
            assert result.status == "duplicate"
            return
        users = [i for i in slot if world.facts[i].origin == "user"]
        if users:
            assert (result.status, result.id) == ("conflict", users[0])
            assert result.change_id is not None
            self.log.append(MChange(result.change_id, run, [], conflict=(users[0], value)))
            self.fresh = result.change_id
            return
        assert result.status == "applied"
        new = MFact(self.self_id, "location.home.city", value, None, pinned=False, origin="assistant")
        self.record(result.change_id, run, [("fact", result.id, new), *(("fact.current", i, False) for i in slot)])
        self.fact_ids.append(result.id)

    @precondition(lambda self: any(c.conflict for c in self.log))
    @rule(pick=picks, take=st.sampled_from(["theirs", "mine"]))
    def resolve(self, pick: int, take: str) -> None:
        conflicts = [c for c in self.log if c.conflict]
        conflict = conflicts[pick % len(conflicts)]
        if not conflict.pending:
            self.expect_refusal(KnowledgeValidationError, lambda: self.changes.resolve(conflict.id, take=take))
            return
        outcome = self.changes.resolve(conflict.id, take=take)
        effects: list[Effect] = []
        if take == "theirs":
            assert conflict.conflict is not None and outcome.fact_id is not None
            world = self.world()
            slot = world.slot(self.self_id, "location.home.city")
            new = MFact(self.self_id, "location.home.city", conflict.conflict[1], None, pinned=True)
            effects = [("fact", outcome.fact_id, new), *(("fact.current", i, False) for i in slot)]
            self.fact_ids.append(outcome.fact_id)
        self.record(outcome.change_id, None, effects)
        conflict.resolved_by = self.log[-1]

    # ------------------------------------------------------------------ undo

    def _revert(self, targets: list[MChange], call: Any, *, must: bool = False) -> None:
        pending = [c for c in targets if c.pending]
        try:
            result = call()
        except KnowledgeNotFoundError:
            # a run id no change carries names no run (K-CHG-03, OD-K08): nothing to undo, nothing moved
            assert not targets, "a run with changes was not found"
            return
        except RevertError:
            # refused: the oracle keeps every change applied, so the invariant checks nothing moved
            assert not must, "the latest change could not be undone"
            return
        finally:
            self.fresh = None
        if not pending:
            assert (result.status, result.count) == ("already_reverted", 0)
            return
        assert (result.status, result.count) == ("reverted", len(pending))
        for change in pending:
            change.reverted = True

    @precondition(lambda self: self.log)
    @rule(pick=picks)
    def revert_change(self, pick: int) -> None:
        change = self.log[pick % len(self.log)]
        self._revert([change], lambda: self.changes.revert(change.id))

    @rule(run=st.sampled_from(RUNS[1:]))
    def revert_run(self, run: str) -> None:
        self._revert([c for c in self.log if c.run == run], lambda: self.changes.revert(run_id=run))

    @precondition(lambda self: self.fresh is not None)
    @rule()
    def revert_latest(self) -> None:
        [change] = [c for c in self.log if c.id == self.fresh]
        self._revert([change], lambda: self.changes.revert(change.id), must=True)

    # ------------------------------------------------------------------ the property

    @invariant()
    def the_store_holds_the_replay_of_the_applied_changes(self) -> None:
        world = self.world()
        assert self.stored() == self.replayed(world)
        for fact in world.facts.values():
            if fact.current and fact.object is not None and world.canonical(fact.subject) is not None:
                assert world.canonical(fact.object) is not None, "a relation points at an entity that is gone"

    @precondition(lambda self: not self.looked and len(self.log) >= 4)
    @rule()
    def look_through_the_api(self) -> None:
        """People, facts and documents read through the host API match the oracle too.

        At most once per example, once there is some history: it reads through many queries.
        """
        self.looked = True
        visible = self.visible()
        assert visible == self.expected(self.world())
        for shown in visible["facts"].values():
            for *_, obj, _pinned in shown:
                if obj is not None:
                    self.user.entities.get(obj)


def test_undo_keeps_the_state_equal_to_the_replay_of_the_applied_changes(bench: Bench) -> None:
    """And item 2 for relations: K-CHG-03, OD-K44."""
    UndoMachine.bench = bench
    run_state_machine_as_test(
        UndoMachine,
        settings=settings(
            max_examples=500,
            deadline=None,
            stateful_step_count=12,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
