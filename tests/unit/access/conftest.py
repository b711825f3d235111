"""Shared data for the permission-string and sentence tests.

``VALID_PERMISSIONS`` is every well-formed string the tests exercise; any test taking a
``valid_permission_text`` argument runs once per string (see ``pytest_generate_tests``).
"""

from __future__ import annotations

import pytest

from notochord.access.permissions import PermissionSet

VALID_PERMISSIONS: tuple[str, ...] = (
    # facts, subject self (K-PERM-06/08)
    "facts.read:self:location.home.*",
    "facts.write:self:pref.food.*",
    "facts.read:self:pref.food.*",
    "facts.read:self:location.home.city",
    "facts.read:self:location.work.city",
    "facts.read:self:location.timezone",
    "facts.read:self:identity.name",
    "facts.read:self:identity.birthday",
    "facts.read:self:contact.email.*",
    "facts.read:self:contact.email",
    "facts.write:self:pref.food.rated",
    "facts.write:self:pref.food.rated.*",
    "facts.read:self:pref.communication.*",
    "facts.read:self:schedule.event",
    "facts.write:self:schedule.routine.*",
    "facts.read:self:health.allergy",
    "facts.read:self:finance.currency",
    "facts.read:self:work.company",
    "facts.read:self:x.music.*",
    "facts.read:self:x.music_taste.favourite_band",
    "facts.read:self:pref.食物.喜欢",
    "facts.read:self:pref.café.*",
    "facts.read:self:location.home2.*",
    # facts, subject an entity kind (K-PERM-24, OD-K57)
    "facts.read:person:relation.friend.*",
    "facts.write:person:relation.colleague",
    "facts.read:person:contact.phone",
    "facts.read:org:work.company",
    "facts.read:place:x.opening_hours.*",
    "facts.read:pet_2:x.food.*",
    # entities (K-PERM-09…11)
    "entities.resolve:person",
    "entities.read:person",
    "entities.write:person",
    "entities.read:org",
    "entities.resolve:place",
    "entities.write:vehicle",
    "entities.resolve:item",
    # collections (K-PERM-12…16, 19)
    "collections.read:diary",
    "collections.write:diary",
    "collections.read:keep",
    "collections.write:keep",
    "collections.read:user-selected",
    "collections.write:user-selected",
    "collections.create",
    "collections.bulk",
    # the rest (K-PERM-17/18)
    "changes.manage",
    "origin.override",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "valid_permission_text" in metafunc.fixturenames:
        metafunc.parametrize("valid_permission_text", VALID_PERMISSIONS, ids=list(VALID_PERMISSIONS))


@pytest.fixture
def valid_permissions() -> tuple[str, ...]:
    return VALID_PERMISSIONS


@pytest.fixture
def recipe_grants() -> PermissionSet:
    """What the user switched on for the recipe gem (EX-15), plus a few contact grants."""
    return PermissionSet.of(
        [
            "facts.read:self:pref.food.*",
            "facts.write:self:pref.food.rated",
            "facts.read:self:contact.email.*",
            "facts.read:person:relation.friend.*",
            "entities.write:person",
            "entities.read:org",
            "collections.write:diary",
            "collections.read:keep",
            "collections.create",
        ]
    )


@pytest.fixture
def describe_declared() -> dict[str, str]:
    """Descriptions a gem declared for its own predicates (EX-01)."""
    return {
        "pref.food.rated": ("Dishes you have rated highly, used to recommend similar dishes. Example: braised pork")
    }
