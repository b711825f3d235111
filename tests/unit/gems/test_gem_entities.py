"""Entities through ``ctx.knowledge``: resolve, get, list, addIdentifier (K-ENT-01…15, EX-07, EX-08).

Also OD-K26…K30: matching, the implications between entity permissions, the shapes, and ``self``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gem_fixtures import gem_ctx, install_gem, switch

from notochord import (
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeValidationError,
    Space,
)
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage

pytestmark = pytest.mark.anyio

PEOPLE = ["entities.resolve:person", "entities.read:person", "entities.write:person"]
EVERY = [*PEOPLE, "entities.resolve:org", "entities.read:org", "entities.write:org"]


def _k(space: Space, root: Path, gem_id: str, permissions: list[str]) -> KnowledgeApi:
    knowledge = gem_ctx(space, root, gem_id, permissions).knowledge
    assert knowledge is not None
    return knowledge


def _writes_today(space: Space, gem_id: str) -> int:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day="2026-09-29")[0]


async def test_resolve_finds_a_known_person_by_email(space: Space, gems_root: Path) -> None:
    """K-ENT-01, K-ENT-02, EX-07: kind defaults to person; ``created`` is False for a match."""
    space.user.entities.resolve(email="zhangsan@acme.nl", name="Zhang San", create=True)
    knowledge = _k(space, gems_root, "mail", ["entities.resolve:person"])
    found = await knowledge.entities.resolve({"email": "ZhangSan@Acme.nl "})
    assert found is not None
    assert found.model_dump(by_alias=True) == {
        "ref": found.ref,
        "kind": "person",
        "displayName": "Zhang San",
        "created": False,
    }


async def test_resolve_of_an_unknown_identifier_is_none(space: Space, gems_root: Path) -> None:
    """K-ENT-04."""
    knowledge = _k(space, gems_root, "mail", ["entities.resolve:person"])
    assert await knowledge.entities.resolve({"email": "nobody@example.nl"}) is None


async def test_resolve_looks_only_among_the_requested_kind(space: Space, gems_root: Path) -> None:
    """K-ENT-02, EX-07: ``{ kind: 'org' }`` resolves among organisations only."""
    space.user.entities.resolve(name="Acme", kind="org", create=True)
    space.user.entities.resolve(name="Acme", create=True)
    knowledge = _k(space, gems_root, "crm", EVERY)
    org = await knowledge.entities.resolve({"name": "Acme"}, {"kind": "org"})
    person = await knowledge.entities.resolve({"name": "acme"})
    assert org is not None and person is not None
    assert (org.kind, person.kind) == ("org", "person")
    assert org.ref != person.ref


@pytest.mark.parametrize("grant", ["entities.resolve:person", "entities.read:person", "entities.write:person"])
async def test_resolve_is_allowed_by_resolve_read_or_write(space: Space, gems_root: Path, grant: str) -> None:
    """K-PERM-09, K-PERM-11, K-ENT-03, OD-K27: a stronger grant never fails a weaker call."""
    space.user.entities.resolve(email="kim@example.nl", create=True)
    knowledge = _k(space, gems_root, "lookup", [grant])
    assert await knowledge.entities.resolve({"email": "kim@example.nl"}) is not None


async def test_resolve_without_permission_throws_naming_the_kind(space: Space, gems_root: Path) -> None:
    """K-ENT-03, K-ENT-10, K-PERM-22, K-PERM-23."""
    knowledge = _k(space, gems_root, "lookup", ["entities.resolve:person"])
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.resolve:org")):
        await knowledge.entities.resolve({"name": "Acme"}, kind="org")
    install_gem(space, gems_root, "off", ["entities.resolve:person"])
    off = space.gems.context("off").knowledge
    assert off is not None
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.resolve:person")):
        await off.entities.resolve({"name": "Kim"})


async def test_resolve_with_create_makes_one_entity_with_every_identifier(space: Space, gems_root: Path) -> None:
    """K-ENT-05, OD-K26: displayName is the name; the identifiers are attached in order."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    made = await knowledge.entities.resolve({"email": "zhangsan@acme.nl", "name": "Zhang San"}, {"create": True})
    assert made is not None
    assert (made.created, made.display_name, made.kind) == (True, "Zhang San", "person")
    again = await knowledge.entities.resolve({"email": "zhangsan@acme.nl", "name": "Zhang San"}, create=True)
    assert again is not None
    assert (again.created, again.ref) == (False, made.ref)
    got = await knowledge.entities.get(made.ref)
    assert [(i.type, i.value) for i in got.identifiers] == [("email", "zhangsan@acme.nl"), ("name", "Zhang San")]


