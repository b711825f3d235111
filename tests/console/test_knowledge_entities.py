"""The Knowledge pages' entities and contacts over HTTP against a real server (K-UI-12,
K-UI-09): listing and filtering, an entity's page, merging by name,
deleting, the contacts page; and who may drive them (sign-in, CSRF), and lists costing the same
number of queries whatever their length."""

from __future__ import annotations

import html
import re

import httpx
import pytest
from console_harness import ConsoleServer
from fastapi.routing import APIRoute

from notochord.console.routes import entities, knowledge
from notochord.knowledge.records import Entity
from sent_sql import statements_sent


def _person(console: ConsoleServer, name: str, **identifiers: str) -> Entity:
    found = console.space.user.entities.resolve(kind="person", create=True, name=name, **identifiers)
    assert found is not None
    return found


def test_entities_are_listed_by_name_and_filtered_by_kind_and_name(console: ConsoleServer) -> None:
    """K-UI-12, K-ENT-08, K-CON-09: the user (self) is never listed."""
    _person(console, "Zhang San", email="zhangsan@acme.nl")
    _person(console, "Ann Lee")
    acme = console.space.user.entities.resolve(kind="org", create=True, name="Acme", domain="acme.nl")
    assert acme is not None
    client = console.client()
    every = client.get("/knowledge/entities").text
    names = re.findall(r'class="doc-title">([^<]+)<', every)
    assert names == ["Acme", "Ann Lee", "Zhang San"]
    assert "self" not in names
    orgs = client.get("/knowledge/entities", params={"kind": "org"}).text
    assert re.findall(r'class="doc-title">([^<]+)<', orgs) == ["Acme"]
    by_identifier = client.get("/knowledge/entities", params={"q": "ZHANGSAN@"}).text
    assert re.findall(r'class="doc-title">([^<]+)<', by_identifier) == ["Zhang San"]
    bad = client.get("/knowledge/entities", params={"kind": "Bad Kind"})
    assert bad.status_code == 422
    assert "entity kind 'Bad Kind' is malformed" in html.unescape(bad.text)


def test_entities_come_a_page_at_a_time(console: ConsoleServer) -> None:
    """Fifty to a page, with the next page linked."""
    for n in range(53):
        _person(console, f"person {n:02}")
    client = console.client()
    first = client.get("/knowledge/entities").text
    assert first.count('data-entity="') == 50
    assert "53 found" in first and "page=2" in first
    second = client.get("/knowledge/entities", params={"page": "2"}).text
    assert re.findall(r'class="doc-title">([^<]+)<', second) == ["person 50", "person 51", "person 52"]


def test_an_entity_s_page_shows_its_identifiers_and_facts_under_the_app_s_names(console: ConsoleServer) -> None:
    """K-ENT-07, K-VOCAB-32: identifiers, and facts by their labels."""
    ann = _person(console, "Ann Lee", email="ann@example.com")
    console.space.user.facts.put(subject=ann.id, predicate="work.company", value="Acme")
    page = console.client().get(f"/knowledge/entities/{ann.id}").text
    assert '<h1 id="entity-name">Ann Lee</h1>' in page
    assert "<dt>email</dt><dd>ann@example.com</dd>" in page
    assert re.search(r"<dt>Company <code[^>]*>work.company</code></dt>\s*<dd>Acme ", page)


