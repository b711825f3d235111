"""The Knowledge pages' collections and documents over HTTP against a real server (K-UI-12): the
tree, creating, renaming and moving collections by the API's rules,
documents a page at a time, reading, searching, moving, deleting and restoring them."""

from __future__ import annotations

import html
import re

import httpx
from console_harness import ConsoleServer

from notochord.console.views.knowledge import DOCS_PER_PAGE
from notochord.knowledge.writes import USER


def _text(answer: httpx.Response) -> str:
    return html.unescape(answer.text)


def test_the_tree_nests_collections_with_their_document_counts(console: ConsoleServer) -> None:
    """K-UI-12, K-CON-16, K-DOC-13: each collection counts its own documents."""
    space = console.space
    recipes = space.user.collections.create("Recipes")
    soups = space.user.collections.create("Soups", parent=recipes.id)
    for title in ("Stew", "Pie"):
        space.user.documents.upsert(collection=recipes.id, title=title, body="x")
    space.user.documents.upsert(collection=soups.id, title="Borscht", body="x")
    page = console.client().get("/knowledge")
    assert page.status_code == 200
    tree = page.text.split('id="kn-tree"')[1].split("</section>")[0]
    assert re.search(rf'data-collection="{recipes.id}">\s*<a [^>]*>Recipes</a>\s*<span[^>]*>2 documents<', tree)
    assert re.search(rf'data-collection="{soups.id}">\s*<a [^>]*>Soups</a>\s*<span[^>]*>1 document<', tree)
    # Soups sits inside Recipes' list item, diary and keep at the top
    assert tree.index(">Recipes<") < tree.index(">Soups<") < tree.index("</li>", tree.index(">Soups<"))
    assert ">diary<" in tree and ">keep<" in tree


def test_a_collection_is_created_at_the_top_or_inside_another(console: ConsoleServer) -> None:
    """K-COL-06, K-COL-07: the new collection's page follows."""
    client, token = console.signed_in("/knowledge")
    top = client.post("/knowledge/collections", data={"csrf": token, "name": " Recipes ", "parent": ""})
    assert top.status_code == 303
    [recipes] = [r for r in console.space.user.collections.list() if r.name == "Recipes"]
    assert top.headers["location"] == f"/knowledge/collections/{recipes.id}?created=1"
    inner = client.post("/knowledge/collections", data={"csrf": token, "name": "Soups", "parent": str(recipes.id)})
    assert inner.status_code == 303
    [soups] = [r for r in console.space.user.collections.list() if r.name == "Soups"]
    assert soups.parent_id == recipes.id
    assert "Created." in client.get(inner.headers["location"]).text


def test_a_collection_without_a_name_is_refused_next_to_the_field(console: ConsoleServer) -> None:
    """K-COL-11: the form says what to do and nothing is created."""
    client, token = console.signed_in("/knowledge")
    before = console.space.user.collections.list()
    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "   ", "parent": ""})
    assert answer.status_code == 422
    assert 'id="new-name-error" role="alert">Type a name first.<' in answer.text
    assert 'aria-invalid="true" aria-describedby="new-name-error"' in answer.text
    assert console.space.user.collections.list() == before


def test_nothing_is_created_inside_diary(console: ConsoleServer) -> None:
    """K-COL-08, OD-K33: the API's refusal is the sentence beside the picker."""
    client, token = console.signed_in("/knowledge")
    diary = console.space.user.collections.get("diary")
    before = console.space.user.collections.list()
    answer = client.post("/knowledge/collections", data={"csrf": token, "name": "Notes", "parent": str(diary.id)})
    assert answer.status_code == 422
    assert 'id="new-parent-error" role="alert">nothing can be created or moved inside the diary collection<' in (
        answer.text
    )
    assert console.space.user.collections.list() == before


def test_a_collection_is_renamed_and_the_rename_is_on_view_changes(console: ConsoleServer) -> None:
    """K-UI-12, K-UI-11, K-COL-11: an undoable change of the user's."""
    recipes = console.space.user.collections.create("Recipes")
    client, token = console.signed_in("/knowledge")
    answer = client.post(f"/knowledge/collections/{recipes.id}/rename", data={"csrf": token, "name": "Cooking"})
    assert answer.status_code == 303
    assert console.space.user.collections.get(recipes.id).name == "Cooking"
    changes = client.get("/changes").text
    assert "renamed collection Recipes to Cooking" in changes
    [rename] = [c for c in console.space.changes.list() if c.op == "collections.rename"]
    undone = client.post(f"/changes/{rename.id}/undo", data={"csrf": token})
    assert "Undone: 1 change." in undone.text
    assert console.space.user.collections.get(recipes.id).name == "Recipes"


