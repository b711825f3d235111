"""Moving a collection or a document in the console to where it already is, or renaming a collection
to its own name, says so and changes nothing (K-UI-12, K-COL-06, K-COL-13, K-DOC-19, K-CHG-01).

The host API answers such a move with no change id, as nothing was recorded; the console must not
then announce "Moved.", but say, in the reader's language, that it was already there.
"""

from __future__ import annotations

import html

import httpx
from console_harness import ConsoleServer

_HTMX = {"HX-Request": "true"}
_COLLECTION_ALREADY = {
    "en": "This collection is already there; nothing changed.",
    "zh": "这个知识库已经在那里,没有任何改动。",
}
_DOCUMENT_ALREADY = {
    "en": "This document is already in that collection; nothing changed.",
    "zh": "这篇文档已经在那个知识库里,没有任何改动。",
}


def _notice(answer: httpx.Response) -> str:
    start = answer.text.index('<p class="notice" role="status">') + len('<p class="notice" role="status">')
    return html.unescape(answer.text[start : answer.text.index("</p>", start)])


def test_an_htmx_move_of_a_collection_to_its_own_parent_says_it_is_already_there(console: ConsoleServer) -> None:
    """K-COL-13, K-CHG-01: no change is recorded and the notice says nothing changed."""
    kitchen = console.space.user.collections.create("Kitchen")
    recipes = console.space.user.collections.create("Recipes", parent=kitchen.id)
    before = console.space.changes.list()
    client, token = console.signed_in("/knowledge")
    for lang, headers in (("en", _HTMX), ("zh", {**_HTMX, "Accept-Language": "zh"})):
        answer = client.post(
            f"/knowledge/collections/{recipes.id}/move",
            data={"csrf": token, "parent": str(kitchen.id)},
            headers=headers,
        )
        assert answer.status_code == 200
        assert _notice(answer) == _COLLECTION_ALREADY[lang]
    assert console.space.changes.list() == before


def test_an_htmx_move_of_a_top_level_collection_to_the_top_says_it_is_already_there(console: ConsoleServer) -> None:
    """K-COL-13: "the top level" is a place too."""
    kitchen = console.space.user.collections.create("Kitchen")
    client, token = console.signed_in("/knowledge")
    answer = client.post(f"/knowledge/collections/{kitchen.id}/move", data={"csrf": token, "parent": ""}, headers=_HTMX)
    assert _notice(answer) == _COLLECTION_ALREADY["en"]


def test_a_plain_move_of_a_collection_to_its_own_parent_lands_on_a_page_saying_so(console: ConsoleServer) -> None:
    """K-UI-12: without htmx the redirect's page carries the same notice."""
    kitchen = console.space.user.collections.create("Kitchen")
    recipes = console.space.user.collections.create("Recipes", parent=kitchen.id)
    client, token = console.signed_in("/knowledge")
    answer = client.post(
        f"/knowledge/collections/{recipes.id}/move",
        data={"csrf": token, "parent": str(kitchen.id)},
        headers={"Accept-Language": "zh"},
        follow_redirects=True,
    )
    assert answer.status_code == 200
    assert _notice(answer) == _COLLECTION_ALREADY["zh"]


def test_a_real_collection_move_still_says_moved(console: ConsoleServer) -> None:
    """K-COL-13: the notice for a move that happened is unchanged."""
    kitchen = console.space.user.collections.create("Kitchen")
    recipes = console.space.user.collections.create("Recipes")
    client, token = console.signed_in("/knowledge")
    answer = client.post(
        f"/knowledge/collections/{recipes.id}/move", data={"csrf": token, "parent": str(kitchen.id)}, headers=_HTMX
    )
    assert _notice(answer) == "Moved."


def test_moving_a_document_to_its_own_collection_says_it_is_already_there(console: ConsoleServer) -> None:
    """K-DOC-19, K-CHG-01: with htmx and without, in English and Chinese; nothing is recorded."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection=recipes.id, title="Stew", body="leeks")
    before = console.space.changes.list()
    client, token = console.signed_in("/knowledge")
    form = {"csrf": token, "collection": str(recipes.id)}
    swapped = client.post(f"/knowledge/documents/{doc.id}/move", data=form, headers=_HTMX)
    assert swapped.status_code == 200
    assert _notice(swapped) == _DOCUMENT_ALREADY["en"]
    redirected = client.post(
        f"/knowledge/documents/{doc.id}/move", data=form, headers={"Accept-Language": "zh"}, follow_redirects=True
    )
    assert redirected.status_code == 200
    assert _notice(redirected) == _DOCUMENT_ALREADY["zh"]
    assert console.space.changes.list() == before
    assert console.space.user.documents.get(doc.id).collection_id == recipes.id


def test_a_real_document_move_still_says_moved(console: ConsoleServer) -> None:
    """K-DOC-19: the notice for a move that happened is unchanged."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection="keep", title="Stew", body="leeks")
    client, token = console.signed_in("/knowledge")
    answer = client.post(
        f"/knowledge/documents/{doc.id}/move", data={"csrf": token, "collection": str(recipes.id)}, headers=_HTMX
    )
    assert _notice(answer) == "Moved."


def test_renaming_a_collection_to_its_own_name_says_nothing_changed(console: ConsoleServer) -> None:
    """K-COL-06, K-CHG-01: the same name (in either Unicode spelling) is no rename and no change."""
    console.space.user.collections.create("Caf\u00e9")
    cafe = next(c for c in console.space.user.collections.list() if c.name == "Caf\u00e9")
    before = console.space.changes.list()
    client, token = console.signed_in("/knowledge")
    expected = {
        "en": "The collection already has this name; nothing changed.",
        "zh": "这个知识库已经叫这个名字,没有任何改动。",
    }
    for lang, headers in (("en", _HTMX), ("zh", {**_HTMX, "Accept-Language": "zh"})):
        answer = client.post(
            f"/knowledge/collections/{cafe.id}/rename",
            data={"csrf": token, "name": "Cafe\u0301"},
            headers=headers,
        )
        assert answer.status_code == 200
        assert _notice(answer) == expected[lang]
    assert console.space.changes.list() == before
    renamed = client.post(
        f"/knowledge/collections/{cafe.id}/rename", data={"csrf": token, "name": "Bar"}, headers=_HTMX
    )
    assert _notice(renamed) == "Renamed."
