"""Entities through the host API: identifiers, resolve, list, merge, delete (K-ENT, K-CON-09)."""

from __future__ import annotations

import pytest

from notochord import KnowledgeNotFoundError, KnowledgeValidationError, Space
from notochord.knowledge.identifiers import normalize_identifier


@pytest.mark.parametrize(
    ("kind", "value", "normalized"),
    [
        ("email", "  ZhangSan@Acme.NL ", "zhangsan@acme.nl"),
        ("phone", "+31 6 1234 5678", "+31612345678"),
        ("phone", "(020) 555-0101", "0205550101"),
        ("domain", "WWW.Acme.nl.", "acme.nl"),
        ("url", "HTTPS://Acme.NL/Team/", "https://acme.nl/Team"),
        ("handle", "GitHub:ZhangSan", "github:zhangsan"),
        ("name", "  Zhang   SAN ", "zhang san"),
    ],
)
def test_identifiers_are_normalised_for_matching(kind: str, value: str, normalized: str) -> None:
    """K-ENT-06, OD-K26."""
    assert normalize_identifier(kind, value) == normalized


@pytest.mark.parametrize(
    ("kind", "value", "fragment"),
    [
        ("handle", "zhangsan", "platform:account"),
        ("email", "not-an-address", "not an email"),
        ("email", "@", "not an email"),
        ("email", "ann@", "not an email"),
        ("email", "@acme.nl", "not an email"),
        ("email", "ann@acme\tnl", "not an email"),
        ("fax", "123", "unknown identifier type"),
        ("url", "acme.nl", "needs a scheme"),
        ("name", "x" * 1001, "exceeds limit of 1000"),
    ],
)
def test_malformed_identifiers_are_refused(kind: str, value: str, fragment: str) -> None:
    """K-ENT-06, K-ENT-14, K-QUOTA-12."""
    with pytest.raises(KnowledgeValidationError, match=fragment):
        normalize_identifier(kind, value)


def test_resolve_finds_by_any_identifier_and_returns_none_without_create(space: Space) -> None:
    """K-ENT-01, K-ENT-04, K-ENT-05."""
    assert space.user.entities.resolve(email="zhangsan@acme.nl") is None
    created = space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    assert created is not None
    assert created.display_name == "Zhang San"
    assert space.user.entities.resolve(email="ZHANGSAN@acme.nl") == created
    assert space.user.entities.resolve(name="zhang  san") == created


def test_resolve_is_scoped_by_kind(space: Space) -> None:
    """K-ENT-02: {kind: 'org'} resolves among organisations only."""
    org = space.user.entities.resolve(name="Acme", kind="org", create=True)
    assert space.user.entities.resolve(name="Acme") is None
    assert space.user.entities.resolve(name="Acme", kind="org") == org


def test_identifier_order_decides_and_the_oldest_entity_wins(space: Space) -> None:
    """OD-K26: email before name; among several hits, the oldest."""
    first = space.user.entities.resolve(name="Sam", create=True)
    second = space.user.entities.resolve(name="Sam Lee", email="sam@lee.nl", create=True)
    assert first and second
    space.user.entities.add_identifier(second.id, "name", "Sam")
    assert space.user.entities.resolve(name="Sam", email="sam@lee.nl") == space.user.entities.get(second.id)
    assert space.user.entities.resolve(name="Sam") == space.user.entities.get(first.id)


def test_create_without_a_name_uses_the_first_identifier(space: Space) -> None:
    """OD-K26."""
    entity = space.user.entities.resolve(email="solo@x.nl", create=True)
    assert entity is not None
    assert entity.display_name == "solo@x.nl"


def test_add_identifier_reports_added_then_exists_and_get_lists_them_in_order(space: Space) -> None:
    """K-ENT-07, K-ENT-09, OD-K29."""
    e = space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    assert e
    assert space.user.entities.add_identifier(e.id, "phone", "+31 6 1234 5678") == "added"
    assert space.user.entities.add_identifier(e.id, "phone", "+31612345678") == "exists"
    got = space.user.entities.get(e.id)
    assert [(i.type, i.value) for i in got.identifiers] == [
        ("email", "zhangsan@acme.nl"),
        ("name", "Zhang San"),
        ("phone", "+31 6 1234 5678"),
    ]


