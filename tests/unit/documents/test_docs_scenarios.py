"""SPEC §28 scenarios AS-04…AS-07 (the recipe gem of EX-15 with the manifest of EX-01) and AS-12
(the diary example EX-10), run through the gem API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docs_fixtures import RECIPE_PERMISSIONS, dump, knowledge, recipes_manifest, write_manifest

from notochord import KnowledgePermissionError, Space
from notochord.gems.context import GemContext

pytestmark = pytest.mark.anyio


async def recipe_tool(input: dict[str, Any], ctx: GemContext) -> dict[str, Any]:
    """EX-15 in Python: the read-write recipe gem."""
    assert ctx.knowledge is not None
    cols = await ctx.knowledge.collections.list()
    col = next((c for c in cols if c.name == "Recipes"), None) or await ctx.knowledge.collections.create("Recipes")
    fact = await ctx.knowledge.facts.put(
        {"predicateHint": "pref.food.rated", "value": input["dish"], "sourceRef": f"record/{input['id']}"}
    )
    doc = await ctx.knowledge.documents.upsert(
        {"collection": col.ref, "key": input["id"], "title": input["dish"], "body": input["recipe"]}
    )
    return {"fact": fact.status, "doc": doc.status}


def _install_recipes(space: Space, gems_root: Path, *, on: bool) -> None:
    space.gems.install(write_manifest(gems_root, recipes_manifest(), draft=True))
    if on:
        for permission in RECIPE_PERMISSIONS:
            space.gems.set_permission("recipes", permission, True)


STEW = {"id": "1", "dish": "Tomato beef stew", "recipe": "…"}


async def test_as04_recipe_gem_with_every_permission_off(space: Space, gems_root: Path) -> None:
    """AS-04, K-PERM-21/22/23: ``collections.list()`` is ``[]`` and ``create`` throws."""
    space.user.collections.create("Recipes")
    _install_recipes(space, gems_root, on=False)
    ctx = space.gems.context("recipes")
    assert ctx.knowledge is not None
    assert await ctx.knowledge.collections.list() == []
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.create"):
        await ctx.knowledge.collections.create("Recipes")
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.create"):
        await recipe_tool(STEW, ctx)
    assert [c.name for c in space.user.collections.list()] == ["diary", "keep", "Recipes"]


async def test_as05_recipe_gem_saves_a_fact_and_a_document(space: Space, gems_root: Path) -> None:
    """AS-05, K-COL-06, K-COL-10, K-DOC-05, K-FACT-11/24, K-MAN-08."""
    _install_recipes(space, gems_root, on=True)
    assert await recipe_tool(STEW, space.gems.context("recipes")) == {"fact": "applied", "doc": "created"}
    api = knowledge(space, "recipes")
    [recipes] = await api.collections.list()
    assert {k: v for k, v in dump(recipes).items() if k != "ref"} == {
        "name": "Recipes",
        "builtin": None,
        "kind": "gem",
        "canWrite": True,
        "parent": None,
    }
    assert [(f.predicate, f.value) for f in await api.facts.lookup("self", "pref.food")] == [
        ("pref.food.rated", "Tomato beef stew")
    ]
    document = await api.documents.get_by_key(recipes.ref, "1")
    assert document is not None and (document.title, document.body) == ("Tomato beef stew", "…")


async def test_as06_the_same_input_again_changes_nothing(space: Space, gems_root: Path) -> None:
    """AS-06, K-FACT-21, K-DOC-02, K-DOC-03: no second collection, no second document."""
    _install_recipes(space, gems_root, on=True)
    await recipe_tool(STEW, space.gems.context("recipes"))
    assert await recipe_tool(STEW, space.gems.context("recipes")) == {"fact": "duplicate", "doc": "unchanged"}
    api = knowledge(space, "recipes")
    [recipes] = await api.collections.list()
    assert [d.title for d in await api.documents.list(recipes.ref)] == ["Tomato beef stew"]
    assert [c.name for c in space.user.collections.list()] == ["diary", "keep", "Recipes"]


async def test_as07_a_changed_recipe_updates_and_a_new_dish_adds_a_value(space: Space, gems_root: Path) -> None:
    """AS-07, K-DOC-02, K-FACT-24: ``pref.food.rated`` is ``many``, so both dishes stay current."""
    _install_recipes(space, gems_root, on=True)
    await recipe_tool(STEW, space.gems.context("recipes"))
    changed = {**STEW, "recipe": "Brown the beef, add tomatoes, simmer two hours."}
    assert await recipe_tool(changed, space.gems.context("recipes")) == {"fact": "duplicate", "doc": "updated"}
    tofu = {"id": "2", "dish": "Mapo tofu", "recipe": "Silken tofu, doubanjiang, Sichuan pepper."}
    assert await recipe_tool(tofu, space.gems.context("recipes")) == {"fact": "applied", "doc": "created"}
    api = knowledge(space, "recipes")
    assert sorted(f.value for f in await api.facts.lookup("self", "pref.food")) == ["Mapo tofu", "Tomato beef stew"]
    [recipes] = await api.collections.list()
    stew = await api.documents.get_by_key(recipes.ref, "1")
    assert stew is not None and stew.body == changed["recipe"]
    space.index.wait()
    hits = await api.search("simmer tomatoes", {"collections": [recipes.ref]})
    assert hits[0].title == "Tomato beef stew"


EX10 = {
    "collection": "diary",
    "key": "2026-09-29",
    "title": "2026-09-29",
    "body": "# Today\n\n…",
    "meta": {"date": "2026-09-29"},
}


async def test_as12_diary_upsert_twice_then_find_it_by_key_and_by_day(space: Space, gems_root: Path) -> None:
    """AS-12, EX-10, K-DOC-02/03/12, K-SRCH-06/07/08."""
    space.gems.install(
        write_manifest(
            gems_root,
            {
                "id": "diary-gem",
                "name": "Diary",
                "version": "1.0.0",
                "permissions": {"knowledge": {"permissions": ["collections.read:diary", "collections.write:diary"]}},
                "tools": [{"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}}],
            },
        )
    )
    for permission in ("collections.read:diary", "collections.write:diary"):
        space.gems.set_permission("diary-gem", permission, True)
    api = knowledge(space, "diary-gem")
    first = await api.documents.upsert(dict(EX10))
    second = await api.documents.upsert(dict(EX10))
    assert (first.status, second.status, second.ref) == ("created", "unchanged", first.ref)
    found = await api.documents.getByKey("diary", "2026-09-29")
    assert found is not None and (found.ref, found.body, found.meta) == (
        first.ref,
        "# Today\n\n…",
        {"date": "2026-09-29"},
    )
    space.index.wait()
    day = {"from": "2026-09-29", "to": "2026-09-29"}
    hits = await api.search("", {"collections": ["diary"], "timeRange": day})
    assert [(h.document, h.meta) for h in hits] == [(first.ref, {"date": "2026-09-29"})]
    assert (
        await api.search("", {"collections": ["diary"], "timeRange": {"from": "2026-09-30", "to": "2026-09-30"}}) == []
    )
