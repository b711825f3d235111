"""A refused call tells the person what they can do about it (K-PERM-25, OD-K06).

The message names the permission the gem *requested* that would cover the call, as a command to
switch it on, while ``KnowledgePermissionError.permission`` stays the narrowest string that would
allow the call, for code that branches on it. A call no requested permission covers says that the
gem's manifest must request it first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gem_fixtures import declaration, install_gem

import notochord
from notochord import KnowledgePermissionError, Space
from notochord.access.permissions import Permission
from notochord.gems.registry import covers

pytestmark = pytest.mark.anyio

RECIPES = ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "collections.create"]
RATED = declaration("pref.food.rated")


async def test_the_hint_names_the_requested_permission_not_the_narrowest(space: Space, gems_root: Path) -> None:
    """``pref.food.*`` was requested, ``pref.food.rated`` is what the call needs."""
    install_gem(space, gems_root, "recipes", RECIPES, on=["collections.create"], predicates=[RATED])
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.facts.put({"predicateHint": "pref.food.rated", "value": "Stew"})
    assert raised.value.permission == "facts.write:self:pref.food.rated"
    assert raised.value.message == (
        "lacks knowledge permission facts.write:self:pref.food.rated "
        "(switch it on with: notochord gem grant recipes 'facts.write:self:pref.food.*')"
    )
    assert raised.value.code == "E_PERMISSION"


async def test_a_permission_without_scope_is_named_as_requested(space: Space, gems_root: Path) -> None:
    """The command for ``collections.create`` needs no quoting."""
    install_gem(space, gems_root, "recipes", RECIPES)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.collections.create("Recipes")
    assert raised.value.permission == "collections.create"
    assert "(switch it on with: notochord gem grant recipes collections.create)" in raised.value.message


async def test_a_call_nothing_requested_covers_says_the_manifest_must_request_it(space: Space, gems_root: Path) -> None:
    """No command could switch it on, so none is offered."""
    install_gem(space, gems_root, "recipes", RECIPES, on=RECIPES)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.facts.put({"predicateHint": "pref.health.allergy", "value": "nuts"})
    message = raised.value.message
    assert message.startswith("lacks knowledge permission facts.write:self:x.pref.health.allergy")
    assert "gem recipes does not request it; its manifest must request it" in message
    assert "gem grant" not in message


async def test_entities_hint_prefers_the_requested_permission_equal_to_the_need(space: Space, gems_root: Path) -> None:
    """With both ``resolve`` and ``write`` requested, the narrower one is offered."""
    install_gem(space, gems_root, "people", ["entities.write:person", "entities.resolve:person"])
    knowledge = space.gems.context("people").knowledge
    assert knowledge is not None
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.entities.resolve({"email": "li@acme.nl"})
    assert raised.value.permission == "entities.resolve:person"
    assert "notochord gem grant people entities.resolve:person)" in raised.value.message


async def test_in_an_organization_the_command_names_the_organization(nc: notochord.Notochord, gems_root: Path) -> None:
    """The offered command reaches the space the gem is installed in."""
    org = nc.org("acme", create=True)
    install_gem(org, gems_root, "recipes", RECIPES)
    knowledge = org.gems.context("recipes").knowledge
    assert knowledge is not None
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.collections.create("Recipes")
    assert "notochord gem grant recipes collections.create --org acme)" in raised.value.message


@pytest.mark.parametrize(
    ("held", "needed", "expected"),
    [
        ("facts.write:self:pref.food.*", "facts.write:self:pref.food.rated", True),
        ("facts.write:self:pref.food.*", "facts.write:self:pref.food", True),
        ("facts.read:self:pref.food.*", "facts.write:self:pref.food.rated", False),
        ("facts.write:self:pref.food.rated", "facts.write:self:pref.food.*", False),
        ("facts.write:person:pref.food.*", "facts.write:self:pref.food.rated", False),
        ("entities.write:person", "entities.resolve:person", True),
        ("entities.write:person", "entities.read:person", False),
        ("entities.read:org", "entities.resolve:person", False),
        ("collections.write:diary", "collections.read:diary", True),
        ("collections.read:diary", "collections.write:diary", False),
        ("collections.write:keep", "collections.write:diary", False),
        ("changes.manage", "changes.manage", True),
        ("collections.create", "changes.manage", False),
    ],
)
def test_covers_follows_the_permission_implications(held: str, needed: str, expected: bool) -> None:
    """OD-K11, OD-K27: which requested permission would allow a refused call."""
    assert covers(Permission.parse(held), Permission.parse(needed)) is expected


async def test_a_user_selected_grant_that_is_on_points_at_ticking_the_collection(space: Space, gems_root: Path) -> None:
    """Switching on is done; what is missing is the tick of this collection."""
    install_gem(space, gems_root, "reader", ["collections.read:user-selected"], on=["collections.read:user-selected"])
    work = space.user.collections.create("Work")
    space.gems.tick_collection("reader", work.id, on=True)
    knowledge = space.gems.context("reader").knowledge
    assert knowledge is not None
    [ref] = [c.ref for c in await knowledge.collections.list() if c.name == "Work"]
    space.gems.tick_collection("reader", work.id, on=False)
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.documents.list(ref)
    assert raised.value.permission == "collections.read:user-selected"
    assert (
        "(collections.read:user-selected is on, but you have not ticked this collection for the gem; "
        "tick it with: notochord collections tick reader COLLECTION)"
    ) in raised.value.message


async def test_a_ctx_held_past_uninstall_is_still_refused_for_lack_of_permission(space: Space, gems_root: Path) -> None:
    """With no gem left to name a permission of, the refusal keeps its default words."""
    install_gem(space, gems_root, "recipes", RECIPES)
    knowledge = space.gems.context("recipes").knowledge
    assert knowledge is not None
    space.gems.uninstall("recipes")
    with pytest.raises(KnowledgePermissionError) as raised:
        await knowledge.collections.create("Recipes")
    assert raised.value.permission == "collections.create"
    assert "gem grant" not in raised.value.message
