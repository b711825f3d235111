"""Every ``ctx.knowledge`` method asks its permission question, and the table below pins them all.

K-PERM-04…19, OD-K06, K-SRCH-03: the facade classes are walked by introspection,
so a new public method without an entry here fails. Each entry names the check the method makes and
runs it twice against a real space: a gem with that one switch off is refused (``lacks knowledge
permission <the narrowest permission>``), or for a query method sees nothing; the same gem with the
switch on succeeds.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from notochord import KnowledgePermissionError, Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

Call = Callable[[KnowledgeApi, Space], Awaitable[Any]]


@dataclass(frozen=True)
class Case:
    check: str
    """The permission the call needs (the one switched off for the refusal)."""
    requested: Sequence[str]
    """What the gem requests; everything but ``check`` is on in both runs."""
    call: Call
    query: bool = False
    """A query method leaves out what the gem may not see instead of refusing."""


_serial = itertools.count()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _install(space: Space, root: Path, requested: Sequence[str], on: Sequence[str]) -> KnowledgeApi:
    gem_id = f"table-{next(_serial)}"
    folder = root / gem_id
    (folder / "tools").mkdir(parents=True)
    manifest = {
        "id": gem_id,
        "name": gem_id,
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": list(requested)}},
        "tools": [{"name": "main", "entry": "tools/main.py", "permissions": {"knowledge": True}}],
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "tools" / "main.py").write_text("async def run(input, ctx):\n    return None\n", encoding="utf-8")
    space.gems.install(folder)
    if on:
        space.gems.set_permissions(gem_id, list(on), True)
    knowledge = space.gems.context(gem_id).knowledge
    assert knowledge is not None
    return knowledge


def _person(space: Space) -> int:
    found = space.user.entities.resolve(email="li@example.org", name="Li", create=True)
    assert found is not None
    return found.id


def _diary_doc(space: Space) -> int:
    return space.user.documents.upsert(collection="diary", key="monday", title="Monday", body="Rain all day").id


async def _profile_get(k: KnowledgeApi, space: Space) -> Any:
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    return await k.profile.get()


async def _facts_lookup(k: KnowledgeApi, space: Space) -> Any:
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    return await k.facts.lookup("self", "location")


async def _facts_put(k: KnowledgeApi, space: Space) -> Any:
    return await k.facts.put(predicate_hint="pref.food.like", value="stew")


async def _facts_retract(k: KnowledgeApi, space: Space) -> Any:
    space.user.facts.put(predicate="pref.food.like", value="stew")
    (fact,) = await k.facts.lookup("self", "pref.food")
    return await k.facts.retract(fact.ref)


async def _entities_resolve(k: KnowledgeApi, space: Space) -> Any:
    _person(space)
    found = await k.entities.resolve({"email": "li@example.org"})
    assert found is not None
    return found


async def _resolved_ref(k: KnowledgeApi, space: Space) -> str:
    _person(space)
    found = await k.entities.resolve({"email": "li@example.org"})
    assert found is not None
    return found.ref


async def _entities_get(k: KnowledgeApi, space: Space) -> Any:
    return await k.entities.get(await _resolved_ref(k, space))


async def _entities_list(k: KnowledgeApi, space: Space) -> Any:
    _person(space)
    return await k.entities.list("person")


async def _entities_add_identifier(k: KnowledgeApi, space: Space) -> Any:
    return await k.entities.add_identifier(await _resolved_ref(k, space), "phone", "+31 6 1234 5678")


async def _entities_add_identifier_seed(k: KnowledgeApi, space: Space) -> Any:
    return await k.entities.addIdentifier(await _resolved_ref(k, space), "phone", "+31 6 1234 5678")


async def _changes_list(k: KnowledgeApi, space: Space) -> Any:
    space.user.facts.put(predicate="pref.food.like", value="stew")
    return await k.changes.list()


async def _changes_revert(k: KnowledgeApi, space: Space) -> Any:
    change_id = space.user.facts.put(predicate="pref.food.like", value="stew").change_id
    assert change_id is not None
    # the gem learns the ref from changes.list when it may; the refusal must not depend on that
    return await k.changes.revert(k.refs.encode("chg", change_id))


async def _collections_list(k: KnowledgeApi, space: Space) -> Any:
    return [c for c in await k.collections.list() if c.builtin == "diary"]


async def _collections_create(k: KnowledgeApi, space: Space) -> Any:
    return await k.collections.create("Recipes")


async def _documents_upsert(k: KnowledgeApi, space: Space) -> Any:
    return await k.documents.upsert(collection="diary", key="tuesday", title="Tuesday", body="Sun")


async def _documents_get(k: KnowledgeApi, space: Space) -> Any:
    return await k.documents.get(k.refs.encode("doc", _diary_doc(space)))


async def _documents_get_by_key(k: KnowledgeApi, space: Space) -> Any:
    _diary_doc(space)
    found = await k.documents.get_by_key("diary", "monday")
    assert found is not None
    return found


async def _documents_get_by_key_seed(k: KnowledgeApi, space: Space) -> Any:
    _diary_doc(space)
    found = await k.documents.getByKey("diary", "monday")
    assert found is not None
    return found


async def _documents_list(k: KnowledgeApi, space: Space) -> Any:
    _diary_doc(space)
    return await k.documents.list("diary")


async def _documents_delete(k: KnowledgeApi, space: Space) -> Any:
    return await k.documents.delete(k.refs.encode("doc", _diary_doc(space)))


async def _search(k: KnowledgeApi, space: Space) -> Any:
    _diary_doc(space)
    return await k.search("")


async def _run(k: KnowledgeApi, space: Space) -> Any:
    return await k.run(lambda: "the gem's own work")


HOME = ["facts.read:self:location.home.*"]
FOOD = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*"]
PERSON_READ = ["entities.resolve:person", "entities.read:person"]
PERSON_WRITE = ["entities.resolve:person", "entities.write:person"]

TABLE: dict[str, Case] = {
    "profile.get": Case("facts.read:self:location.home.*", HOME, _profile_get, query=True),
    "facts.lookup": Case("facts.read:self:location.home.*", HOME, _facts_lookup, query=True),
    "facts.put": Case("facts.write:self:pref.food.*", FOOD, _facts_put),
    "facts.retract": Case("facts.write:self:pref.food.*", [*FOOD, "changes.manage"], _facts_retract),
    "entities.resolve": Case("entities.resolve:person", ["entities.resolve:person"], _entities_resolve),
    "entities.get": Case("entities.read:person", PERSON_READ, _entities_get),
    "entities.list": Case("entities.read:person", PERSON_READ, _entities_list),
    "entities.add_identifier": Case("entities.write:person", PERSON_WRITE, _entities_add_identifier),
    "entities.addIdentifier": Case("entities.write:person", PERSON_WRITE, _entities_add_identifier_seed),
    "changes.list": Case("changes.manage", [*FOOD, "changes.manage"], _changes_list, query=True),
    "changes.revert": Case("changes.manage", [*FOOD, "changes.manage"], _changes_revert),
    "collections.list": Case("collections.read:diary", ["collections.read:diary"], _collections_list, query=True),
    "collections.create": Case("collections.create", ["collections.create"], _collections_create),
    "documents.upsert": Case("collections.write:diary", ["collections.write:diary"], _documents_upsert),
    "documents.get": Case("collections.read:diary", ["collections.read:diary"], _documents_get),
    "documents.get_by_key": Case("collections.read:diary", ["collections.read:diary"], _documents_get_by_key),
    "documents.getByKey": Case("collections.read:diary", ["collections.read:diary"], _documents_get_by_key_seed),
    "documents.list": Case("collections.read:diary", ["collections.read:diary"], _documents_list),
    "documents.delete": Case(
        "collections.write:diary", ["collections.write:diary", "changes.manage"], _documents_delete
    ),
    "search": Case("collections.read:diary", ["collections.read:diary"], _search, query=True),
}
NO_CHECK: dict[str, str] = {
    "run": "runs the gem's own function in a worker thread; it reaches nothing of the user's",
}
# What a refusal names: the narrowest permission for the one object, not the broad grant (OD-K06).
REFUSAL_NAMES: dict[str, str] = {
    "facts.put": "facts.write:self:pref.food.like",
    "facts.retract": "facts.write:self:pref.food.like",
}


def _public_methods() -> set[str]:
    """``ctx.knowledge``'s public coroutine methods, found by walking its facade classes."""
    found: set[str] = set()
    unused: Any = None  # the walk only looks at the facades, it calls nothing
    probe = KnowledgeApi(core=unused, gem_id="probe", run_id="run-probe", refs=unused, grants=unused, scope=unused)
    for name, value in inspect.getmembers(type(probe)):
        if not name.startswith("_") and inspect.iscoroutinefunction(value):
            found.add(name)
    for part_name, part in vars(probe).items():
        if part_name.startswith("_") or not type(part).__name__.endswith("Api"):
            continue
        for name, value in inspect.getmembers(type(part)):
            if not name.startswith("_") and inspect.iscoroutinefunction(value):
                found.add(f"{part_name}.{name}")
    return found


