"""What a careless or hostile client sends to the console's switches and addresses is refused in the
console's own words, naming what was wrong, and changes nothing.

K-UI-01 (the gem's permission switches, and the console's pages at large), K-UI-10 (the collection
ticks). A switch accepts exactly "1" (on) and "0" (off): anything else, or nothing, must never read
as "off". The header's language and space switches refuse what they do not offer. A wrong method is
not a missing page, and a malformed value in the query of a page that exists is a 400, while a
malformed id in the path still names no page (404).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from console_harness import WEATHER, ConsoleServer, chooser_gem
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse, Response

from notochord.console import create_console
from notochord.console.auth import ConsoleKeys
from notochord.console.guard import SESSION_COOKIE

PERMISSION = "facts.read:self:location.home.*"
# values a switch must refuse, with the one that matters most first: an empty string
NOT_A_SWITCH = ["", "yes", "on", "true", "2", "01", " 1 x", "١"]
NOT_A_SWITCH_IDS = ["empty", "yes", "on", "true", "two", "zero-one", "one-then-junk", "arabic-indic-one"]
# words of pydantic, Starlette and Python that must never reach a page
FOREIGN_WORDS = (
    "Input should be",
    "valid integer",
    "Field required",
    "int_parsing",
    "RequestValidationError",
    "HTTPException",
    "Method Not Allowed",
    "Traceback",
    "'loc'",
)


class _Answer(Protocol):
    """An HTTP answer from either client the tests use (httpx, or the test client's own)."""

    @property
    def text(self) -> str: ...


def _page_text(answer: _Answer) -> str:
    return html.unescape(answer.text)


def _assert_own_words(page: str) -> None:
    for word in FOREIGN_WORDS:
        assert word not in page, word
    assert "K-UI" not in page


def _weather_switched_on(console: ConsoleServer) -> bool:
    console.space.gems.install(WEATHER)
    console.space.gems.set_permission("weather", PERMISSION, True)
    return _is_on(console)


def _is_on(console: ConsoleServer) -> bool:
    return any(s.on for s in console.space.gems.permissions("weather") if s.permission == PERMISSION)


# --- the permission switch and the collection tick ------------------------------------------------


@pytest.mark.parametrize("value", NOT_A_SWITCH, ids=NOT_A_SWITCH_IDS)
def test_a_permission_switch_that_is_neither_one_nor_zero_is_refused_and_leaves_it_on(
    console: ConsoleServer, value: str
) -> None:
    """K-UI-01: a malformed position never reads as "off"; the page names the value and the two it takes."""
    assert _weather_switched_on(console)
    client, token = console.signed_in("/gems/weather")
    answer = client.post("/gems/weather/permissions", data={"csrf": token, "permission": PERMISSION, "on": value})
    assert answer.status_code == 400, answer.text
    page = _page_text(answer)
    assert f"“on” must be 1 (on) or 0 (off), not “{value}”." in page
    assert "Nothing was changed." in page
    _assert_own_words(page)
    assert _is_on(console)


@pytest.mark.parametrize("htmx", [False, True], ids=["form-post", "htmx"])
def test_a_permission_switch_without_its_position_is_refused_and_leaves_it_on(
    console: ConsoleServer, htmx: bool
) -> None:
    """K-UI-01: a post that does not say on or off is not "off"."""
    assert _weather_switched_on(console)
    client, token = console.signed_in("/gems/weather")
    headers = {"HX-Request": "true"} if htmx else {}
    answer = client.post("/gems/weather/permissions", data={"csrf": token, "permission": PERMISSION}, headers=headers)
    assert answer.status_code == 400, answer.text
    page = _page_text(answer)
    assert "“on” is missing" in page
    assert "must be 1 (on) or 0 (off)" in page
    _assert_own_words(page)
    assert _is_on(console)


def test_the_switch_form_of_the_gem_s_page_sends_zero_to_turn_off_and_one_to_turn_on(console: ConsoleServer) -> None:
    """K-UI-01: the page's own form says "0" for off, which the console accepts, and "1" for on."""
    assert _weather_switched_on(console)
    client, token = console.signed_in("/gems/weather")
    page = client.get("/gems/weather").text
    assert 'name="on" value="0"' in page
    off = client.post("/gems/weather/permissions", data={"csrf": token, "permission": PERMISSION, "on": "0"})
    assert off.status_code == 303
    assert not _is_on(console)
    assert 'name="on" value="1"' in client.get("/gems/weather").text
    on = client.post("/gems/weather/permissions", data={"csrf": token, "permission": PERMISSION, "on": "1"})
    assert on.status_code == 303
    assert _is_on(console)


@pytest.mark.parametrize("value", [*NOT_A_SWITCH, None], ids=[*NOT_A_SWITCH_IDS, "missing"])
def test_a_collection_tick_that_is_neither_one_nor_zero_is_refused_and_leaves_it_ticked(
    console: ConsoleServer, tmp_path: Path, value: str | None
) -> None:
    """K-UI-10: a malformed or missing tick never unticks a collection the gem may read."""
    console.space.gems.install(chooser_gem(tmp_path))
    recipes = console.space.user.collections.create("Recipes")
    console.space.gems.tick_collection("reader", recipes.id, on=True)
    client, token = console.signed_in("/gems/reader")
    data = {"csrf": token, "collection": str(recipes.id)}
    if value is not None:
        data["on"] = value
    answer = client.post("/gems/reader/ticks", data=data)
    assert answer.status_code == 400, answer.text
    page = _page_text(answer)
    assert "must be 1 (on) or 0 (off)" in page
    assert "Nothing was changed." in page
    _assert_own_words(page)
    assert console.space.core.collections.ticked_now("reader") == {recipes.id}
    # the page's own form unticks with "0"
    assert 'name="on" value="0"' in client.get("/gems/reader").text
    untick = client.post("/gems/reader/ticks", data={**data, "on": "0"})
    assert untick.status_code == 303
    assert console.space.core.collections.ticked_now("reader") == set()


# --- the header's language and space switches ------------------------------------------------------


@pytest.mark.parametrize("value", ["fr", "EN", "zh-CN", ""], ids=["french", "upper-case", "region", "empty"])
def test_a_language_the_console_does_not_speak_is_refused_naming_the_ones_it_does(
    console: ConsoleServer, value: str
) -> None:
    """K-UI-01: the switch does not pretend it worked; the language cookie stays as it was."""
    client, token = console.signed_in("/gems")
    client.cookies.set("lang", "zh")
    answer = client.post("/prefs/lang", data={"csrf": token, "lang": value, "next": "/changes"})
    assert answer.status_code == 400, answer.text
    assert "set-cookie" not in answer.headers
    page = _page_text(answer)
    assert f"“{value}”" in page if value else "没有指明语言" in page
    # the refusal is in the language the cookie still chooses, listing both languages
    assert "en (English)" in page and "zh (中文)" in page
    assert "没有做任何更改" in page
    _assert_own_words(page)
    assert client.cookies.get("lang") == "zh"


def test_a_refused_language_is_explained_in_english_to_an_english_reader(console: ConsoleServer) -> None:
    """K-UI-01: the sentence names the value and the languages offered."""
    client, token = console.signed_in("/gems")
    answer = client.post("/prefs/lang", data={"csrf": token, "lang": "fr"}, headers={"Accept-Language": "en"})
    assert answer.status_code == 400
    page = _page_text(answer)
    assert "“fr” is not a language of the console" in page
    assert "en (English), zh (中文)" in page


@pytest.mark.parametrize("value", ["org:ghost", "ghost", "PERSONAL", ""], ids=["unknown-org", "bare", "case", "empty"])
def test_a_space_that_is_not_one_of_the_person_s_is_refused_and_the_space_stays(
    console: ConsoleServer, value: str
) -> None:
    """K-UI-01: the switch says the space is not theirs, sets no cookie, and creates nothing."""
    console.nc.org("acme", create=True)
    client, token = console.signed_in("/gems")
    assert client.post("/prefs/space", data={"csrf": token, "space": "org:acme"}).status_code == 303
    answer = client.post("/prefs/space", data={"csrf": token, "space": value}, headers={"Accept-Language": "en"})
    assert answer.status_code == 400, answer.text
    assert "set-cookie" not in answer.headers
    page = _page_text(answer)
    assert f"“{value}” is not one of your spaces" in page if value else "The form named no space" in page
    assert "Personal" in page and "Organization acme" in page
    _assert_own_words(page)
    assert client.cookies.get("space") == "org:acme"
    assert sorted(console.nc.spaces()) == ["org:acme", "personal"]


# --- a wrong method --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/logout"),
        ("GET", "/prefs/lang"),
        ("PUT", "/gems"),
        ("DELETE", "/knowledge"),
        ("POST", "/static/htmx.min.js"),
    ],
)
def test_a_method_a_page_does_not_take_is_said_so_rather_than_not_found(
    console: ConsoleServer, method: str, path: str
) -> None:
    """K-UI-01: a 405 says the page does not accept the method, in the reader's language, and
    keeps the ``Allow`` header that says which methods it does accept."""
    client, token = console.signed_in("/gems")
    for lang, sentence in (
        ("en", f"This page does not accept {method} requests."),
        ("zh", f"这个页面不接受 {method} 请求。"),
    ):
        data = {"csrf": token} if method != "GET" else None
        answer = client.request(method, path, data=data, headers={"Accept-Language": lang})
        assert answer.status_code == 405, answer.text
        assert answer.headers.get("allow")
        page = _page_text(answer)
        assert sentence in page
        assert "There is nothing at this address." not in page
        assert "这个地址没有内容。" not in page
        _assert_own_words(page)


