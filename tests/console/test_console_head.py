"""HEAD on the console: every page answers it as its GET without the body, refused exactly where GET is.

HTTP clients that only ask about a page (link checkers, monitors, ``curl -I``) send HEAD; the
console answered 405 to it on every page although the REST service beside it answers HEAD wherever
it answers GET. The console now uses the service's own mechanism, ahead of its guard: a HEAD without
a session, under a foreign Host, from a foreign Origin or cross-site gets the answer its GET gets.
The one GET that changes something, a one-time sign-in link, is answered to HEAD without being
spent.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import httpx
import pytest
from console_harness import WEATHER, ConsoleServer
from fastapi.routing import APIRoute

import notochord.console.routes

# a value for every path parameter of the console's pages; a new one fails the walk until named here
_SAMPLES = {"gem_id": "weather", "entity_id": "{entity}", "collection_id": "{collection}", "doc_id": "{doc}"}
_SAMPLES |= {"person_id": "{entity}", "run_id": "run-that-never-was", "change_id": "1", "fact_id": "1"}
# headers of the moment, not of the page
_MOMENT = frozenset({"date"})


def _routes() -> list[tuple[frozenset[str], str]]:
    """``(methods, path)`` of every route of the console's routers."""
    found = []
    package = notochord.console.routes
    for info in pkgutil.iter_modules(package.__path__):
        router = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "router", None)
        for route in getattr(router, "routes", []):
            assert isinstance(route, APIRoute) and route.methods is not None
            found.append((frozenset(route.methods), route.path))
    assert found
    return found


def _paths(method: str, values: dict[str, object]) -> list[str]:
    """The console's paths served for ``method`` ("GET" but /login, or "POST": those without a GET)."""
    found: dict[str, set[str]] = {}
    for methods, path in _routes():
        filled = re.sub(r"\{(\w+)\}", lambda m: _SAMPLES[m.group(1)], path).format(**values)
        found.setdefault(filled, set()).update(methods)
    if method == "GET":
        return sorted(path for path, methods in found.items() if "GET" in methods and path != "/login")
    return sorted(path for path, methods in found.items() if methods == {"POST"})


def _head(answer: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in answer.headers.items() if k not in _MOMENT}


def _same_answer(client: httpx.Client, path: str, **headers: str) -> httpx.Response:
    got = client.get(path, headers=headers)
    head = client.head(path, headers=headers)
    assert (head.status_code, _head(head)) == (got.status_code, _head(got)), path
    assert head.content == b"", path
    return got


@pytest.fixture
def values(console: ConsoleServer) -> dict[str, object]:
    """Things for the pages to show: a gem, an entity, a collection with a document."""
    space = console.space
    space.gems.install(WEATHER)
    entity = space.user.entities.resolve(kind="person", create=True, email="ann@example.com")
    assert entity is not None
    collection = space.user.collections.create("Recipes")
    doc = space.user.documents.upsert(collection=collection.id, title="Stew", body="carrots")
    return {"entity": entity.id, "collection": collection.id, "doc": doc.id}


def test_every_page_answers_head_as_its_get_without_the_body(console: ConsoleServer, values: dict[str, object]) -> None:
    """K-UI-01, K-UI-11, K-UI-12: each page of the console (and the paths it does not serve) answers
    HEAD with its GET's status and headers and no body (before: 405 on every page)."""
    client = console.client()
    pages = _paths("GET", values)
    assert {"/gems", "/knowledge", "/changes", "/runs", "/studio", "/settings/network"} <= set(pages)
    statuses = {path: _same_answer(client, path).status_code for path in pages}
    assert statuses["/gems"] == 200 and statuses["/"] == 303
    assert statuses["/runs/run-that-never-was"] == 404
    assert statuses[f"/knowledge/documents/{values['doc']}"] == 200
    for path in ("/no-such-page", "/gems?page=zero", "/changes?page=abc", "/static/htmx.min.js"):
        _same_answer(client, path)


def test_a_head_is_refused_by_the_guard_exactly_as_its_get(console: ConsoleServer, values: dict[str, object]) -> None:
    """K-UI-11: HEAD never goes round the console's front door: without a session, under a foreign
    Host, from a foreign Origin or cross-site, it gets its GET's refusal (401, 421, 403)."""
    anonymous = console.client(signed_in=False)
    for path in [*_paths("GET", values), *_paths("POST", values), "/no-such-page"]:
        got = _same_answer(anonymous, path)
        assert got.status_code == 401, path
        assert "notochord console-url" in got.text
    signed_in = console.client()
    refusals = {
        421: {"Host": "evil.example"},
        403: {"Origin": "http://evil.example"},
    }
    for status, headers in refusals.items():
        for path in ("/", "/gems", "/knowledge", "/no-such-page"):
            assert _same_answer(signed_in, path, **headers).status_code == status, (path, headers)
    assert _same_answer(signed_in, "/gems", **{"Sec-Fetch-Site": "cross-site"}).status_code == 403


def test_head_of_a_post_only_path_is_refused_with_its_allow_header_and_changes_nothing(
    console: ConsoleServer, values: dict[str, object]
) -> None:
    """K-UI-11: an action answers HEAD, as GET, with 405 and the methods it takes; nothing is done."""
    client = console.client()
    before = console.space.changes.list()
    statuses = {}
    for path in _paths("POST", values):
        got, head = client.get(path), client.head(path)
        assert (head.status_code, head.headers.get("allow")) == (got.status_code, got.headers.get("allow")), path
        assert head.content == b""
        statuses[path] = (head.status_code, head.headers.get("allow"))
    # /gems/install and /gems/review read as the page of a gem of that name, which is not installed
    assert statuses.pop("/gems/install") == statuses.pop("/gems/review") == (404, None)
    assert set(statuses.values()) == {(405, "POST")}
    assert console.space.changes.list() == before
    assert client.get("/gems").status_code == 200, "a HEAD of /logout signs nobody out"


def test_head_of_a_sign_in_link_answers_as_get_without_spending_it(console: ConsoleServer) -> None:
    """A link checker or mail scanner asking about a sign-in link with HEAD learns what GET would
    answer, and the link still signs its owner in once (before: 405; a GET in its place would
    have spent the link)."""
    link = console.login_url()
    checker = console.client(signed_in=False)
    asked = checker.head(link)
    assert asked.status_code == 303 and asked.headers["location"] == "/"
    assert asked.headers["cache-control"] == "no-store"
    assert "set-cookie" not in asked.headers, "HEAD starts no session"
    assert checker.get("/gems").status_code == 401
    owner = console.client(signed_in=False)
    signed = owner.get(link)
    assert signed.status_code == 303 and "set-cookie" in signed.headers
    assert owner.get("/gems").status_code == 200
    spent = checker.head(link)
    assert spent.status_code == 401 and spent.content == b""
    assert checker.head("/login", params={"token": "forged"}).status_code == 401