def test_list_sorts_by_name_and_filters_by_query(space: Space) -> None:
    """K-ENT-08, OD-K29."""
    for name, email in (("bob", "b@x.nl"), ("Alice", "alice@y.nl"), ("carol", "c@y.nl")):
        space.user.entities.resolve(name=name, email=email, create=True)
    assert [e.display_name for e in space.user.entities.list("person")] == ["Alice", "bob", "carol"]
    assert [e.display_name for e in space.user.entities.list("person", query="@Y.NL")] == ["Alice", "carol"]


def test_self_is_never_resolved_listed_or_returned(space: Space) -> None:
    """OD-K30."""
    assert space.user.entities.list("person") == []
    with pytest.raises(KnowledgeValidationError, match="malformed"):
        space.user.entities.list("self")
    self_id = space.core.entities.get
    with space.core.store.read() as conn:
        me = space.core.entities.self_id(conn)
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        self_id(me)


def test_merge_keeps_old_ids_working_and_delete_makes_them_not_found(space: Space) -> None:
    """AS-14, K-ENT-11…13 (user side)."""
    a = space.user.entities.resolve(email="a@x.nl", name="A", create=True)
    b = space.user.entities.resolve(email="b@x.nl", name="B", create=True)
    assert a and b
    space.user.entities.merge(keep=b.id, merge=a.id)
    via_old = space.user.entities.get(a.id)
    assert via_old.id == b.id
    assert {i.value for i in via_old.identifiers} == {"a@x.nl", "A", "b@x.nl", "B"}
    assert space.user.entities.resolve(email="a@x.nl") == via_old
    space.user.entities.delete(b.id)
    for old in (a.id, b.id):
        with pytest.raises(KnowledgeNotFoundError, match="no entity"):
            space.user.entities.get(old)


def test_merge_into_itself_is_refused(space: Space) -> None:
    a = space.user.entities.resolve(name="A", create=True)
    assert a
    with pytest.raises(KnowledgeValidationError, match="into itself"):
        space.user.entities.merge(keep=a.id, merge=a.id)


def test_entities_of_different_kinds_are_not_merged(space: Space) -> None:
    """K-ENT-12: a merge says two entries are one thing; an org is never the same thing as a person,
    and the kept kind would decide which gems' switches reach the other's facts."""
    person = space.user.entities.resolve(name="Acme", create=True)
    org = space.user.entities.resolve(name="Acme", kind="org", create=True)
    assert person and org
    before = space.changes.list(limit=100)
    for keep, merge in ((person, org), (org, person)):
        with pytest.raises(KnowledgeValidationError, match="only entities of the same kind can be merged") as refused:
            space.user.entities.merge(keep=keep.id, merge=merge.id)
        assert "org" in str(refused.value) and "person" in str(refused.value)
    assert space.changes.list(limit=100) == before
    assert space.user.entities.get(org.id).kind == "org"
    assert space.user.entities.get(person.id).kind == "person"


def test_display_name_limit(space: Space) -> None:
    """K-ENT-14, K-QUOTA-11: 1000 characters pass, 1001 fail."""
    assert space.user.entities.resolve(name="n" * 1000, create=True)
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        space.user.entities.resolve(name="m" * 1001, create=True)


@pytest.mark.parametrize("kind", ["Person", "self", "1org", "pe rson", ""])
def test_malformed_kinds_are_refused(space: Space, kind: str) -> None:
    """OD-K57."""
    with pytest.raises(KnowledgeValidationError, match="kind"):
        space.user.entities.resolve(name="x", kind=kind, create=True)


def test_creating_and_adding_identifiers_are_recorded_changes(space: Space) -> None:
    """K-ENT-15."""
    e = space.user.entities.resolve(name="Z", create=True)
    assert e
    space.user.entities.add_identifier(e.id, "email", "z@z.nl")
    assert [c.op for c in space.changes.list()] == ["entities.addIdentifier", "entities.create"]
