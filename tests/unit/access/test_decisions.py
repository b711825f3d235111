"""The one permission question: ``decide`` / ``require`` answer every check of the gem API.

K-PERM-05…19, OD-K06, OD-K27: a refusal names the narrowest permission that
would allow the call; implications hold; a question asked with the wrong kind of target is a
programming error reported clearly, never a silent "not allowed".
"""

from __future__ import annotations

import re

import pytest

from notochord.access.decisions import (
    ALLOWED,
    Decision,
    FactSlot,
    Kind,
    daily_limits,
    decide,
    readable_ranges,
    require,
    require_own_or_manage,
)
from notochord.access.permissions import PermissionSet
from notochord.errors import KnowledgePermissionError, KnowledgeValidationError
from notochord.knowledge.predicates import PredicateRange
from notochord.knowledge.quotas import DAILY_CHARS, DAILY_CHARS_BULK


def test_a_facts_question_is_refused_with_the_narrowest_permission(recipe_grants: PermissionSet) -> None:
    slot = FactSlot("self", "pref.food.like")
    assert decide(recipe_grants, action="facts.read", target=slot) == ALLOWED
    assert decide(recipe_grants, action="facts.write", target=slot) == Decision("facts.write:self:pref.food.like")
    with pytest.raises(KnowledgePermissionError) as raised:
        require(recipe_grants, action="facts.write", target=slot)
    assert raised.value.permission == "facts.write:self:pref.food.like"


def test_an_entities_question_follows_the_implications(recipe_grants: PermissionSet) -> None:
    """Entities.write:person allows resolve but not read (OD-K27)."""
    assert decide(recipe_grants, action="entities.resolve", target=Kind("person")).allowed
    assert decide(recipe_grants, action="entities.write", target=Kind("person")).allowed
    assert decide(recipe_grants, action="entities.read", target=Kind("person")).missing == "entities.read:person"
    assert decide(recipe_grants, action="entities.resolve", target=Kind("place")).missing == "entities.resolve:place"


def test_a_scope_less_question_names_the_permission(recipe_grants: PermissionSet) -> None:
    assert decide(recipe_grants, action="collections.create").allowed
    assert decide(recipe_grants, action="changes.manage") == Decision("changes.manage")
    assert decide(recipe_grants, action="origin.override").missing == "origin.override"


def test_acting_on_another_writers_record_needs_changes_manage(recipe_grants: PermissionSet) -> None:
    require_own_or_manage(recipe_grants, writer="gem:recipes", actor="gem:recipes")
    with pytest.raises(KnowledgePermissionError) as raised:
        require_own_or_manage(recipe_grants, writer="user", actor="gem:recipes")
    assert raised.value.permission == "changes.manage"


def test_a_question_with_the_wrong_target_is_refused_as_a_mistake(recipe_grants: PermissionSet) -> None:
    with pytest.raises(KnowledgeValidationError, match=re.escape("facts.read takes a FactSlot target")):
        decide(recipe_grants, action="facts.read", target=Kind("person"))
    with pytest.raises(KnowledgeValidationError, match=re.escape("changes.manage takes no target")):
        decide(recipe_grants, action="changes.manage", target=Kind("person"))


def test_queries_get_the_readable_ranges_and_writes_the_quota_of_their_switches(recipe_grants: PermissionSet) -> None:
    assert readable_ranges(recipe_grants, subject_kind="person") == [PredicateRange("relation.friend", wildcard=True)]
    assert daily_limits(recipe_grants).chars == DAILY_CHARS
    assert daily_limits(PermissionSet.of(["collections.bulk"])).chars == DAILY_CHARS_BULK
