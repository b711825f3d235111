"""OPTIONS and other methods a console page does not serve: 405 naming every method it does.

An OPTIONS request (what ``curl -X OPTIONS`` or a monitoring probe sends, never with a body) was
answered 411 Length Required, as if it were a form post that forgot its length; so was a DELETE. A
request that sends no body has no length to declare: it is now answered as routing decides, a 405
whose ``Allow`` header names the methods the page serves. That header named only the methods of the
first route on the path, so the sign-in page, which takes GET and POST, claimed to take GET alone,
and no page named HEAD, which every page answers. A body of unstated length (chunked) is still 411.
"""

from __future__ import annotations

import importlib
import pkgutil

import httpx
from console_harness import ConsoleServer
from fastapi.routing import APIRoute

import notochord.console.routes
from allowed_methods import allow_header, methods_by_path

PROTECTIONS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


def _served() -> dict[str, set[str]]:
    """Every path of the console's pages (each parameter filled with ``x``) and the methods served
    there, by its own route and by any other whose pattern takes it (``/gems/install`` is also the
    page of a gem called ``install``)."""
    templates: list[tuple[str, set[str]]] = []
    package = notochord.console.routes
    for info in pkgutil.iter_modules(package.__path__):
        router = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "router", None)
        for route in getattr(router, "routes", []):
            assert isinstance(route, APIRoute) and route.methods is not None
            templates.append((route.path, set(route.methods)))
    assert templates
    return methods_by_path(templates, "x")


def _assert_protected(answer: httpx.Response) -> None:
    where = f"{answer.request.method} {answer.request.url.path} ({answer.status_code})"
    assert [name for name in PROTECTIONS if name not in answer.headers] == [], where
    assert answer.headers.get("cache-control") == "no-store", where


def test_options_on_every_page_is_405_naming_the_methods_it_serves(console: ConsoleServer) -> None:
    """K-UI-01: OPTIONS is answered 405 with ``Allow`` naming exactly the methods of the page (HEAD
    with every GET), with the console's protections, in the visitor's words, never 411."""
    client = console.client()
    for path, methods in sorted(_served().items()):
        answer = client.options(path)
        assert answer.status_code == 405, (path, answer.status_code)
        assert answer.headers["allow"] == allow_header(methods), path
        assert "OPTIONS" in answer.text, path
        _assert_protected(answer)


def test_every_method_a_page_does_not_serve_names_the_ones_it_does(console: ConsoleServer) -> None:
    """K-UI-01: PUT, PATCH and DELETE, sent without a body as such requests usually are, and a POST
    to a page that only shows, get the same 405 and ``Allow``; none is told to state a length."""
    client = console.client()
    for path, methods in sorted(_served().items()):
        for method in ("PUT", "PATCH", "DELETE", "POST"):
            if method in methods:
                continue
            answer = client.request(method, path)
            assert answer.status_code == 405, (method, path, answer.status_code)
            assert answer.headers["allow"] == allow_header(methods), (method, path)
            _assert_protected(answer)


def test_the_sign_in_page_names_get_head_and_post_before_any_session(console: ConsoleServer) -> None:
    """K-UI-01: /login is open without a session; a method it does not take is a 405 naming all
    three it does. Elsewhere a visitor without a session is told to sign in, whatever the method."""
    visitor = console.client(signed_in=False)
    for method in ("OPTIONS", "PUT", "DELETE"):
        answer = visitor.request(method, "/login")
        assert answer.status_code == 405, method
        assert answer.headers["allow"] == "GET, HEAD, POST"
        _assert_protected(answer)
    assert visitor.options("/gems").status_code == 401


def test_static_files_answer_other_methods_with_get_and_head(console: ConsoleServer) -> None:
    """K-UI-01: a static file takes GET and HEAD; OPTIONS or PUT on it says so."""
    client = console.client()
    for method in ("OPTIONS", "PUT"):
        answer = client.request(method, "/static/console.css")
        assert answer.status_code == 405, method
        assert answer.headers["allow"] == "GET, HEAD"


def test_a_body_of_unstated_length_is_still_411_and_changes_nothing(console: ConsoleServer) -> None:
    """K-UI-12: a form post whose body is sent in chunks, with no length stated, is refused 411
    before it is read, as before; nothing is installed or changed."""
    client, csrf = console.signed_in("/gems")

    def chunks() -> object:
        yield f"csrf={csrf}&lang=zh".encode()

    answer = client.post(
        "/prefs/lang",
        content=chunks(),  # type: ignore[arg-type]
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 411
    assert "content-length" not in answer.request.headers
    _assert_protected(answer)
    assert "lang" not in client.cookies
