"""The ref audit: no ``ctx.knowledge`` result carries an internal id or another gem's ref (K-CON-05/06).

The ``ref_audit`` fixture (``conftest.py``) records every value any ``ctx.knowledge`` method returns in
this folder's tests and checks them at teardown. These tests check the checker itself, and run one
scenario that calls every method of every audited part with two gems installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gem_fixtures import AuditRecord, audit_problems, gem_ctx

from notochord import Space
from notochord.gems.api.results import ChangeView, EntityView, FactView, IdentifierView, PutResult, RevertResult
from notochord.gems.refs import RefCodec

pytestmark = pytest.mark.anyio

MINE, THEIRS = RefCodec(b"\x11" * 32), RefCodec(b"\x22" * 32)

EVERYTHING = [
    "facts.read:self:pref.food.*",
    "facts.write:self:pref.food.*",
    "facts.read:person:relation.colleague",
    "facts.write:person:relation.colleague",
    "facts.read:self:relation.colleague",
    "facts.write:self:relation.colleague",
    "entities.read:person",
    "entities.write:person",
    "changes.manage",
]


def _problems(result: object) -> list[str]:
    return audit_problems(AuditRecord("mine", "test", result, MINE, {"theirs": THEIRS}))


def test_the_audit_accepts_results_made_with_the_calling_gem_key() -> None:
    fact = FactView(
        ref=MINE.encode("fact", 7),
        predicate="pref.food.like",
        value={"count": 3, "grams": 200},
        object=MINE.encode("ent", 8),
        valid_from="2026-09-29T08:00:00.000Z",
    )
    assert _problems([fact, RevertResult(status="reverted", count=2)]) == []


def test_the_audit_catches_another_gem_ref_a_forged_ref_and_a_nested_one() -> None:
    entity = EntityView(
        ref=THEIRS.encode("ent", 1),
        kind="person",
        display_name="Kim",
        identifiers=(IdentifierView(type="name", value="chg_forged"),),
    )
    problems = _problems(entity)
    assert any("$.ref" in p and "does not decode with the calling gem's key" in p for p in problems)
    assert any("$.identifiers[0].value" in p for p in problems)


def test_the_audit_catches_a_ref_that_two_gems_can_decode() -> None:
    shared = MINE.encode("chg", 5)
    problems = audit_problems(AuditRecord("mine", "test", {"ref": shared}, MINE, {"twin": MINE}))
    assert problems == [f"mine test $.ref: {shared} also decodes with gem twin's key"]


def test_the_audit_catches_id_fields_and_stray_integers() -> None:
    problems = _problems([{"id": "x"}, {"ref": MINE.encode("ent", 1), "entityId": 12}, 7])
    assert any("a field named id" in p for p in problems)
    assert any("$[1].entityId: integer 12" in p for p in problems)
    assert any("$[2]: integer 7" in p for p in problems)
    assert _problems({"created": True, "status": "added"}) == []


async def test_every_method_of_two_gems_passes_the_audit(
    space: Space, gems_root: Path, ref_audit: list[AuditRecord]
) -> None:
    """K-CON-05, K-CON-06: a scenario touching each audited method, checked by the fixture."""
    space.user.facts.put(predicate="pref.food.like", value="stew")
    one = gem_ctx(space, gems_root, "audit-one", EVERYTHING)
    two = gem_ctx(space, gems_root, "audit-two", EVERYTHING)
    for ctx in (one, two):
        k = ctx.knowledge
        assert k is not None
        kim = await k.entities.resolve({"email": "kim@example.nl", "name": "Kim"}, create=True)
        assert kim is not None
        await k.entities.add_identifier(kim.ref, "phone", "+31 6 1234 5678")
        await k.entities.get(kim.ref)
        await k.entities.list("person", query="kim")
        put = await k.facts.put(subject=kim.ref, predicate_hint="relation.colleague", value="Sam")
        await k.facts.put(predicate_hint="relation.colleague", object=kim.ref, run_id="batch")
        await k.facts.lookup(kim.ref, "relation")
        await k.facts.lookup("self")
        await k.profile.get()
        changes = await k.changes.list()
        await k.facts.retract(put.ref)
        await k.changes.revert(changes[-1].ref)
        await k.changes.revert({"runId": "batch"})
    methods = {r.method for r in ref_audit}
    assert methods == {
        "entities.resolve",
        "entities.add_identifier",
        "entities.get",
        "entities.list",
        "facts.put",
        "facts.lookup",
        "facts.retract",
        "profile.get",
        "changes.list",
        "changes.revert",
    }
    assert {r.gem_id for r in ref_audit} == {"audit-one", "audit-two"}
    assert all(set(r.others) == {"audit-one", "audit-two"} - {r.gem_id} for r in ref_audit)
    assert [p for r in ref_audit for p in audit_problems(r)] == []


def test_result_models_have_no_id_field() -> None:
    """K-CON-05: the result models themselves carry refs only."""
    for model in (FactView, EntityView, ChangeView, PutResult):
        assert "id" not in model.model_fields
