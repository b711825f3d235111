"""Permission strings: grammar, canonical form, coverage and implications.

Covers K-PERM-01, 06…19, 24; P-KVAL-01…05; OD-K06, OD-K11, OD-K12, OD-K13, OD-K24, OD-K27, OD-K57.
"""

from __future__ import annotations

import dataclasses

import pytest

from notochord.access.permissions import (
    CollectionsPermission,
    EntitiesPermission,
    FactsPermission,
    Permission,
    PermissionSet,
    SimplePermission,
    narrowest_facts_permission,
)
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.predicates import PredicateRange

# (string, fragment the error message must contain). Together with the conftest's valid strings
# this is the K-PERM / P-KVAL-02 grammar table.
MALFORMED: tuple[tuple[str, str], ...] = (
    # P-KVAL-03 / K-PERM-07: fewer than two levels
    ("facts.read:self:*", "at least two levels before .*"),
    ("facts.read:self:location.*", "at least two levels before .*"),
    ("facts.read:self:pref.*", "at least two levels before .*"),
    ("facts.write:person:relation.*", "at least two levels before .*"),
    ("facts.read:self:location", "full predicate and needs at least two levels"),
    # prefix shape (OD-K13)
    ("facts.read:self:location.home.", "empty level"),
    ("facts.read:self:location..home", "empty level"),
    ("facts.read:self:.location.home", "empty level"),
    ("facts.read:self:location.home*", "* may only stand alone"),
    ("facts.read:self:location.*.city", "* may only stand alone"),
    ("facts.read:self:location.home.**", "* may only stand alone"),
    ("facts.read:self:location.ho-me.*", "level 'ho-me'"),
    ("facts.read:self:location.home.city!", "level 'city!'"),
    ("facts.read:self:food.rated.*", "first level must be one of"),
    ("facts.read:self:preferences.food.*", "first level must be one of"),
    ("facts.read:self:", "needs a predicate prefix"),
    ("facts.read:self", "needs a subject and a prefix"),
    ("facts.read", "needs a subject and a prefix"),
    ("facts.read:self:location.home.*:extra", "too many ':'"),
    # subjects (K-PERM-24, OD-K57)
    ("facts.read::location.home.*", "needs a subject"),
    ("facts.read:1person:location.home.*", "neither self nor an entity kind"),
    ("facts.read:per-son:location.home.*", "neither self nor an entity kind"),
    ("facts.read:persön:location.home.*", "neither self nor an entity kind"),
    # whitespace and case (OD-K13)
    ("facts.read: self:location.home.*", "whitespace"),
    ("facts.read:self:location.home.* ", "whitespace"),
    ("facts.read:self:location.home\t.*", "whitespace"),
    ("facts.read:Self:location.home.*", "lowercase"),
    ("FACTS.READ:self:location.home.*", "lowercase"),
    ("facts.read:self:Location.home.*", "lowercase"),
    # data types and actions (P-KVAL-01)
    ("", "must not be empty"),
    ("facts", "missing action for facts"),
    ("facts.delete:self:location.home.*", "unknown action 'delete' for facts"),
    ("facts.resolve:self:location.home.*", "unknown action 'resolve' for facts"),
    ("fact.read:self:location.home.*", "unknown data type 'fact'"),
    ("documents.read:diary", "unknown data type 'documents'"),
    ("email.read", "unknown data type 'email'"),
    ("network.hosts", "unknown data type 'network'"),
    ("*", "unknown data type '*'"),
    # entities (K-PERM-09…11, D-04: a kind is required)
    ("entities.read:", "an entity kind is required"),
    ("entities.resolve", "an entity kind is required"),
    ("entities.write:self", "self is not an entity kind"),
    ("entities.read:Person", "lowercase"),
    ("entities.read:2person", "must be a lowercase ASCII letter"),
    ("entities.read:per-son", "must be a lowercase ASCII letter"),
    ("entities.read:person:extra", "too many ':'"),
    ("entities.delete:person", "unknown action 'delete' for entities"),
    ("entities.list:person", "unknown action 'list' for entities"),
    # collections (K-PERM-12, P-KVAL-05)
    ("collections.read:col_3f2a9c0d1e2b4a5f6a7b8c", "specific collection ids cannot be requested"),
    ("collections.write:recipes", "specific collection ids cannot be requested"),
    ("collections.read:col_abc", "the target must be diary, keep or user-selected"),
    ("collections.read:user_selected", "specific collection ids cannot be requested"),
    ("collections.read:", "needs a target"),
    ("collections.read", "needs a target"),
    ("collections.read:diary:2026", "too many ':'"),
    ("collections.delete:diary", "unknown action 'delete' for collections"),
    # scope-less permissions (K-PERM-15/17/18/19, OD-K24)
    ("collections.create:diary", "collections.create takes no scope"),
    ("collections.create:", "collections.create takes no scope"),
    ("collections.bulk:keep", "collections.bulk takes no scope"),
    ("changes.manage:all", "changes.manage takes no scope"),
    ("changes.read", "unknown action 'read' for changes"),
    ("origin.override:gem", "origin.override takes no scope"),
    ("origin.set", "unknown action 'set' for origin"),
)