def test_a_bad_rename_is_refused_next_to_the_field(console: ConsoleServer) -> None:
    """OD-K56: a built-in keeps its name; an empty name is asked for again."""
    recipes = console.space.user.collections.create("Recipes")
    keep = console.space.user.collections.get("keep")
    client, token = console.signed_in("/knowledge")
    empty = client.post(f"/knowledge/collections/{recipes.id}/rename", data={"csrf": token, "name": ""})
    assert empty.status_code == 422
    assert 'id="rename-error" role="alert">Type a name first.<' in empty.text
    builtin = client.post(f"/knowledge/collections/{keep.id}/rename", data={"csrf": token, "name": "Treasures"})
    assert builtin.status_code == 422
    assert "the built-in collection keep cannot be renamed" in builtin.text
    assert console.space.user.collections.get(recipes.id).name == "Recipes"
    assert console.space.user.collections.get(keep.id).name == "keep"


def test_a_collection_moves_under_another_and_back_to_the_top(console: ConsoleServer) -> None:
    """K-UI-12, K-COL-13, K-COL-15: the same id, a new place."""
    recipes = console.space.user.collections.create("Recipes")
    soups = console.space.user.collections.create("Soups")
    client, token = console.signed_in("/knowledge")
    under = client.post(f"/knowledge/collections/{soups.id}/move", data={"csrf": token, "parent": str(recipes.id)})
    assert under.status_code == 303
    assert console.space.user.collections.get(soups.id).parent_id == recipes.id
    page = client.get(f"/knowledge/collections/{soups.id}").text
    assert re.search(
        rf'<a href="/knowledge/collections/{recipes.id}">Recipes</a> › <span aria-current="page">Soups', page
    )
    top = client.post(f"/knowledge/collections/{soups.id}/move", data={"csrf": token, "parent": ""})
    assert top.status_code == 303
    assert console.space.user.collections.get(soups.id).parent_id is None
    assert "moved collection Soups" in client.get("/changes").text


def test_moving_a_collection_into_its_own_subfolder_is_refused_with_the_api_s_sentence(
    console: ConsoleServer,
) -> None:
    """OD-K56, K-COL-13: the refusal sits next to the picker; nothing moves."""
    recipes = console.space.user.collections.create("Recipes")
    soups = console.space.user.collections.create("Soups", parent=recipes.id)
    client, token = console.signed_in("/knowledge")
    changes_before = len(console.space.changes.list())
    answer = client.post(f"/knowledge/collections/{recipes.id}/move", data={"csrf": token, "parent": str(soups.id)})
    assert answer.status_code == 422
    assert (
        'id="move-error" role="alert">a collection cannot be moved into itself or one of its subfolders<' in answer.text
    )
    assert (
        'id="move-parent" name="parent" class="grow" aria-invalid="true" aria-describedby="move-error"' in answer.text
    )
    assert console.space.user.collections.get(recipes.id).parent_id is None
    assert len(console.space.changes.list()) == changes_before


def test_built_in_collections_offer_no_rename_or_move_and_refuse_a_posted_one(console: ConsoleServer) -> None:
    """OD-K56: diary and keep stay where they are."""
    diary = console.space.user.collections.get("diary")
    recipes = console.space.user.collections.create("Recipes")
    client, token = console.signed_in("/knowledge")
    assert 'id="settings"' not in client.get(f"/knowledge/collections/{diary.id}").text
    answer = client.post(f"/knowledge/collections/{diary.id}/move", data={"csrf": token, "parent": str(recipes.id)})
    assert answer.status_code == 422
    assert "the built-in collection diary cannot be moved" in answer.text
    assert console.space.user.collections.get(diary.id).parent_id is None


def test_an_htmx_move_answers_with_the_changed_part_of_the_page(console: ConsoleServer) -> None:
    """With htmx, the form swaps ``#knowledge-main``, refusals included."""
    recipes = console.space.user.collections.create("Recipes")
    soups = console.space.user.collections.create("Soups", parent=recipes.id)
    client, token = console.signed_in("/knowledge")
    headers = {"HX-Request": "true"}
    moved = client.post(f"/knowledge/collections/{soups.id}/move", data={"csrf": token, "parent": ""}, headers=headers)
    assert moved.status_code == 200
    assert "<html" not in moved.text
    assert '<div id="knowledge-main">' in moved.text
    assert '<p class="notice" role="status">Moved.</p>' in moved.text
    refused = client.post(
        f"/knowledge/collections/{recipes.id}/rename", data={"csrf": token, "name": ""}, headers=headers
    )
    assert refused.status_code == 422
    assert "<html" not in refused.text and "Type a name first." in refused.text