def test_an_unknown_page_is_still_not_found(console: ConsoleServer) -> None:
    """K-UI-01: the 404 sentence stays for an address that names nothing."""
    answer = console.client().get("/no-such-page")
    assert answer.status_code == 404
    assert "There is nothing at this address." in _page_text(answer)


# --- a malformed query value on a page that exists -------------------------------------------------


@pytest.fixture
def probe(console: ConsoleServer) -> Iterator[TestClient]:
    """The console over the test's vault, with one page that declares a whole number in its query,
    signed in: the console's own pages parse their queries themselves, so this page is how a typed
    query parameter reaches the console's validation handler."""
    app = create_console(console.nc)

    @app.get("/probe/{item_id}")
    def _probe(item_id: int, count: int, ratio: float = 1.0) -> Response:
        return PlainTextResponse(f"{item_id} {count} {ratio}")

    keys: ConsoleKeys = app.state.console_keys
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.cookies.set(SESSION_COOKIE, keys.new_session())
        yield client


def test_the_probe_page_answers_well_formed_queries(probe: TestClient) -> None:
    answer = probe.get("/probe/7", params={"count": "3"})
    assert answer.status_code == 200, answer.text
    assert answer.text == "7 3 1.0"


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ({"count": "ten"}, "“count” in the address must be a whole number, not “ten”."),
        ({"count": "1.5"}, "“count” in the address must be a whole number, not “1.5”."),
        ({"count": "3", "ratio": "half"}, "“ratio” in the address must be a number, not “half”."),
        ({}, "This page needs “count” in its address."),
    ],
    ids=["word", "fraction", "not-a-number", "missing"],
)
def test_a_malformed_query_value_on_a_page_that_exists_is_a_400_naming_it(
    probe: TestClient, query: dict[str, str], sentence: str
) -> None:
    """K-UI-01: the page exists, so a bad value in its query is the visitor's mistake to correct,
    not a missing page."""
    answer = probe.get("/probe/7", params=query, headers={"Accept-Language": "en"})
    assert answer.status_code == 400, answer.text
    page = _page_text(answer)
    assert sentence in page
    assert "There is nothing at this address." not in page
    _assert_own_words(page)


