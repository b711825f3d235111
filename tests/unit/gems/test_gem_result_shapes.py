"""Result shapes: ``model_dump(by_alias=True)`` is exactly the documented JSON (OD-K01, OD-K02 as
overridden by DESIGN §4; EX-03…EX-08, EX-13), and results also read like the seed's plain objects.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gem_fixtures import gem_ctx

from notochord import Space

pytestmark = pytest.mark.anyio

PERMISSIONS = [
    "facts.read:self:location.home.*",
    "facts.write:self:location.home.*",
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
    "entities.read:person",
    "entities.write:person",
]


async def test_the_documented_shapes(space: Space, gems_root: Path) -> None:
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    ctx = gem_ctx(space, gems_root, "shapes", PERMISSIONS, run_id="nightly-2026-09-29")
    k = ctx.knowledge
    assert k is not None

    # EX-03
    assert [p.model_dump(by_alias=True) for p in await k.profile.get("location.home")] == [
        {"predicate": "location.home.city", "value": "Utrecht"}
    ]

    # EX-07 and EX-08
    resolved = await k.entities.resolve({"email": "zhangsan@acme.nl", "name": "Zhang San"}, {"create": True})
    assert resolved is not None
    assert set(resolved.model_dump(by_alias=True)) == {"ref", "kind", "displayName", "created"}
    entity = await k.entities.get(resolved.ref)
    assert set(entity.model_dump(by_alias=True)) == {"ref", "kind", "displayName", "identifiers"}
    assert entity.model_dump(by_alias=True)["identifiers"][0] == {"type": "email", "value": "zhangsan@acme.nl"}
    [listed] = await k.entities.list("person", {"query": "zhang"})
    assert listed.model_dump(by_alias=True) == entity.model_dump(by_alias=True)
    added = await k.entities.addIdentifier(resolved.ref, "phone", "+31 6 1234 5678")
    assert added.model_dump(by_alias=True) == {"status": "added"}

    # EX-05
    put = await k.facts.put(
        {
            "subject": "self",
            "predicateHint": "pref.food.like",
            "description": "Dishes the user likes",
            "value": "Tomato beef stew",
            "object": resolved.ref,
            "sourceRef": "record/123",
            "runId": "nightly-2026-09-29",
        }
    )
    assert put.model_dump(by_alias=True) == {"status": "applied", "ref": put.ref, "predicate": "pref.food.like"}

    # EX-04
    [fact] = await k.facts.lookup("self", "pref.food")
    assert fact.model_dump(by_alias=True) == {
        "ref": put.ref,
        "predicate": "pref.food.like",
        "value": "Tomato beef stew",
        "object": resolved.ref,
        "validFrom": "2026-09-29T08:00:00.000Z",
    }

    # EX-06
    assert (await k.facts.retract(put.ref)).model_dump(by_alias=True) == {"status": "retracted"}

    # EX-13
    changes = await k.changes.list({"since": "2026-09-28"})
    assert [set(c.model_dump(by_alias=True)) for c in changes] == [
        {"ref", "runId", "actor", "op", "summary", "status", "proposed", "createdAt"}
    ] * 4
    assert {c.run_id for c in changes} == {"nightly-2026-09-29"}
    reverted = await k.changes.revert({"runId": "nightly-2026-09-29"})
    assert reverted.model_dump(by_alias=True) == {"status": "reverted", "count": 4}


async def test_results_read_like_plain_objects_with_either_spelling(space: Space, gems_root: Path) -> None:
    """OD-K01/K02 (DESIGN §4): ``fact["validFrom"]`` and ``fact["valid_from"]`` both work."""
    ctx = gem_ctx(space, gems_root, "plain", PERMISSIONS)
    k = ctx.knowledge
    assert k is not None
    await k.facts.put(predicate_hint="pref.food.like", value="stew")
    [fact] = await k.facts.lookup("self", "pref.food")
    assert fact["validFrom"] == fact["valid_from"] == fact.valid_from
    with pytest.raises(KeyError):
        fact["id"]
    with pytest.raises(Exception, match="frozen"):
        fact.value = "soup"


async def test_snake_case_keywords_and_camel_case_objects_are_the_same_call(space: Space, gems_root: Path) -> None:
    """OD-K01 (DESIGN §4): the second spelling of the same write is a duplicate of the first."""
    ctx = gem_ctx(space, gems_root, "spelling", PERMISSIONS)
    k = ctx.knowledge
    assert k is not None
    first = await k.facts.put(predicate_hint="pref.food.like", value="stew", source_ref="r/1", run_id="b")
    second = await k.facts.put({"predicateHint": "pref.food.like", "value": "stew", "sourceRef": "r/1", "runId": "b"})
    assert (first.status, second.status, second.ref) == ("applied", "duplicate", first.ref)
