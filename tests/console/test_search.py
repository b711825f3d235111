"""The Search page over HTTP against a real server: the API's filters,
passages with their locators and why they were found, and the matched words highlighted without
ever letting a document's own markup through."""

from __future__ import annotations

import html
import re

from console_harness import ConsoleServer

from notochord.console.views.search import highlight


def _page(console: ConsoleServer, **query: str | list[str]) -> tuple[int, str]:
    answer = console.client().get("/search", params=query)
    return answer.status_code, answer.text


def _passages(text: str) -> list[str]:
    return re.findall(r'<p class="passage">(.*?)</p>', text, flags=re.S)


def test_a_search_lists_passages_with_locator_score_and_why(console: ConsoleServer) -> None:
    """K-SRCH-01: each passage shows its title, collection, locator and why it was found."""
    doc = console.space.user.documents.upsert(
        collection="keep", title="Stew", body="Beef stew with tomato, slow cooked."
    )
    status, text = _page(console, q="stew")
    assert status == 200
    assert "1 passage found." in text
    assert "Stew" in text
    assert f"document {doc.id} · passage 0 · characters 0–" in text
    assert "(words)" in text


def test_matched_words_are_marked_and_a_document_s_markup_is_escaped(console: ConsoleServer) -> None:
    """The text is escaped first, then the query's words are marked, so a document can
    never inject HTML or script into the console."""
    console.space.user.documents.upsert(
        collection="keep", title="Trap", body='<script>alert("x")</script> tomato <b>soup</b> TOMATO'
    )
    status, text = _page(console, q="tomato")
    assert status == 200
    assert "<script>alert" not in text
    assert "<b>soup</b>" not in text
    (passage,) = _passages(text)
    assert passage.count("<mark>") == 2
    assert "<mark>tomato</mark>" in passage and "<mark>TOMATO</mark>" in passage
    assert html.unescape(re.sub(r"</?mark>", "", passage)) == '<script>alert("x")</script> tomato <b>soup</b> TOMATO'


def test_collections_filter_searches_a_collection_with_its_subfolders_only(console: ConsoleServer) -> None:
    """K-SRCH-04: a ticked collection is searched with its subfolders, and nothing else."""
    user = console.space.user
    parent = user.collections.create("Cooking")
    child = user.collections.create("Soups", parent=parent.id)
    user.documents.upsert(collection=child.id, title="In soups", body="onion broth")
    user.documents.upsert(collection="keep", title="In keep", body="onion rings")
    _, text = _page(console, q="onion", collection=[str(parent.id)])
    assert "In soups" in text and "In keep" not in text
    _, everywhere = _page(console, q="onion")
    assert "In soups" in everywhere and "In keep" in everywhere


def test_time_range_filters_by_the_document_date_a_day_being_the_whole_day(console: ConsoleServer) -> None:
    """K-SRCH-06, K-SRCH-07: from and to are dates, the last one inclusive."""
    user = console.space.user
    user.documents.upsert(collection="diary", key="2026-09-22", title="Tuesday", body="walked by the river")
    user.documents.upsert(collection="diary", key="2026-09-23", title="Wednesday", body="river again")
    _, text = _page(console, q="river", **{"from": "2026-09-22", "to": "2026-09-22"})
    assert "Tuesday" in text and "Wednesday" not in text


def test_an_empty_search_with_a_filter_lists_the_newest_documents(console: ConsoleServer) -> None:
    """K-SRCH-08: no query words, a filter chosen: one passage per document, newest first."""
    user = console.space.user
    user.documents.upsert(collection="diary", key="2026-01-01", title="Older", body="a")
    user.documents.upsert(collection="diary", key="2026-02-01", title="Newer", body="b")
    _, text = _page(console, **{"from": "2025-12-01"})
    assert text.index("Newer") < text.index("Older")


def test_entity_filter_keeps_passages_that_mention_the_person(console: ConsoleServer) -> None:
    """K-SRCH-09: the entity is typed by name with its kind; only passages mentioning it."""
    user = console.space.user
    ann = user.entities.resolve(kind="person", create=True, name="Ann Lee", email="ann@example.com")
    assert ann is not None
    user.documents.upsert(collection="keep", title="With Ann", body="Lunch with Ann Lee at noon")
    user.documents.upsert(collection="keep", title="Alone", body="Lunch alone at noon")
    _, unfiltered = _page(console, q="lunch")
    assert "With Ann" in unfiltered and "Alone" in unfiltered
    _, by_name = _page(console, q="lunch", kind="person", entity="Ann Lee")
    assert "With Ann" in by_name and "Alone" not in by_name
    assert "mentioning Ann Lee" in by_name
    _, by_mail = _page(console, q="lunch", kind="person", entity="ann@example.com")
    assert "With Ann" in by_mail and "Alone" not in by_mail


def test_bad_filters_are_refused_next_to_their_fields_and_nothing_is_searched(console: ConsoleServer) -> None:
    """Form errors say what to fix beside the field."""
    console.space.user.documents.upsert(collection="keep", title="Stew", body="stew")
    status, text = _page(console, q="stew", **{"from": "22/09/2026"}, kind="dragon", entity="Nobody")
    assert status == 422
    assert 'id="err-from"' in text and "is not a date; write it as YYYY-MM-DD." in text
    assert 'id="err-kind"' in text
    assert 'aria-invalid="true"' in text
    assert "passage found." not in text and "passages found." not in text
    status, text = _page(console, q="stew", entity="Nobody")
    assert status == 422
    assert 'id="err-entity"' in text and "Nobody" in text
    status, text = _page(console, q="stew", collection=["999"])
    assert status == 422 and 'id="err-collection"' in text
    status, text = _page(console, q="stew", **{"from": "2026-09-23", "to": "2026-09-22"})
    assert status == 422 and "before the first one" in text


def test_the_search_page_is_in_chinese_too(console: ConsoleServer) -> None:
    """The page's labels follow the language."""
    console.space.user.documents.upsert(collection="keep", title="汤", body="番茄牛肉汤")
    answer = console.client().get("/search", params={"q": "牛肉"}, headers={"Accept-Language": "zh-CN"})
    assert "找到 1 段内容。" in answer.text
    assert "<mark>" in answer.text


def _marked(text: str, query: str) -> list[str]:
    return [p.text for p in highlight(text, query) if p.marked]


def test_highlight_marks_whole_words_the_index_matches() -> None:
    """A word is marked when search would match it (its stem, any case), never a part
    of another word; CJK text is marked by the query's characters."""
    assert _marked("I cooked, she is Cooking", "cooking") == ["cooked", "Cooking"]
    assert _marked("apple pieces and a pie", "pie") == ["pie"]
    assert _marked("番茄牛肉汤很好喝", "牛肉汤") == ["牛肉汤"]
    assert _marked("nothing here", "") == []
    assert "".join(p.text for p in highlight("Straße <b>x</b>", "straße x")) == "Straße <b>x</b>"
