"""What a careless or hostile client sends to the console is refused in the console's words, in the
reader's language, and changes nothing; it is never a server error.

K-UI-01 (the console at large: signing in, the CSRF token, the Host check), K-UI-11 (the filters and
forms of "View changes"), K-UI-12 (the Knowledge pages' page numbers, pickers and merge), K-UI-09
(the contacts page), K-SRCH-01/04 (the search's collection filter), P-FILE-29 (the working folder).

Python refuses to read a whole number of more than 4300 digits (``int()`` raises ``ValueError``),
and ``str.isdigit`` holds for digits of other scripts ("²", "١"); neither may reach a page as a
crash. A signed value (login link, session cookie, CSRF token) with a letter outside ASCII is simply
not a valid one.
"""

from __future__ import annotations

import html
from pathlib import Path

import httpx
import pytest
from console_harness import RECIPES, ConsoleServer, csrf_of
from runs_gem import GEM, write_gem

from notochord.console.guard import SESSION_COOKIE

# more digits than Python's int() reads from text
TOO_MANY_DIGITS = "9" * 5000
NO_SUCH_USER_HOME = "~no-such-user-of-this-computer/gem"


def _text(answer: httpx.Response) -> str:
    return html.unescape(answer.text)


def _changes(console: ConsoleServer) -> list[tuple[int, str]]:
    return [(c.id, c.status) for c in console.space.changes.list()]


# --- signed values holding letters outside ASCII ---------------------------------------------------


@pytest.mark.parametrize("where", ["field", "header"])
def test_a_csrf_token_with_a_letter_outside_ascii_is_refused_and_changes_nothing(
    console: ConsoleServer, where: str
) -> None:
    """K-UI-01: such a token is no session's token: 403 with the console's sentence, never a 500."""
    client, token = console.signed_in("/knowledge")
    forged = token[:-1] + "é"
    if where == "field":
        answer = client.post("/knowledge/collections", data={"csrf": forged, "name": "Soups"})
    else:
        answer = client.post(
            "/knowledge/collections",
            data={"name": "Soups"},
            headers=[(b"x-csrf-token", forged.encode("utf-8"))],
        )
    assert answer.status_code == 403, answer.text
    assert "Soups" not in [c.name for c in console.space.user.collections.list()]


def test_a_login_link_with_a_letter_outside_ascii_signs_nobody_in(console: ConsoleServer) -> None:
    """K-UI-01: the one-time link's page, not a server error."""
    client = console.client(signed_in=False)
    for token in ("a.1.é", "a.99999999999.é", "é.99999999999.abc"):
        answer = client.get("/login", params={"token": token})
        assert answer.status_code == 401, (token, answer.text)
        assert SESSION_COOKIE not in answer.cookies


def test_a_session_cookie_with_a_letter_outside_ascii_is_no_session(console: ConsoleServer) -> None:
    """K-UI-01: the page asks to sign in, as for any forged cookie."""
    client = console.client(signed_in=False)
    cookie = f"{SESSION_COOKIE}=abc.99999999999.é".encode()
    answer = client.get("/changes", headers=[(b"cookie", cookie)])
    assert answer.status_code == 401, answer.text
    assert "notochord console-url" in answer.text


@pytest.mark.parametrize("port", [b"\xb2", b"\xb9\xb2"], ids=["superscript-two", "superscript-one-two"])
def test_a_host_whose_port_is_a_superscript_digit_is_refused(console: ConsoleServer, port: bytes) -> None:
    """K-UI-01: the Host check reads only ASCII digits as a port; anything else is a malformed
    Host, refused (421) before sign-in, never a 500."""
    client = console.client()
    answer = client.get("/changes", headers=[(b"host", b"127.0.0.1:" + port)])
    assert answer.status_code == 421, answer.text


# --- whole numbers Python will not read, and digits of other scripts ----------------------------


@pytest.mark.parametrize("path", ["/changes", "/runs"])
@pytest.mark.parametrize("page", [TOO_MANY_DIGITS, "²", "١"], ids=["5000-digits", "superscript-two", "arabic-one"])
def test_a_page_number_that_is_no_ascii_number_is_refused_on_the_lists(
    console: ConsoleServer, path: str, page: str
) -> None:
    """K-UI-11: the page says it is not a page number (and quotes it cut short); "١" is not page 1."""
    answer = console.client().get(path, params={"page": page}, headers={"Accept-Language": "en"})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert "is not a page number" in text
    assert TOO_MANY_DIGITS not in text