def test_unknown_collections_and_documents_are_not_found_pages(console: ConsoleServer) -> None:
    """A stale or made-up id is a page that says so, and changes nothing."""
    client, token = console.signed_in("/knowledge")
    for path in ("/knowledge/collections/999", "/knowledge/documents/999", "/knowledge/collections/abc"):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "There is nothing at this address." in answer.text
    moved = client.post("/knowledge/collections/999/move", data={"csrf": token, "parent": ""})
    assert moved.status_code == 404


def test_a_collection_s_documents_come_a_page_at_a_time(console: ConsoleServer) -> None:
    """K-DOC-13, K-DOC-14: newest first, paginated."""
    recipes = console.space.user.collections.create("Recipes")
    for n in range(DOCS_PER_PAGE + 3):
        console.space.user.documents.upsert(collection=recipes.id, title=f"dish {n:03}", body="x")
    client = console.client()
    first = client.get(f"/knowledge/collections/{recipes.id}").text
    assert first.count('data-document="') == DOCS_PER_PAGE
    assert f">dish {DOCS_PER_PAGE + 2:03}<" in first and ">dish 002<" not in first
    assert f"{DOCS_PER_PAGE + 3} documents" in first
    assert f'href="/knowledge/collections/{recipes.id}?page=2">Older' in first
    second = client.get(f"/knowledge/collections/{recipes.id}", params={"page": "2"}).text
    assert second.count('data-document="') == 3
    assert ">dish 000<" in second and "Older" not in second.split('class="pager"')[1]
    bad = client.get(f"/knowledge/collections/{recipes.id}", params={"page": "zero"})
    assert bad.status_code == 422
    assert "is not a page number" in bad.text


def test_a_document_reads_with_its_collection_its_text_and_who_added_it_when(console: ConsoleServer) -> None:
    """K-UI-12, K-DOC-11: title, collection, text, added by whom and when."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.as_assistant.documents.upsert(
        collection=recipes.id, title="Tomato stew", body="Brown the beef.\n\nAdd <tomatoes>."
    )
    record = console.space.user.documents.get(doc.id)
    page = _text(console.client().get(f"/knowledge/documents/{doc.id}"))
    assert "<h1>Tomato stew</h1>" in page
    assert f'<a href="/knowledge/collections/{recipes.id}" id="doc-collection">Recipes</a>' in page
    assert '<dd id="doc-author">Assistant</dd>' in page
    assert f'<time datetime="{record.created_at}">' in page
    assert "Brown the beef.\n\nAdd <tomatoes>." in page
    assert "<tomatoes>" not in console.client().get(f"/knowledge/documents/{doc.id}").text


def test_an_imported_document_shows_its_passages(console: ConsoleServer) -> None:
    """K-DOC-06: imported content has no body, only its indexed passages."""
    doc = console.space.user.documents.upsert(
        collection="keep", title="Article", text="Passage about rivers.", source_uri="https://example.com/a"
    )
    page = console.client().get(f"/knowledge/documents/{doc.id}").text
    assert re.search(r'<ol class="passages" id="doc-passages"><li>[^<]*Passage about rivers\.', page)
    assert "https://example.com/a" in page


def test_search_within_a_collection_finds_documents_in_it_and_its_subfolders_only(console: ConsoleServer) -> None:
    """K-SRCH-04, K-SRCH-02: title and text through the host search."""
    recipes = console.space.user.collections.create("Recipes")
    soups = console.space.user.collections.create("Soups", parent=recipes.id)
    console.space.user.documents.upsert(collection=soups.id, title="Borscht", body="beetroot soup")
    console.space.user.documents.upsert(collection="keep", title="Beetroot field notes", body="beetroot farm")
    client = console.client()
    inside = client.get(f"/knowledge/collections/{recipes.id}", params={"q": "beetroot"}).text
    hits = inside.split('id="hits"')[1].split("</section>")[0]
    assert ">Borscht<" in hits and "field notes" not in hits
    everywhere = client.get("/knowledge", params={"q": "beetroot"}).text
    hits = everywhere.split('id="hits"')[1].split("</section>")[0]
    assert ">Borscht<" in hits and ">Beetroot field notes<" in hits
    none = client.get("/knowledge", params={"q": "zucchini"}).text
    assert "No document matches." in none


def test_a_document_moves_between_collections(console: ConsoleServer) -> None:
    """K-UI-12, K-COL-13, K-DOC-20: the same document, a new collection."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection="keep", title="Stew", body="x")
    client, token = console.signed_in("/knowledge")
    answer = client.post(f"/knowledge/documents/{doc.id}/move", data={"csrf": token, "collection": str(recipes.id)})
    assert answer.status_code == 303
    assert console.space.user.documents.get(doc.id).collection_id == recipes.id
    assert "moved document Stew" in client.get("/changes").text