def test_merging_by_name_keeps_this_entity_and_the_old_id_leads_to_it(console: ConsoleServer) -> None:
    """K-UI-12, K-ENT-11, K-ENT-12, K-UI-11: the merge is one undoable change."""
    ann = _person(console, "Ann Lee", email="ann@example.com")
    annie = _person(console, "Annie", phone="+31 6 12345678")
    console.space.user.facts.put(subject=annie.id, predicate="work.title", value="Chef")
    client, token = console.signed_in("/knowledge/entities")
    answer = client.post(f"/knowledge/entities/{ann.id}/merge", data={"csrf": token, "other": "annie"})
    assert answer.status_code == 303
    page = client.get(answer.headers["location"]).text
    assert "Merged." in page
    assert "<dt>phone</dt><dd>+31 6 12345678</dd>" in page
    assert ">Chef " in page
    old = client.get(f"/knowledge/entities/{annie.id}")
    assert old.status_code == 303 and old.headers["location"] == f"/knowledge/entities/{ann.id}"
    [merge] = [c for c in console.space.changes.list() if c.op == "entities.merge"]
    assert "merged Annie into Ann Lee" in client.get("/changes").text
    assert f'action="/changes/{merge.id}/undo"' in page
    undone = client.post(f"/changes/{merge.id}/undo", data={"csrf": token})
    assert "Undone: 1 change." in undone.text
    assert console.space.user.entities.get(annie.id).id == annie.id


def test_a_merge_that_names_nobody_is_refused_next_to_the_field(console: ConsoleServer) -> None:
    """The sentence says what is wrong, and nothing is merged."""
    ann = _person(console, "Ann Lee")
    _person(console, "Bob")
    acme = console.space.user.entities.resolve(kind="org", create=True, name="Acme")
    assert acme is not None
    client, token = console.signed_in("/knowledge/entities")
    for name in ("Carol", "Acme", "Ann Lee"):
        answer = client.post(f"/knowledge/entities/{ann.id}/merge", data={"csrf": token, "other": name})
        assert answer.status_code == 422, name
        assert f"Nothing else of this kind is named “{name}”." in html.unescape(answer.text)
        assert 'aria-describedby="merge-error"' in answer.text
    empty = client.post(f"/knowledge/entities/{ann.id}/merge", data={"csrf": token, "other": " "})
    assert empty.status_code == 422 and "Type the other one&#39;s name first." in empty.text
    assert [c for c in console.space.changes.list() if c.op == "entities.merge"] == []


def test_a_name_several_entities_share_lists_them_to_choose_from(console: ConsoleServer) -> None:
    """ "Pick the other by name" when the name is ambiguous."""
    ann = _person(console, "Ann Lee")
    first = _person(console, "Ann Smith", email="a@one.nl")
    _person(console, "Ann Jones", email="a@two.nl")
    client, token = console.signed_in("/knowledge/entities")
    answer = client.post(
        f"/knowledge/entities/{ann.id}/merge", data={"csrf": token, "other": "ann"}, headers={"HX-Request": "true"}
    )
    assert answer.status_code == 422
    assert "Several match “ann”: choose one." in html.unescape(answer.text)
    candidates = answer.text.split('id="merge-candidates"')[1]
    assert "Merge Ann Smith" in candidates and "Merge Ann Jones" in candidates and "Merge Ann Lee" not in candidates
    chosen = client.post(f"/knowledge/entities/{ann.id}/merge", data={"csrf": token, "other_id": str(first.id)})
    assert chosen.status_code == 303
    assert console.space.user.entities.get(first.id).id == ann.id


def test_the_one_entity_with_exactly_that_name_is_merged_however_many_others_contain_it(
    console: ConsoleServer,
) -> None:
    """K-ENT-11: the exact name wins, even when many other names contain the
    typed one and sort before it."""
    kept = _person(console, "Ann Lee")
    exact = _person(console, "Zz", email="zz@example.com")
    for n in range(15):
        _person(console, f"Azz {n:02}")
    client, token = console.signed_in("/knowledge/entities")
    answer = client.post(f"/knowledge/entities/{kept.id}/merge", data={"csrf": token, "other": "zz"})
    assert answer.status_code == 303
    assert console.space.user.entities.get(exact.id).id == kept.id