async def test_created_without_name_takes_the_first_identifier_as_display_name(space: Space, gems_root: Path) -> None:
    """OD-K26."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    made = await knowledge.entities.resolve({"email": "kim@example.nl"}, create=True)
    assert made is not None
    assert made.display_name == "kim@example.nl"


async def test_create_needs_write_even_when_a_match_exists(space: Space, gems_root: Path) -> None:
    """K-ENT-05, OD-K28: the outcome must not reveal whether the entity exists."""
    space.user.entities.resolve(email="kim@example.nl", create=True)
    knowledge = _k(space, gems_root, "reader", ["entities.resolve:person", "entities.read:person"])
    for email in ("kim@example.nl", "new@example.nl"):
        with pytest.raises(
            KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.write:person")
        ):
            await knowledge.entities.resolve({"email": email}, create=True)
    assert len(space.user.entities.list("person")) == 1


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ({"phone": "+31 6 1234 5678"}, {"phone": "+31612345678"}),
        ({"domain": "WWW.Acme.NL."}, {"domain": "acme.nl"}),
        ({"url": "HTTPS://Example.NL/about/"}, {"url": "https://example.nl/about"}),
        ({"handle": "GitHub:ZhangSan"}, {"handle": "github:zhangsan"}),
        ({"name": "  zhang   SAN "}, {"name": "Zhang San"}),
    ],
)
async def test_identifiers_match_after_normalisation(
    space: Space, gems_root: Path, given: dict[str, str], stored: dict[str, str]
) -> None:
    """K-ENT-06, OD-K26."""
    space.user.entities.resolve(create=True, **stored)
    knowledge = _k(space, gems_root, "lookup", ["entities.resolve:person"])
    assert await knowledge.entities.resolve(given) is not None


async def test_email_wins_over_name_and_the_oldest_entity_wins(space: Space, gems_root: Path) -> None:
    """OD-K26: identifier types are tried email first; among several hits the oldest wins."""
    first = space.user.entities.resolve(name="Kim", create=True)
    space.user.entities.resolve(name="Kim Jansen", create=True)
    by_mail = space.user.entities.resolve(email="kim@example.nl", name="Kim Other", create=True)
    assert first is not None and by_mail is not None
    space.user.entities.add_identifier(space.user.entities.list(query="Kim Jansen")[0].id, "name", "Kim")
    knowledge = _k(space, gems_root, "lookup", ["entities.read:person"])
    hit = await knowledge.entities.resolve({"name": "Kim", "email": "kim@example.nl"})
    assert hit is not None and hit.display_name == "Kim Other"
    oldest = await knowledge.entities.resolve({"name": "kim"})
    assert oldest is not None and oldest.display_name == "Kim"


@pytest.mark.parametrize(
    "given", [{}, {"fax": "123"}, {"email": "not an email"}, {"handle": "no-platform"}, {"email": ""}]
)
async def test_bad_identifiers_are_validation_errors(space: Space, gems_root: Path, given: dict[str, str]) -> None:
    """K-ENT-06."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    with pytest.raises(KnowledgeValidationError):
        await knowledge.entities.resolve(given, create=True)
    assert space.user.entities.list("person") == []