def test_a_keyed_document_or_one_moved_into_diary_is_refused_next_to_the_field(console: ConsoleServer) -> None:
    """K-DOC-19, OD-K56: the API's sentences, and the document stays."""
    recipes = console.space.user.collections.create("Recipes")
    keyed = console.space.user.documents.upsert(collection="keep", key="k-1", title="Keyed", body="x")
    loose = console.space.user.documents.upsert(collection="keep", title="Loose", body="x")
    diary = console.space.user.collections.get("diary")
    client, token = console.signed_in("/knowledge")
    page = client.get(f"/knowledge/documents/{keyed.id}").text
    assert 'id="doc-move"' not in page and "it stays in this collection" in page
    refused = client.post(f"/knowledge/documents/{keyed.id}/move", data={"csrf": token, "collection": str(recipes.id)})
    assert refused.status_code == 422
    assert 'id="doc-move-error" role="alert">a document written with a key cannot be moved' in refused.text
    into_diary = client.post(f"/knowledge/documents/{loose.id}/move", data={"csrf": token, "collection": str(diary.id)})
    assert into_diary.status_code == 422
    assert "nothing can be moved into the diary collection" in into_diary.text
    blank = client.post(f"/knowledge/documents/{loose.id}/move", data={"csrf": token, "collection": ""})
    assert blank.status_code == 422 and "Choose a collection first." in blank.text
    keep = console.space.user.collections.get("keep").id
    assert {console.space.user.documents.get(d.id).collection_id for d in (keyed, loose)} == {keep}


def test_a_deleted_document_is_restored_and_both_are_changes_on_the_changes_page(console: ConsoleServer) -> None:
    """K-UI-12, K-DOC-16, K-UI-11: delete, then restore = undo of the deletion."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection=recipes.id, title="Stew", body="x")
    client, token = console.signed_in("/knowledge")
    deleted = client.post(f"/knowledge/documents/{doc.id}/delete", data={"csrf": token})
    assert deleted.status_code == 303
    assert console.space.user.documents.page(recipes.id).total == 0
    page = client.get(deleted.headers["location"]).text
    assert "Deleted. You can restore it below" in page
    assert f'data-deleted="{doc.id}"' in page
    restored = client.post(f"/knowledge/documents/{doc.id}/restore", data={"csrf": token})
    assert restored.status_code == 303
    assert console.space.user.documents.get(doc.id).title == "Stew"
    changes = client.get("/changes").text
    assert "reverted: deleted document Stew" in changes
    assert re.search(r'status-reverted" data-change="\d+">.*?deleted document Stew', changes, re.S)
    again = client.post(f"/knowledge/documents/{doc.id}/restore", data={"csrf": token})
    assert again.status_code == 404


def test_deleting_from_the_list_with_htmx_swaps_the_list_with_a_restore_button(console: ConsoleServer) -> None:
    """The partial answer of a list's Delete offers Restore at once."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection=recipes.id, title="Stew", body="x")
    client, token = console.signed_in("/knowledge")
    answer = client.post(
        f"/knowledge/documents/{doc.id}/delete", data={"csrf": token, "from": "list"}, headers={"HX-Request": "true"}
    )
    assert answer.status_code == 200
    assert "<html" not in answer.text
    assert f'action="/knowledge/documents/{doc.id}/restore"' in answer.text
    assert f'data-document="{doc.id}"' not in answer.text
    back = client.post(f"/knowledge/documents/{doc.id}/restore", data={"csrf": token}, headers={"HX-Request": "true"})
    assert back.status_code == 200
    assert "Restored." in back.text and f'data-document="{doc.id}"' in back.text


def test_a_knowledge_base_of_the_rest_service_is_not_one_of_the_user_s_folders(console: ConsoleServer) -> None:
    """OD-B24: the service's store is neither listed nor renamed nor moved here."""
    space = console.space
    with space.core.store.write(actor=USER, run_id=None) as tx:
        kb = space.core.collections.create_kb_root(tx.conn, name="Team handbook", now=tx.now)
    recipes = space.user.collections.create("Recipes")
    client, token = console.signed_in("/knowledge")
    assert "Team handbook" not in client.get("/knowledge").text
    assert client.get(f"/knowledge/collections/{kb}").status_code == 404
    renamed = client.post(f"/knowledge/collections/{kb}/rename", data={"csrf": token, "name": "Mine now"})
    assert renamed.status_code == 404
    moved = client.post(f"/knowledge/collections/{kb}/move", data={"csrf": token, "parent": str(recipes.id)})
    assert moved.status_code == 404
    assert space.user.collections.get(kb).name == "Team handbook"
    assert space.user.collections.get(kb).parent_id is None
