"""Property: ``profile.get`` and ``facts.lookup`` return exactly what the switched-on grants allow.

Random grant sets (subsets of one manifest's ``facts.read``/``facts.write`` permissions for ``self``
and ``person``, over prefixes, full predicates and wildcards) meet random facts the user wrote about
themselves (pinned by default, some unpinned) and about people, plus facts the assistant inferred.
A plain-Python oracle says which facts each query may see: never one more, never one fewer
(K-FACT-01…09, K-PERM-06, K-PERM-21, K-PERM-24, OD-K11, OD-K15, OD-K30).

The examples share one space and one installed gem (switching is cheap); see :class:`Bench` for how
they are kept apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gem_fixtures import packaged_manifest, write_manifest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import notochord
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

SCOPES = (
    "location.home.*",
    "location.home.city",
    "location.work.*",
    "pref.food.*",
    "pref.food.like",
    "pref.food.like.*",
    "pref.communication.*",
    "relation.colleague",
    "relation.friend",
    "work.company",
    "x.misc.*",
    "x.misc.note",
)
REQUESTED = tuple(
    f"facts.{action}:{subject}:{scope}"
    for subject in ("self", "person")
    for scope in SCOPES
    for action in ("read", "write")
)
ALWAYS_ON = ("entities.resolve:person",)

PREDICATES = {
    # name: cardinality (new names are added by the user's write with cardinality many)
    "location.home.city": "one",
    "location.home.address": "one",
    "location.homepage": "many",
    "location.work.city": "one",
    "pref.food.like": "many",
    "pref.food.like.spicy": "many",
    "pref.food.dislike": "many",
    "pref.foods": "many",
    "pref.communication.style": "one",
    "relation.colleague": "many",
    "relation.friend": "many",
    "work.company": "one",
    "x.misc.note": "many",
    "x.misc": "many",
    "health.allergy": "many",
}
MANY = tuple(sorted(p for p, c in PREDICATES.items() if c == "many"))
VALUES = ("a", "b", "c")
QUERY_PREFIXES: tuple[str | None, ...] = (
    None,
    "location",
    "location.home",
    "location.home.city",
    "pref",
    "pref.food",
    "pref.food.like",
    "relation",
    "work",
    "x.misc",
    "health",
)
PEOPLE = ("Person Zero", "Person One")


@dataclass
class Oracle:
    """Current facts as a plain model: ``(subject, predicate) -> [(value, pinned)]``."""

    current: dict[tuple[str, str], list[tuple[str, bool]]] = field(default_factory=dict)

    def put(self, subject: str, predicate: str, value: str, *, pinned: bool) -> None:
        values = self.current.setdefault((subject, predicate), [])
        if any(v == value for v, _ in values):
            return  # duplicate: nothing is written, the existing pin stays
        if PREDICATES[predicate] == "one":
            values.clear()
        values.append((value, pinned))

    def visible(
        self, subject: str, grants: set[str], prefix: str | None, *, pinned_only: bool
    ) -> list[tuple[str, str]]:
        kind = "self" if subject == "self" else "person"
        reads = [g.split(":", 2)[2] for g in grants if g.startswith(f"facts.read:{kind}:")]
        found: list[tuple[str, str]] = []
        for (who, predicate), values in self.current.items():
            if who != subject or not _under(predicate, prefix):
                continue
            if not any(_covers(scope, predicate) for scope in reads):
                continue
            found.extend((predicate, v) for v, pinned in values if pinned or not pinned_only)
        return sorted(found)


def _under(predicate: str, prefix: str | None) -> bool:
    return prefix is None or predicate == prefix or predicate.startswith(prefix + ".")


def _covers(scope: str, predicate: str) -> bool:
    if scope.endswith(".*"):
        base = scope[:-2]
        return predicate == base or predicate.startswith(base + ".")
    return predicate == scope


def _seen(items: Sequence[Any]) -> list[tuple[str, str]]:
    return sorted((item.predicate, item.value) for item in items)


self_facts = st.lists(
    st.tuples(st.sampled_from(sorted(PREDICATES)), st.sampled_from(VALUES), st.booleans()), max_size=10
)
person_facts = st.lists(
    st.tuples(st.sampled_from(range(len(PEOPLE))), st.sampled_from(sorted(PREDICATES)), st.sampled_from(VALUES)),
    max_size=6,
)
inferred_facts = st.lists(st.tuples(st.sampled_from(MANY), st.sampled_from((*VALUES, "d"))), max_size=4)


@dataclass
class Bench:
    """One space with the ``oracle`` gem installed, shared by the examples of one test run.

    Examples stay independent: each writes about people of its own, switches exactly its grants on,
    and retracts every fact about the user it wrote (inferred ones too) before the next begins.
    """

    space: notochord.Space
    switched_on: set[str] = field(default_factory=set)
    examples: itertools.count[int] = field(default_factory=itertools.count)

    def grant_exactly(self, grants: set[str]) -> None:
        for permission in self.switched_on ^ grants:
            self.space.gems.set_permission("oracle", permission, permission in grants)
        self.switched_on = set(grants)

    def forget_the_user(self) -> None:
        for fact in self.space.user.facts.lookup("self", include_inferred=True):
            self.space.user.facts.retract(fact.id)


@pytest.fixture
def bench(space: notochord.Space, gems_root: Path) -> Bench:
    space.gems.install(write_manifest(gems_root, packaged_manifest("oracle", [*REQUESTED, *ALWAYS_ON])))
    for permission in ALWAYS_ON:
        space.gems.set_permission("oracle", permission, True)
    return Bench(space)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grants=st.sets(st.sampled_from(REQUESTED)),
    about_self=self_facts,
    about_people=person_facts,
    inferred=inferred_facts,
    prefixes=st.lists(st.sampled_from(QUERY_PREFIXES), min_size=1, max_size=4, unique=True),
)
async def test_queries_return_exactly_the_facts_the_grants_allow(
    bench: Bench,
    grants: set[str],
    about_self: list[tuple[str, str, bool]],
    about_people: list[tuple[int, str, str]],
    inferred: list[tuple[str, str]],
    prefixes: list[str | None],
) -> None:
    space = bench.space
    example = next(bench.examples)
    names = [f"{name} {example}" for name in PEOPLE]
    oracle = Oracle()
    try:
        people = [space.user.entities.resolve(name=name, create=True) for name in names]
        for predicate, value, default_pin in about_self:
            space.user.facts.put(predicate=predicate, value=value, pin=None if default_pin else False)
            oracle.put("self", predicate, value, pinned=default_pin)
        for index, predicate, value in about_people:
            person = people[index]
            assert person is not None
            space.user.facts.put(predicate=predicate, value=value, subject=person.id)
            oracle.put(names[index], predicate, value, pinned=False)
        for predicate, value in inferred:
            space.as_assistant.facts.put(predicate=predicate, value=value, source="inferred")
        bench.grant_exactly(grants)

        knowledge = space.gems.context("oracle").knowledge
        assert isinstance(knowledge, KnowledgeApi)
        refs = {}
        for name in names:
            resolved = await knowledge.entities.resolve({"name": name})
            assert resolved is not None
            refs[name] = resolved.ref

        for prefix in [None, *prefixes] if None not in prefixes else prefixes:
            assert _seen(await knowledge.profile.get(prefix)) == oracle.visible(
                "self", grants, prefix, pinned_only=True
            ), ("profile.get", prefix)
            assert _seen(await knowledge.facts.lookup("self", prefix)) == oracle.visible(
                "self", grants, prefix, pinned_only=False
            ), ("facts.lookup self", prefix)
            for name in names:
                assert _seen(await knowledge.facts.lookup(refs[name], prefix)) == oracle.visible(
                    name, grants, prefix, pinned_only=False
                ), ("facts.lookup", name, prefix)
    finally:
        bench.forget_the_user()