def test_every_ctx_knowledge_method_has_an_entry_in_the_table() -> None:
    methods = _public_methods()
    assert "facts.put" in methods and "search" in methods  # the walk finds the facades
    assert methods == set(TABLE) | set(NO_CHECK), (
        "ctx.knowledge methods and the permission table differ: "
        f"missing {sorted(methods - set(TABLE) - set(NO_CHECK))}, stale {sorted(set(TABLE) - methods)}"
    )


@pytest.mark.parametrize("method", sorted(TABLE))
async def test_the_method_is_refused_without_its_permission(method: str, space: Space, tmp_path: Path) -> None:
    case = TABLE[method]
    on = [p for p in case.requested if p != case.check]
    knowledge = _install(space, tmp_path, case.requested, on)
    if case.query:
        assert not await case.call(knowledge, space)
        return
    with pytest.raises(KnowledgePermissionError) as raised:
        await case.call(knowledge, space)
    assert raised.value.permission == REFUSAL_NAMES.get(method, case.check)


@pytest.mark.parametrize("method", sorted(TABLE))
async def test_the_method_succeeds_with_its_permission(method: str, space: Space, tmp_path: Path) -> None:
    case = TABLE[method]
    knowledge = _install(space, tmp_path, case.requested, case.requested)
    result = await case.call(knowledge, space)
    assert result  # a query sees what the switch allows; a call on one object returns its result


async def test_a_method_without_a_check_reaches_nothing_of_the_users(space: Space, tmp_path: Path) -> None:
    knowledge = _install(space, tmp_path, ["collections.create"], [])
    assert await _run(knowledge, space) == "the gem's own work"