def test_deleting_an_entity_ends_the_relations_to_it_and_can_be_undone(console: ConsoleServer) -> None:
    """K-UI-12, K-ENT-13, K-UI-11: the relation ends in the same change."""
    ann = _person(console, "Ann Lee")
    bob = _person(console, "Bob")
    console.space.user.facts.put(subject=bob.id, predicate="relation.colleague", object=ann.id)
    client, token = console.signed_in("/knowledge/entities")
    answer = client.post(f"/knowledge/entities/{ann.id}/delete", data={"csrf": token})
    assert answer.status_code == 303
    listed = client.get(answer.headers["location"]).text
    assert "Deleted." in listed and ">Ann Lee<" not in listed
    assert client.get(f"/knowledge/entities/{ann.id}").status_code == 404
    assert console.space.user.facts.lookup(bob.id, "relation") == []
    assert "deleted Ann Lee and 1 relation to it" in client.get("/changes").text
    change = int(answer.headers["location"].split("deleted=")[1])
    assert f'action="/changes/{change}/undo"' in listed
    client.post(f"/changes/{change}/undo", data={"csrf": token})
    assert [f.object for f in console.space.user.facts.lookup(bob.id, "relation")] == [ann.id]


def test_the_contacts_page_has_one_set_per_person_and_never_the_user(console: ConsoleServer) -> None:
    """K-UI-09, K-VOCAB-32: people's facts under the app's names."""
    ann = _person(console, "Ann Lee")
    bob = _person(console, "Bob")
    console.space.user.facts.put(subject=ann.id, predicate="work.company", value="Acme")
    console.space.user.facts.put(subject=bob.id, predicate="health.allergy", value="nuts")
    console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    page = console.client().get("/knowledge/contacts").text
    assert page.count('class="panel contact"') == 2
    ann_card = page.split(f'id="person-{ann.id}"')[1].split("</section>")[0]
    assert re.search(r'<span id="[^"]+-label">Company</span>', ann_card)
    assert 'value="Acme"' in ann_card and "nuts" not in ann_card
    bob_card = page.split(f'id="person-{bob.id}"')[1].split("</section>")[0]
    assert "health.allergy" in bob_card and "nuts" in bob_card
    assert "Leiden" not in page


def test_a_contact_fact_is_filled_in_changed_and_deleted_as_the_user(console: ConsoleServer) -> None:
    """K-UI-09, K-FACT-27: what the user enters counts as said by the user."""
    ann = _person(console, "Ann Lee")
    client, token = console.signed_in("/knowledge/entities")
    headers = {"HX-Request": "true"}
    saved = client.post(
        f"/knowledge/contacts/{ann.id}/facts",
        data={"csrf": token, "predicate": "work.company", "value": "Acme"},
        headers=headers,
    )
    assert saved.status_code == 200
    assert "<html" not in saved.text and "Saved." in saved.text
    [fact] = console.space.user.facts.lookup(ann.id, "work.company")
    assert (fact.value, fact.origin) == ("Acme", "user")
    plain = client.post(
        f"/knowledge/contacts/{ann.id}/facts", data={"csrf": token, "predicate": "work.company", "value": "Initech"}
    )
    assert plain.status_code == 303
    [fact] = console.space.user.facts.lookup(ann.id, "work.company")
    assert fact.value == "Initech"
    deleted = client.post(f"/knowledge/contacts/{ann.id}/facts/{fact.id}/delete", data={"csrf": token}, headers=headers)
    assert "Deleted." in deleted.text
    assert console.space.user.facts.lookup(ann.id, "work.company") == []


def test_a_contact_fact_the_page_does_not_offer_or_an_empty_one_is_refused(console: ConsoleServer) -> None:
    """K-UI-09: the page writes only what it lists, and says what is missing."""
    ann = _person(console, "Ann Lee")
    bob = _person(console, "Bob")
    bobs = console.space.user.facts.put(subject=bob.id, predicate="work.title", value="Chef")
    mine = console.space.user.facts.put(predicate="location.home.city", value="Leiden")
    client, token = console.signed_in("/knowledge/entities")
    empty = client.post(
        f"/knowledge/contacts/{ann.id}/facts", data={"csrf": token, "predicate": "work.company", "value": " "}
    )
    assert empty.status_code == 422 and "Type a value first." in empty.text
    other = client.post(
        f"/knowledge/contacts/{ann.id}/facts", data={"csrf": token, "predicate": "finance.currency", "value": "EUR"}
    )
    assert other.status_code == 404
    for fact_id in (bobs.id, mine.id):
        answer = client.post(f"/knowledge/contacts/{ann.id}/facts/{fact_id}/delete", data={"csrf": token})
        assert answer.status_code == 404
    self_page = client.post(
        f"/knowledge/contacts/{ann.id + 1000}/facts", data={"csrf": token, "predicate": "work.company", "value": "X"}
    )
    assert self_page.status_code == 404
    assert console.space.user.facts.lookup(ann.id) == []
    assert len(console.space.user.facts.lookup(bob.id)) == 1
    assert len(console.space.user.facts.lookup("self", "location")) == 1