@pytest.mark.parametrize("kind", ["self", "Person", "1st", ""])
async def test_a_bad_kind_is_a_validation_error(space: Space, gems_root: Path, kind: str) -> None:
    """OD-K30, OD-K57: ``self`` is not a kind a gem can resolve."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    with pytest.raises(KnowledgeValidationError):
        await knowledge.entities.resolve({"name": "Sam"}, kind=kind)


async def test_get_returns_the_entity_with_identifiers_and_needs_read_of_its_kind(
    space: Space, gems_root: Path
) -> None:
    """K-ENT-07, K-PERM-10, OD-K29, EX-08."""
    knowledge = _k(space, gems_root, "crm", [*PEOPLE, "entities.write:org"])
    kim = await knowledge.entities.resolve({"email": "kim@example.nl", "name": "Kim"}, create=True)
    acme = await knowledge.entities.resolve({"name": "Acme"}, kind="org", create=True)
    assert kim is not None and acme is not None
    got = await knowledge.entities.get(kim.ref)
    assert got.model_dump(by_alias=True) == {
        "ref": kim.ref,
        "kind": "person",
        "displayName": "Kim",
        "identifiers": ({"type": "email", "value": "kim@example.nl"}, {"type": "name", "value": "Kim"}),
    }
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.read:org")):
        await knowledge.entities.get(acme.ref)


async def test_write_does_not_imply_read(space: Space, gems_root: Path) -> None:
    """OD-K27: ``entities.write`` creates and resolves but cannot list or get."""
    knowledge = _k(space, gems_root, "writer", ["entities.write:person"])
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    with pytest.raises(KnowledgePermissionError, match=re.escape("entities.read:person")):
        await knowledge.entities.get(kim.ref)
    with pytest.raises(KnowledgePermissionError, match=re.escape("entities.read:person")):
        await knowledge.entities.list("person")


async def test_list_sorts_by_name_filters_by_query_and_leaves_out_self(space: Space, gems_root: Path) -> None:
    """K-ENT-08, OD-K29, OD-K30."""
    space.user.facts.put(predicate="identity.name", value="Sam")
    for name, email in (("bea", "bea@example.nl"), ("Anna", "anna@acme.nl"), ("Cas", "cas@example.nl")):
        space.user.entities.resolve(name=name, email=email, create=True)
    space.user.entities.resolve(name="Acme", kind="org", create=True)
    knowledge = _k(space, gems_root, "crm", ["entities.read:person"])
    assert [e.display_name for e in await knowledge.entities.list("person")] == ["Anna", "bea", "Cas"]
    assert [e.display_name for e in await knowledge.entities.list("person", {"query": "ACME"})] == ["Anna"]
    assert [e.display_name for e in await knowledge.entities.list("person", query="ea")] == ["bea"]
    assert await knowledge.entities.list("person", query="nothing matches") == []


async def test_list_without_read_throws(space: Space, gems_root: Path) -> None:
    """K-ENT-08, K-ENT-10, K-PERM-09: resolve never allows listing."""
    knowledge = _k(space, gems_root, "lookup", ["entities.resolve:person", "entities.read:org"])
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.read:person")):
        await knowledge.entities.list("person")
    assert await knowledge.entities.list("org") == []


async def test_add_identifier_reports_added_then_exists(space: Space, gems_root: Path) -> None:
    """K-ENT-09, EX-08: the same phone in another spelling already exists."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    added = await knowledge.entities.addIdentifier(kim.ref, "phone", "+31 6 1234 5678")
    assert added.model_dump(by_alias=True) == {"status": "added"}
    assert (await knowledge.entities.add_identifier(kim.ref, "phone", "+31612345678")).status == "exists"
    assert [i.value for i in (await knowledge.entities.get(kim.ref)).identifiers] == ["Kim", "+31 6 1234 5678"]


async def test_add_identifier_needs_write_of_the_entity_kind(space: Space, gems_root: Path) -> None:
    """K-ENT-09, K-PERM-22."""
    space.user.entities.resolve(name="Acme", kind="org", create=True)
    knowledge = _k(space, gems_root, "crm", [*PEOPLE, "entities.read:org"])
    [acme] = await knowledge.entities.list("org")
    with pytest.raises(KnowledgePermissionError, match=re.escape("lacks knowledge permission entities.write:org")):
        await knowledge.entities.add_identifier(acme.ref, "domain", "acme.nl")
    assert _writes_today(space, "crm") == 0


async def test_a_deleted_entity_is_no_entity_for_every_method(space: Space, gems_root: Path) -> None:
    """K-ENT-13."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    kim = await knowledge.entities.resolve({"email": "kim@example.nl"}, create=True)
    assert kim is not None
    [hosted] = space.user.entities.list("person")
    space.user.entities.delete(hosted.id)
    for call in (knowledge.entities.get(kim.ref), knowledge.entities.add_identifier(kim.ref, "name", "Kim")):
        with pytest.raises(KnowledgeNotFoundError, match="no entity"):
            await call
    assert await knowledge.entities.resolve({"email": "kim@example.nl"}) is None
    assert await knowledge.entities.list("person") == []


async def test_an_identifier_added_through_an_old_merged_ref_lands_on_the_kept_entity(
    space: Space, gems_root: Path
) -> None:
    """K-ENT-12."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    a = await knowledge.entities.resolve({"name": "Anna"}, create=True)
    b = await knowledge.entities.resolve({"name": "Bea"}, create=True)
    assert a is not None and b is not None
    ids = {e.display_name: e.id for e in space.user.entities.list("person")}
    space.user.entities.merge(keep=ids["Bea"], merge=ids["Anna"])
    assert (await knowledge.entities.add_identifier(a.ref, "email", "bea@example.nl")).status == "added"
    assert "bea@example.nl" in [i.value for i in (await knowledge.entities.get(b.ref)).identifiers]
    assert [e.ref for e in await knowledge.entities.list("person")] == [b.ref]