def test_grammar_table_holds_at_least_eighty_strings(valid_permissions: tuple[str, ...]) -> None:
    assert len(valid_permissions) + len(MALFORMED) >= 80
    assert not set(valid_permissions) & {text for text, _ in MALFORMED}


def test_valid_string_parses_once_and_prints_back_unchanged(valid_permission_text: str) -> None:
    """K-PERM-01, OD-K13: the canonical string of a parsed value is the string it came from."""
    permission = Permission.parse(valid_permission_text)
    assert str(permission) == valid_permission_text
    assert Permission.parse(str(permission)) == permission
    assert hash(permission) == hash(Permission.parse(valid_permission_text))


@pytest.mark.parametrize(("text", "fragment"), MALFORMED, ids=[repr(t) for t, _ in MALFORMED])
def test_malformed_string_is_refused_naming_the_string_and_the_rule(text: str, fragment: str) -> None:
    """P-KVAL-02/03/05, K-PERM-07, OD-K13."""
    with pytest.raises(KnowledgeValidationError) as caught:
        Permission.parse(text)
    message = caught.value.message
    assert fragment in message
    assert message.startswith(f"{text} : " if text else "'' : ")
    assert caught.value.code == "E_VALIDATION"


def test_non_string_is_refused() -> None:
    with pytest.raises(KnowledgeValidationError, match="must be a string"):
        Permission.parse(42)  # type: ignore[arg-type]


def test_two_level_prefix_error_reads_as_documented() -> None:
    """K-PERM-07: the message names the string and the rule it breaks."""
    with pytest.raises(KnowledgeValidationError) as caught:
        Permission.parse("facts.read:self:location.*")
    assert caught.value.message == ("facts.read:self:location.* : a facts prefix needs at least two levels before .*")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("facts.read:self:location.home.*", FactsPermission("read", "self", "location.home", True)),
        ("facts.write:person:relation.friend", FactsPermission("write", "person", "relation.friend", False)),
        ("entities.resolve:person", EntitiesPermission("resolve", "person")),
        ("collections.write:user-selected", CollectionsPermission("write", "user-selected")),
        ("collections.bulk", SimplePermission("collections.bulk")),
        ("origin.override", SimplePermission("origin.override")),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_each_string_parses_into_its_typed_value(text: str, expected: Permission) -> None:
    assert Permission.parse(text) == expected


