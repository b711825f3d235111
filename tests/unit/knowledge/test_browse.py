"""The host API's Knowledge-page calls (the Knowledge pages): renaming a collection, lists a
page at a time in a fixed number of queries, and restoring a deleted document by undoing its deletion."""

from __future__ import annotations

import pytest

from notochord import KnowledgeNotFoundError, KnowledgeValidationError, Space
from notochord.knowledge.browse import MAX_PAGE
from sent_sql import statements_sent


def _selects(statements: list[str]) -> int:
    return sum(1 for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH")))


def test_a_collection_is_renamed_as_an_undoable_change(space: Space) -> None:
    """K-UI-12, K-COL-13, K-COL-11: the new name is trimmed, the change undoes."""
    row = space.user.collections.create("Recipes")
    change_id = space.user.collections.rename(row.id, "  Cooking ")
    assert change_id is not None
    assert space.user.collections.get(row.id).name == "Cooking"
    assert space.changes.get(change_id).summary == "renamed collection Recipes to Cooking"
    space.changes.revert(change_id)
    assert space.user.collections.get(row.id).name == "Recipes"


def test_renaming_to_the_same_name_writes_nothing(space: Space) -> None:
    """No change record for a rename that changes nothing."""
    row = space.user.collections.create("Recipes")
    before = len(space.changes.list())
    assert space.user.collections.rename(row.id, "Recipes") is None
    assert len(space.changes.list()) == before


@pytest.mark.parametrize(
    ("target", "name", "fragment"),
    [("diary", "Journal", "built-in collection diary cannot be renamed"), ("mine", " ", "non-empty")],
)
def test_a_bad_rename_is_refused_and_changes_nothing(space: Space, target: str, name: str, fragment: str) -> None:
    """OD-K56, K-COL-11: built-ins keep their names; a name is never empty."""
    mine = space.user.collections.create("Mine")
    collection = space.user.collections.get("diary").id if target == "diary" else mine.id
    with pytest.raises(KnowledgeValidationError, match=fragment):
        space.user.collections.rename(collection, name)
    assert {r.name for r in space.user.collections.list()} == {"diary", "keep", "Mine"}


def test_only_the_user_renames_collections(space: Space) -> None:
    """K-COL-13: the assistant cannot rename a collection."""
    row = space.user.collections.create("Recipes")
    with pytest.raises(KnowledgeValidationError, match="only the user renames"):
        space.as_assistant.collections.rename(row.id, "Food")


def test_document_counts_are_one_query_over_every_collection(space: Space) -> None:
    """The tree's counts cost one query, whatever the number of collections."""
    recipes = space.user.collections.create("Recipes")
    for n in range(3):
        space.user.documents.upsert(collection=recipes.id, title=f"dish {n}", body="x")
    gone = space.user.documents.upsert(collection="keep", title="old", body="x")
    space.user.documents.delete(gone.id)
    with statements_sent(space.core.store.engine) as seen:
        counts = space.user.collections.document_counts()
    assert counts == {recipes.id: 3}
    assert _selects(seen) == 1


def test_a_page_of_documents_is_newest_first_with_its_total(space: Space) -> None:
    """K-DOC-13, OD-K42: only the collection's own documents, a slice at a time."""
    recipes = space.user.collections.create("Recipes")
    inner = space.user.collections.create("Soups", parent=recipes.id)
    ids = [space.user.documents.upsert(collection=recipes.id, title=f"dish {n}", body="x").id for n in range(5)]
    space.user.documents.upsert(collection=inner.id, title="soup", body="x")
    with statements_sent(space.core.store.engine) as seen:
        first = space.user.documents.page(recipes.id, offset=0, limit=2)
    assert [d.id for d in first.items] == [ids[4], ids[3]]
    assert (first.total, first.has_more) == (5, True)
    assert _selects(seen) <= 3
    last = space.user.documents.page(recipes.id, offset=4, limit=2)
    assert [d.id for d in last.items] == [ids[0]]
    assert not last.has_more


@pytest.mark.parametrize(("offset", "limit"), [(-1, 10), (0, 0), (0, MAX_PAGE + 1)])
def test_a_page_outside_the_bounds_is_refused(space: Space, offset: int, limit: int) -> None:
    """A malformed slice says what is allowed."""
    with pytest.raises(KnowledgeValidationError, match=r"offset|limit"):
        space.user.documents.page("keep", offset=offset, limit=limit)


def test_a_deleted_document_is_listed_and_restored_by_undoing_its_deletion(space: Space) -> None:
    """K-DOC-16, K-UI-12: restore is the undo of the delete change."""
    doc = space.user.documents.upsert(collection="keep", title="Letter", body="Dear Ann")
    deletion = space.user.documents.delete(doc.id)
    [deleted] = space.user.documents.deleted("keep")
    assert (deleted.document.id, deleted.change_id) == (doc.id, deletion)
    assert space.user.documents.deleted_one(doc.id) == deleted
    result = space.user.documents.restore(doc.id)
    assert result.count == 1
    assert space.user.documents.get(doc.id).title == "Letter"
    assert space.changes.get(deletion).status == "reverted"
    assert space.user.documents.deleted("keep") == []
    with pytest.raises(KnowledgeNotFoundError, match="no document"):
        space.user.documents.restore(doc.id)


def test_passages_of_a_deleted_document_are_not_found(space: Space) -> None:
    """Reading a document's passages follows its deletion."""
    doc = space.user.documents.upsert(collection="keep", title="Letter", body="Dear Ann")
    texts, total = space.user.documents.passages(doc.id)
    assert total == 1 and "Dear Ann" in texts[0]
    space.user.documents.delete(doc.id)
    with pytest.raises(KnowledgeNotFoundError, match="no document"):
        space.user.documents.passages(doc.id)


def test_an_entity_page_filters_by_kind_and_name_or_identifier_in_a_fixed_number_of_queries(space: Space) -> None:
    """K-ENT-08, K-ENT-12: identifiers of merged entities are the kept one's."""
    ann = space.user.entities.resolve(create=True, name="Ann Lee", email="ann@example.com")
    bob = space.user.entities.resolve(create=True, name="Bob")
    alias = space.user.entities.resolve(create=True, name="Annie", handle="github:annie")
    space.user.entities.resolve(kind="org", create=True, name="Annex Ltd")
    assert ann is not None and bob is not None and alias is not None
    space.user.entities.merge(keep=ann.id, merge=alias.id)
    for n in range(10):
        space.user.entities.resolve(create=True, name=f"person {n}", email=f"p{n}@example.com")
    with statements_sent(space.core.store.engine) as seen:
        people = space.user.entities.page(kind="person", limit=50)
    assert _selects(seen) <= 3
    assert people.total == 12
    assert [e.display_name for e in people.items][:2] == ["Ann Lee", "Bob"]
    [found] = space.user.entities.page(kind="person", query="GITHUB:ANNIE").items
    assert found.id == ann.id
    assert {(i.type, i.value) for i in found.identifiers} >= {("email", "ann@example.com"), ("handle", "github:annie")}
    assert {e.kind for e in space.user.entities.page(query="ann").items} == {"person", "org"}
    assert [e.id for e in space.user.entities.page(kind="person", query="ann", exclude=ann.id).items] == []
    assert space.user.entities.kinds() == ["org", "person"]


def test_a_malformed_kind_filter_is_refused(space: Space) -> None:
    """OD-K57."""
    with pytest.raises(KnowledgeValidationError, match="entity kind"):
        space.user.entities.page(kind="Not A Kind")


def test_facts_about_several_people_come_in_one_query_through_their_merges(space: Space) -> None:
    """K-UI-09, K-ENT-12: one set per person, a merged-in person's facts included."""
    ann = space.user.entities.resolve(create=True, name="Ann")
    annie = space.user.entities.resolve(create=True, name="Annie")
    bob = space.user.entities.resolve(create=True, name="Bob")
    assert ann is not None and annie is not None and bob is not None
    space.user.facts.put(subject=ann.id, predicate="work.company", value="Acme")
    space.user.facts.put(subject=annie.id, predicate="contact.phone", value="+31 6 1")
    space.user.facts.put(subject=bob.id, predicate="work.title", value="Chef")
    space.as_assistant.facts.put(subject=bob.id, predicate="work.project", value="guess", source="inferred")
    space.user.entities.merge(keep=ann.id, merge=annie.id)
    with statements_sent(space.core.store.engine) as seen:
        about = space.user.facts.about([ann.id, bob.id])
    assert _selects(seen) == 1
    assert sorted((f.predicate, f.value) for f in about[ann.id]) == [
        ("contact.phone", "+31 6 1"),
        ("work.company", "Acme"),
    ]
    assert [(f.predicate, f.value) for f in about[bob.id]] == [("work.title", "Chef")]


def test_display_names_of_several_entities_follow_merges_and_leave_out_the_deleted(space: Space) -> None:
    """K-ENT-12, K-ENT-13: one call names a relation's objects."""
    ann = space.user.entities.resolve(create=True, name="Ann")
    annie = space.user.entities.resolve(create=True, name="Annie")
    bob = space.user.entities.resolve(create=True, name="Bob")
    assert ann is not None and annie is not None and bob is not None
    space.user.entities.merge(keep=ann.id, merge=annie.id)
    space.user.entities.delete(bob.id)
    with statements_sent(space.core.store.engine) as seen:
        names = space.user.entities.names([ann.id, annie.id, bob.id, 9999])
    assert names == {ann.id: "Ann", annie.id: "Ann"}
    assert _selects(seen) == 1


def test_a_deleted_entity_has_no_facts_to_show(space: Space) -> None:
    """K-ENT-13: a deleted entity is "no entity" everywhere, its facts too."""
    ann = space.user.entities.resolve(create=True, name="Ann")
    assert ann is not None
    space.user.facts.put(subject=ann.id, predicate="work.company", value="Acme")
    space.user.entities.delete(ann.id)
    assert space.user.facts.about([ann.id]) == {}