@pytest.mark.parametrize("where", ["collection", "entities", "contacts"])
def test_a_page_number_of_thousands_of_digits_is_refused_on_the_knowledge_pages(
    console: ConsoleServer, where: str
) -> None:
    """K-UI-12, K-UI-09: refused as any other page number out of range."""
    recipes = console.space.user.collections.create("Recipes")
    path = {
        "collection": f"/knowledge/collections/{recipes.id}",
        "entities": "/knowledge/entities",
        "contacts": "/knowledge/contacts",
    }[where]
    answer = console.client().get(path, params={"page": TOO_MANY_DIGITS})
    assert answer.status_code == 422, answer.text
    assert "is not a page number" in _text(answer)
    assert TOO_MANY_DIGITS not in answer.text


def test_a_notice_number_of_thousands_of_digits_offers_no_undo(console: ConsoleServer) -> None:
    """K-UI-12: ``deleted`` and ``merged`` name the change to undo; one that cannot exist offers none."""
    ann = console.space.user.entities.resolve(kind="person", create=True, name="Ann")
    assert ann is not None
    client = console.client()
    for path, name in ((f"/knowledge/entities/{ann.id}", "merged"), ("/knowledge/entities", "deleted")):
        answer = client.get(path, params={name: TOO_MANY_DIGITS})
        assert answer.status_code == 200, (path, answer.text)
        assert "/undo" not in answer.text


def test_a_collection_filter_of_thousands_of_digits_is_refused_beside_its_field(console: ConsoleServer) -> None:
    """K-SRCH-04: no collection has that id."""
    answer = console.client().get("/search", params={"q": "x", "collection": TOO_MANY_DIGITS})
    assert answer.status_code == 422, answer.text
    assert "Tick collections from the list." in _text(answer)


@pytest.mark.parametrize("action", ["create", "move-collection", "move-document", "merge"])
def test_an_id_of_thousands_of_digits_in_a_form_names_nothing_and_changes_nothing(
    console: ConsoleServer, action: str
) -> None:
    """K-UI-12: a picker's value beyond any id is the console's not-found page, as for a 20-digit id."""
    recipes = console.space.user.collections.create("Recipes")
    doc = console.space.user.documents.upsert(collection=recipes.id, title="Stew", body="x")
    ann = console.space.user.entities.resolve(kind="person", create=True, name="Ann")
    assert ann is not None
    path, data = {
        "create": ("/knowledge/collections", {"name": "Soups", "parent": TOO_MANY_DIGITS}),
        "move-collection": (f"/knowledge/collections/{recipes.id}/move", {"parent": TOO_MANY_DIGITS}),
        "move-document": (f"/knowledge/documents/{doc.id}/move", {"collection": TOO_MANY_DIGITS}),
        "merge": (f"/knowledge/entities/{ann.id}/merge", {"other_id": TOO_MANY_DIGITS}),
    }[action]
    client, token = console.signed_in("/knowledge")
    before = _changes(console)
    answer = client.post(path, data={"csrf": token, **data})
    assert answer.status_code == 404, answer.text
    assert "There is nothing at this address." in _text(answer)
    assert _changes(console) == before


@pytest.mark.parametrize("action", ["undo", "resolve"])
def test_a_kept_page_of_thousands_of_digits_does_not_stop_an_undo(console: ConsoleServer, action: str) -> None:
    """K-UI-11: the kept filters only shape the list shown afterwards; the action still happens."""
    console.space.user.facts.put(predicate="pref.food.like", value="soup")
    change = console.space.changes.list()[0]
    client, token = console.signed_in("/changes")
    answer = client.post(
        f"/changes/{change.id}/{action}", data={"csrf": token, "f_page": TOO_MANY_DIGITS, "take": "mine"}
    )
    assert answer.status_code < 500, answer.text
    if action == "undo":
        assert "Undone: 1 change." in _text(answer)
        assert next(c for c in console.space.changes.list() if c.id == change.id).status == "reverted"


# --- paths typed into the install and working-folder fields --------------------------------------


@pytest.mark.parametrize("route", ["/gems/review", "/gems/install"])
@pytest.mark.parametrize(
    "path",
    [NO_SUCH_USER_HOME, "/tmp/" + "x" * 300, "x" * 5000],
    ids=["unknown-user-home", "name-too-long", "path-too-long"],
)
def test_an_install_path_the_system_cannot_read_is_refused_on_the_gems_page(
    console: ConsoleServer, route: str, path: str
) -> None:
    """K-UI-01: the gems page again, naming what to fix, and no gem installed."""
    client, token = console.signed_in("/gems")
    answer = client.post(route, data={"csrf": token, "path": path}, headers={"Accept-Language": "en"})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert 'id="gem-path"' in text
    assert "full path" in text
    assert console.space.gems.list() == []