def test_values_are_frozen() -> None:
    permission = Permission.parse("facts.read:self:location.home.*")
    with pytest.raises(dataclasses.FrozenInstanceError):
        permission.prefix = "pref.food"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "build",
    [
        lambda: FactsPermission("read", "self", "location", True),
        lambda: FactsPermission("read", "self", "location.home.*", False),
        lambda: FactsPermission("read", "Self", "location.home", True),
        lambda: FactsPermission("delete", "self", "location.home", True),  # type: ignore[arg-type]
        lambda: EntitiesPermission("read", "self"),
        lambda: EntitiesPermission("list", "person"),  # type: ignore[arg-type]
        lambda: CollectionsPermission("read", "col_3f2a"),  # type: ignore[arg-type]
        lambda: SimplePermission("facts.read"),  # type: ignore[arg-type]
    ],
    ids=[
        "one-level",
        "star-in-prefix",
        "bad-subject",
        "bad-action",
        "self-kind",
        "entities-list",
        "col-id",
        "simple",
    ],
)
def test_values_built_directly_obey_the_same_grammar(build: object) -> None:
    """OD-K13: a value can never hold what the parser would refuse."""
    with pytest.raises(KnowledgeValidationError):
        build()  # type: ignore[operator]


# --- OD-K11: covers_predicate --------------------------------------------------------------------

COVERS_PREDICATE: tuple[tuple[str, str, bool], ...] = (
    ("facts.read:self:contact.email.*", "contact.email", True),
    ("facts.read:self:contact.email.*", "contact.email.work", True),
    ("facts.read:self:contact.email.*", "contact.emails", False),
    ("facts.read:self:contact.email.*", "contact.email_old", False),
    ("facts.read:self:contact.email.*", "contact", False),
    ("facts.read:self:contact.email", "contact.email", True),
    ("facts.read:self:contact.email", "contact.email.work", False),
    ("facts.read:self:contact.email", "contact.emails", False),
    ("facts.read:self:location.home.*", "location.home.city", True),
    ("facts.read:self:location.home.*", "location.home.address", True),
    ("facts.read:self:location.home.*", "location.homepage", False),
    ("facts.read:self:location.home.*", "location.work.city", False),
    ("facts.read:self:location.home.*", "location.timezone", False),
    ("facts.read:self:pref.food.*", "pref.food.rated", True),
    ("facts.read:self:pref.food.*", "pref.foods.rated", False),
    ("facts.read:self:pref.food.rated", "pref.food.rated", True),
    ("facts.read:self:pref.food.rated", "pref.food.rated.extra", False),
    ("facts.read:self:pref.food.rated", "pref.food", False),
)


@pytest.mark.parametrize(("text", "predicate", "covered"), COVERS_PREDICATE)
def test_prefix_covers_predicates_on_whole_levels_only(text: str, predicate: str, covered: bool) -> None:
    """OD-K11: ``contact.email.*`` covers ``contact.email`` and below, never ``contact.emails``."""
    permission = Permission.parse(text)
    assert isinstance(permission, FactsPermission)
    assert permission.covers_predicate(predicate) is covered


# --- OD-K12: covers_facts (the install check of P-KVAL-04) ------------------------------------

COVERS_FACTS: tuple[tuple[str, str, bool], ...] = (
    ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*", True),
    ("facts.read:self:pref.food.*", "facts.write:self:pref.food.rated.*", True),
    ("facts.read:self:pref.food.*", "facts.write:self:pref.food", True),
    ("facts.read:self:pref.food.*", "facts.write:self:pref.food.rated", True),
    ("facts.read:self:pref.food.*", "facts.write:self:pref.foods", False),
    ("facts.read:self:pref.food.*", "facts.write:self:pref.communication.*", False),
    ("facts.read:self:pref.food.rated", "facts.write:self:pref.food.rated", True),
    ("facts.read:self:pref.food.rated", "facts.write:self:pref.food.rated.*", False),
    ("facts.read:self:pref.food.rated", "facts.write:self:pref.food.*", False),
    ("facts.read:self:pref.food.rated.*", "facts.write:self:pref.food.*", False),
    ("facts.read:self:pref.food.*", "facts.write:person:pref.food.*", False),
    ("facts.read:person:pref.food.*", "facts.write:self:pref.food.*", False),
    ("facts.read:person:relation.friend.*", "facts.write:person:relation.friend.best", True),
    ("facts.read:person:relation.friend.*", "facts.write:org:relation.friend.best", False),
)