def test_a_malformed_query_value_is_named_in_chinese_to_a_chinese_reader(probe: TestClient) -> None:
    """K-UI-01: the sentence is localized like every other one."""
    answer = probe.get("/probe/7", params={"count": "ten"}, headers={"Accept-Language": "zh"})
    assert answer.status_code == 400
    assert "地址中的“count”必须是整数,而不是“ten”。" in _page_text(answer)


def test_a_malformed_id_in_the_path_is_still_a_page_that_does_not_exist(probe: TestClient) -> None:
    """K-UI-01: "/probe/abc" names nothing, whatever its query holds."""
    for query in ({"count": "3"}, {"count": "ten"}):
        answer = probe.get("/probe/abc", params=query)
        assert answer.status_code == 404, answer.text
        assert "There is nothing at this address." in _page_text(answer)


@pytest.mark.parametrize("path", ["/knowledge/entities/abc", "/knowledge/documents/1.5", "/knowledge/collections/x"])
def test_a_malformed_id_in_a_real_page_s_path_is_not_found(console: ConsoleServer, path: str) -> None:
    """K-UI-12: the console's own pages keep their 404 for an id that cannot exist."""
    answer = console.client().get(path, params={"page": "2"})
    assert answer.status_code == 404
    assert "There is nothing at this address." in _page_text(answer)