def test_an_install_path_naming_an_unknown_user_s_home_is_named_in_chinese(console: ConsoleServer) -> None:
    """K-UI-01: the console's own sentence is in the reader's language."""
    client, token = console.signed_in("/gems")
    answer = client.post(
        "/gems/review", data={"csrf": token, "path": NO_SUCH_USER_HOME}, headers={"Accept-Language": "zh"}
    )
    assert answer.status_code == 422, answer.text
    assert "完整路径" in _text(answer)


@pytest.fixture
def scheduled(console: ConsoleServer, tmp_path: Path) -> ConsoleServer:
    console.space.gems.install(write_gem(tmp_path / "src", sops=[{"name": "digest", "trigger": "schedule"}]))
    return console


@pytest.mark.parametrize("typed", [NO_SUCH_USER_HOME, "/tmp/a\x00b"], ids=["unknown-user-home", "nul"])
def test_a_working_folder_the_system_cannot_name_is_refused_beside_its_field(
    scheduled: ConsoleServer, typed: str
) -> None:
    """P-FILE-29: the gem's page again with the sentence next to the field, and nothing chosen."""
    client = scheduled.client()
    token = csrf_of(client.get(f"/gems/{GEM}").text)
    answer = client.post(f"/gems/{GEM}/working-folder", data={"csrf": token, "path": typed})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert 'id="folder-path"' in text
    assert "None chosen" in text


# --- the network settings ---------------------------------------------------------------------


@pytest.mark.parametrize("route", ["add", "remove"])
def test_a_local_network_entry_of_thousands_of_digits_is_refused_beside_its_field(
    console: ConsoleServer, route: str
) -> None:
    """K-UI-01: no host name or address is that long; the list stays as it was."""
    client, token = console.signed_in("/settings/network")
    before = console.space.network.stored()
    answer = client.post(f"/settings/network/local/{route}", data={"csrf": token, "entry": TOO_MANY_DIGITS})
    assert answer.status_code == 422, answer.text
    assert 'id="net-entry"' in answer.text
    assert TOO_MANY_DIGITS not in answer.text
    assert console.space.network.stored() == before


# --- the Chinese console ----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["changes", "runs", "collection", "entities", "contacts"])
def test_a_page_number_refusal_is_in_chinese_for_a_chinese_reader(console: ConsoleServer, where: str) -> None:
    """K-UI-11, K-UI-12: the console's own refusals are translated like its labels."""
    recipes = console.space.user.collections.create("Recipes")
    path = {
        "changes": "/changes",
        "runs": "/runs",
        "collection": f"/knowledge/collections/{recipes.id}",
        "entities": "/knowledge/entities",
        "contacts": "/knowledge/contacts",
    }[where]
    answer = console.client().get(path, params={"page": "zero"}, headers={"Accept-Language": "zh"})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert "is not a page number" not in text
    assert "页码" in text


def test_an_unknown_status_filter_is_refused_in_chinese_for_a_chinese_reader(console: ConsoleServer) -> None:
    """K-UI-11."""
    answer = console.client().get("/changes", params={"status": "gone"}, headers={"Accept-Language": "zh"})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert "is not one of" not in text
    assert "“gone”" in text


def test_install_with_nothing_chosen_says_so_in_chinese(console: ConsoleServer) -> None:
    """K-UI-01: the install form posted with neither a folder nor a file."""
    client, token = console.signed_in("/gems")
    answer = client.post("/gems/install", data={"csrf": token}, headers={"Accept-Language": "zh"})
    assert answer.status_code == 422, answer.text
    text = _text(answer)
    assert "choose the gem's folder or file first" not in text
    assert "请先" in text


# --- an uninstalled gem's changes and runs ------------------------------------------------------


def test_the_changes_filter_of_an_uninstalled_gem_still_says_which_gem_it_shows(console: ConsoleServer) -> None:
    """K-UI-11, K-UNINST-05: after "Keep", the gem's changes stay; filtering by it must not read "Any"."""
    console.space.gems.install(RECIPES)
    for permission in ("facts.read:self:pref.food.*", "facts.write:self:pref.food.*"):
        console.space.gems.set_permission("recipes", permission, True)
    console.space.gems.uninstall("recipes", delete_data=False)
    client = console.client()
    for path in ("/changes", "/runs"):
        text = client.get(path, params={"gem": "recipes"}).text
        assert '<option value="recipes" selected>' in text, path


def test_why_a_passage_was_found_is_said_in_chinese_for_a_chinese_reader(console: ConsoleServer) -> None:
    """K-SRCH-01: the reason beside each passage's score is one of the console's labels, translated."""
    console.space.user.documents.upsert(collection="keep", title="Stew", body="Beef stew with tomato.")
    answer = console.client().get("/search", params={"q": "stew"}, headers={"Accept-Language": "zh"})
    assert answer.status_code == 200, answer.text
    why = _text(answer).split('<span class="why">')[1].split("</span>")[0]
    assert "words" not in why
    assert "词语" in why