@pytest.mark.parametrize(("read", "write", "covered"), COVERS_FACTS)
def test_one_read_covers_a_write_only_when_it_includes_all_of_its_scope(read: str, write: str, covered: bool) -> None:
    """OD-K12, P-KVAL-04: same subject, and every predicate the write reaches the read reaches too."""
    reader, writer = Permission.parse(read), Permission.parse(write)
    assert isinstance(reader, FactsPermission)
    assert isinstance(writer, FactsPermission)
    assert reader.covers_facts(writer) is covered


# --- OD-K27: implications ----------------------------------------------------------------------

ENTITY_IMPLICATIONS: tuple[tuple[str, str, str, bool], ...] = (
    ("entities.write:person", "resolve", "person", True),
    ("entities.write:person", "write", "person", True),
    ("entities.write:person", "read", "person", False),
    ("entities.read:person", "resolve", "person", True),
    ("entities.read:person", "read", "person", True),
    ("entities.read:person", "write", "person", False),
    ("entities.resolve:person", "resolve", "person", True),
    ("entities.resolve:person", "read", "person", False),
    ("entities.resolve:person", "write", "person", False),
    ("entities.write:person", "resolve", "org", False),
    ("entities.read:org", "resolve", "person", False),
)


@pytest.mark.parametrize(("granted", "action", "kind", "allowed"), ENTITY_IMPLICATIONS)
def test_entity_grants_imply_resolve_but_write_never_implies_read(
    granted: str, action: str, kind: str, allowed: bool
) -> None:
    """K-PERM-09…11, OD-K27."""
    grants = PermissionSet.of([granted])
    assert grants.entities_allows(action=action, kind=kind) is allowed  # type: ignore[arg-type]


COLLECTION_IMPLICATIONS: tuple[tuple[str, str, str, bool], ...] = (
    ("collections.write:diary", "read", "diary", True),
    ("collections.write:diary", "write", "diary", True),
    ("collections.read:diary", "read", "diary", True),
    ("collections.read:diary", "write", "diary", False),
    ("collections.write:diary", "read", "keep", False),
    ("collections.write:user-selected", "read", "user-selected", True),
    ("collections.read:keep", "read", "user-selected", False),
)


@pytest.mark.parametrize(("granted", "action", "target", "allowed"), COLLECTION_IMPLICATIONS)
def test_collection_write_implies_read_of_the_same_target_only(
    granted: str, action: str, target: str, allowed: bool
) -> None:
    """K-PERM-12, OD-K27."""
    grants = PermissionSet.of([granted])
    assert grants.collections_allows(action=action, target=target) is allowed  # type: ignore[arg-type]


# --- PermissionSet --------------------------------------------------------------------------------


def test_fact_questions_follow_the_grants_by_subject_and_action(recipe_grants: PermissionSet) -> None:
    """K-PERM-06/08/24: reading and writing are separate grants, and subjects never mix."""
    assert recipe_grants.can_read_fact(subject_kind="self", predicate="pref.food.rated")
    assert recipe_grants.can_read_fact(subject_kind="self", predicate="pref.food")
    assert not recipe_grants.can_read_fact(subject_kind="person", predicate="pref.food.rated")
    assert not recipe_grants.can_read_fact(subject_kind="self", predicate="pref.foods")
    assert recipe_grants.can_write_fact(subject_kind="self", predicate="pref.food.rated")
    assert not recipe_grants.can_write_fact(subject_kind="self", predicate="pref.food.like")
    assert not recipe_grants.can_write_fact(subject_kind="self", predicate="contact.email")
    assert recipe_grants.can_read_fact(subject_kind="person", predicate="relation.friend")
    assert not recipe_grants.can_read_fact(subject_kind="self", predicate="relation.friend")