def test_gems_cannot_merge_or_delete_entities(space: Space, gems_root: Path) -> None:
    """K-ENT-11: the facade has no such methods."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    public = {name for name in dir(knowledge.entities) if not name.startswith("_")}
    assert public == {"resolve", "get", "list", "add_identifier", "addIdentifier"}


@pytest.mark.parametrize("length", [1000, 1001])
async def test_names_and_identifier_values_are_at_most_1000_characters(
    space: Space, gems_root: Path, length: int
) -> None:
    """K-ENT-14, K-QUOTA-11, K-QUOTA-12, K-QUOTA-14, OD-K23: 1000 passes, 1001 fails writing nothing."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    name = "n" * length
    handle = "site:" + "h" * (length - len("site:"))
    if length == 1000:
        made = await knowledge.entities.resolve({"name": name}, create=True)
        assert made is not None and made.display_name == name
        assert (await knowledge.entities.add_identifier(made.ref, "handle", handle)).status == "added"
        return
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await knowledge.entities.resolve({"name": name}, create=True)
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await knowledge.entities.add_identifier(kim.ref, "handle", handle)
    assert [e.display_name for e in space.user.entities.list("person")] == ["Kim"]
    assert _writes_today(space, "crm") == 1


async def test_entity_writes_are_changes_and_count_toward_the_quota(space: Space, gems_root: Path) -> None:
    """K-ENT-15, OD-K22, OD-K43: a creation and an added identifier are changes; a match and
    ``exists`` record nothing, though ``exists`` still counts as a write."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    await knowledge.entities.resolve({"name": "Kim"}, create=True)
    await knowledge.entities.add_identifier(kim.ref, "email", "kim@example.nl")
    await knowledge.entities.add_identifier(kim.ref, "email", "KIM@example.nl")
    assert [c.op for c in await knowledge.changes.list()] == ["entities.addIdentifier", "entities.create"]
    assert _writes_today(space, "crm") == 3


async def test_entity_changes_can_be_reverted_by_the_gem(space: Space, gems_root: Path) -> None:
    """K-CHG-08, OD-K44: reverting a creation deletes the entity; its ref then reads ``no entity``."""
    knowledge = _k(space, gems_root, "crm", PEOPLE)
    kim = await knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert kim is not None
    [created] = await knowledge.changes.list()
    assert (await knowledge.changes.revert(created.ref)).status == "reverted"
    with pytest.raises(KnowledgeNotFoundError, match="no entity"):
        await knowledge.entities.get(kim.ref)


async def test_a_switch_turned_off_stops_entity_calls_at_once(space: Space, gems_root: Path) -> None:
    """K-PERM-04 for entities."""
    install_gem(space, gems_root, "crm", PEOPLE, on=PEOPLE)
    knowledge = space.gems.context("crm").knowledge
    assert knowledge is not None
    assert await knowledge.entities.list("person") == []
    switch(space, "crm", ["entities.read:person"], on=False)
    with pytest.raises(KnowledgePermissionError):
        await knowledge.entities.list("person")


@pytest.mark.parametrize("create", ["false", "no", 0, 1, "true", []])
async def test_resolve_create_takes_only_true_or_false(space: Space, gems_root: Path, create: object) -> None:
    """K-ENT-01, OD-K28: ``create: "false"`` is refused in words and creates no one; before, any
    non-empty text meant true."""
    knowledge = _k(space, gems_root, "people", PEOPLE)
    with pytest.raises(KnowledgeValidationError, match="create must be true or false"):
        await knowledge.entities.resolve({"email": "nobody@example.com"}, {"create": create})
    assert space.user.entities.list(kind="person") == []
    assert _writes_today(space, "people") == 0


async def test_resolve_create_null_is_the_default_lookup(space: Space, gems_root: Path) -> None:
    """OD-K28: an option passed as null is left out, as in JavaScript."""
    knowledge = _k(space, gems_root, "people", PEOPLE)
    assert await knowledge.entities.resolve({"email": "nobody@example.com"}, {"create": None}) is None