def _knowledge_routes(sample: int) -> list[tuple[str, str]]:
    found = []
    for router in (knowledge.router, entities.router):
        for route in router.routes:
            assert isinstance(route, APIRoute) and route.methods is not None
            path = re.sub(r"\{[a-z_]+\}", str(sample), route.path)
            found += [(method, path) for method in sorted(route.methods)]
    return found


def test_no_knowledge_page_or_action_without_signing_in(console: ConsoleServer) -> None:
    """K-UI-12: every Knowledge route answers 401 to a browser not signed in."""
    doc = console.space.user.documents.upsert(collection="keep", title="Letter", body="x")
    client = console.client(signed_in=False)
    for method, path in _knowledge_routes(doc.id):
        answer = client.request(method, path, data={"name": "X", "parent": ""})
        assert answer.status_code == 401, (method, path)
    assert console.space.user.documents.get(doc.id).title == "Letter"


def test_no_knowledge_action_without_the_csrf_token(console: ConsoleServer) -> None:
    """K-UI-12: every state-changing Knowledge route refuses a post without the
    session's token (403) before doing anything."""
    ann = _person(console, "Ann Lee")
    _person(console, "Annie")
    doc = console.space.user.documents.upsert(collection="keep", title="Letter", body="x")
    before = console.space.changes.list()
    client = console.client()
    posts = [path for method, path in _knowledge_routes(ann.id) if method == "POST"]
    assert len(posts) >= 10
    for path in [*posts, f"/knowledge/documents/{doc.id}/delete"]:
        answer = client.post(
            path, data={"name": "X", "other": "Annie", "predicate": "work.company", "value": "Acme", "parent": ""}
        )
        assert answer.status_code == 403, path
        assert "nothing was changed" in answer.text
    assert console.space.changes.list() == before


def _queries_for(console: ConsoleServer, client: httpx.Client, path: str) -> int:
    with statements_sent(console.space.core.store.engine) as sent:
        assert client.get(path).status_code == 200
    return sum(1 for s in sent if s.lstrip().upper().startswith(("SELECT", "WITH")))


@pytest.mark.parametrize("page", ["tree", "collection", "entities", "contacts"])
def test_a_list_costs_the_same_queries_for_three_rows_as_for_thirty(console: ConsoleServer, page: str) -> None:
    """No query per row (no N+1) on the Knowledge lists."""
    space = console.space
    recipes = space.user.collections.create("Recipes")
    path = {
        "tree": "/knowledge",
        "collection": f"/knowledge/collections/{recipes.id}",
        "entities": "/knowledge/entities",
        "contacts": "/knowledge/contacts",
    }[page]

    def grow(to: int, start: int) -> None:
        for n in range(start, to):
            if page == "tree":
                space.user.collections.create(f"c{n}", parent=recipes.id)
            elif page == "collection":
                space.user.documents.upsert(collection=recipes.id, title=f"d{n}", body="x")
            else:
                person = space.user.entities.resolve(create=True, name=f"p{n:02}", email=f"p{n}@x.nl")
                assert person is not None
                space.user.facts.put(subject=person.id, predicate="work.company", value=f"co {n}")

    client = console.client()
    grow(3, 0)
    few = _queries_for(console, client, path)
    grow(20 if page == "contacts" else 30, 3)
    many = _queries_for(console, client, path)
    assert many == few