def test_write_grant_alone_does_not_allow_reading_facts() -> None:
    grants = PermissionSet.of(["facts.write:self:pref.food.*"])
    assert grants.can_write_fact(subject_kind="self", predicate="pref.food.like")
    assert not grants.can_read_fact(subject_kind="self", predicate="pref.food.like")


def test_empty_set_allows_nothing() -> None:
    """K-PERM-03: right after install nothing is on."""
    grants = PermissionSet()
    assert not grants.can_read_fact(subject_kind="self", predicate="location.home.city")
    assert grants.readable_fact_prefixes(subject_kind="self") == []
    assert not grants.entities_allows(action="resolve", kind="person")
    assert not grants.collections_allows(action="read", target="diary")
    assert not grants.has("collections.create")


def test_readable_prefixes_are_deduplicated_minimal_and_sorted() -> None:
    """Style 2: the grants compile into SQL filters; redundant prefixes are dropped."""
    grants = PermissionSet.of(
        [
            "facts.read:self:location.home.*",
            "facts.read:self:location.home.city",
            "facts.read:self:pref.food.rated",
            "facts.read:self:contact.email.*",
            "facts.read:self:contact.email.work.*",
            "facts.write:self:work.company",
            "facts.read:person:relation.friend.*",
        ]
    )
    assert grants.readable_fact_prefixes(subject_kind="self") == [
        PredicateRange("contact.email", wildcard=True),
        PredicateRange("location.home", wildcard=True),
        PredicateRange("pref.food.rated", wildcard=False),
    ]
    assert grants.readable_fact_prefixes(subject_kind="person") == [PredicateRange("relation.friend", wildcard=True)]
    assert grants.fact_prefixes(action="write", subject_kind="self") == [PredicateRange("work.company", wildcard=False)]


def test_scope_less_permissions_are_asked_by_name(recipe_grants: PermissionSet) -> None:
    """K-PERM-15/17/18/19."""
    assert recipe_grants.has("collections.create")
    assert not recipe_grants.has("changes.manage")
    assert not recipe_grants.has("origin.override")
    assert not recipe_grants.has("collections.bulk")


def test_asking_for_an_unknown_scope_less_permission_raises_instead_of_denying() -> None:
    with pytest.raises(KnowledgeValidationError, match="not a permission without scope"):
        PermissionSet().has("collections.creat")  # type: ignore[arg-type]


def test_set_accepts_strings_and_values_and_deduplicates() -> None:
    grants = PermissionSet.of(["collections.create", Permission.parse("collections.create"), "entities.read:person"])
    assert len(grants) == 2
    assert grants.strings() == ["collections.create", "entities.read:person"]
    assert Permission.parse("entities.read:person") in grants
    assert [str(p) for p in grants] == grants.strings()


def test_set_refuses_unparsed_strings_smuggled_into_the_constructor() -> None:
    with pytest.raises(KnowledgeValidationError, match="parsed Permission values"):
        PermissionSet(frozenset({"collections.create"}))  # type: ignore[arg-type]


def test_set_refuses_a_malformed_string() -> None:
    with pytest.raises(KnowledgeValidationError, match="at least two levels"):
        PermissionSet.of(["facts.read:self:*"])


# --- OD-K06: the narrowest permission -------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "subject", "predicate", "expected"),
    [
        ("write", "self", "pref.food.rated", "facts.write:self:pref.food.rated"),
        ("read", "self", "location.home.city", "facts.read:self:location.home.city"),
        ("write", "person", "relation.friend", "facts.write:person:relation.friend"),
    ],
)
def test_narrowest_facts_permission_names_the_single_predicate(
    action: str, subject: str, predicate: str, expected: str
) -> None:
    """OD-K06, AS-08: the error names exactly what to request."""
    assert narrowest_facts_permission(action, subject, predicate) == expected  # type: ignore[arg-type]


def test_narrowest_facts_permission_refuses_a_malformed_predicate() -> None:
    with pytest.raises(KnowledgeValidationError, match="first level"):
        narrowest_facts_permission("read", "self", "food.rated")
