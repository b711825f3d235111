"""The service's OpenAPI pages answer a wrong method as the rest of the service does.

``/openapi.json`` and ``/docs`` take GET and HEAD. Any other method there is a 405 in the service's
error shape with ``Allow: GET, HEAD``, not a page of the console (mounted at ``/`` for every path the
service leaves alone), which answered it with a sign-in 401 or an HTML 404.
"""

from __future__ import annotations

import pytest
from kb_harness import LiveServer, World

_WRONG = ("POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND")


@pytest.mark.parametrize("path", ["/openapi.json", "/docs"])
def test_a_wrong_method_on_an_openapi_page_is_405_naming_get_and_head_KB_GEN_05(
    live: LiveServer, world: World, path: str
) -> None:
    """KB-GEN-05, OD-B01: with or without a token, each method the page does not take is refused in
    JSON, naming the method and the methods the page takes."""
    for headers in ({}, world["owner"].headers):
        for method in _WRONG:
            answer = live.client.request(method, path, headers=headers)
            assert answer.status_code == 405, (method, path, answer.status_code, answer.text[:200])
            assert answer.headers["allow"] == "GET, HEAD", (method, path)
            assert answer.headers["content-type"].startswith("application/json"), (method, path)
            body = answer.json()
            assert body["error"] == "Method Not Allowed", body
            assert body["message"] == f"{method} is not allowed on {path}; use GET", body


@pytest.mark.parametrize("path", ["/openapi.json", "/docs"])
def test_an_openapi_page_is_still_served_for_get_and_head(live: LiveServer, path: str) -> None:
    got = live.client.get(path)
    assert got.status_code == 200, path
    head = live.client.head(path)
    assert head.status_code == 200, path
    assert head.content == b""


def test_the_console_still_answers_the_paths_the_service_leaves_alone(live: LiveServer) -> None:
    """A path beside the pages (``/docsx``, ``/openapi.json/x``) is still the console's."""
    for path in ("/docsx", "/openapi.json/x"):
        answer = live.client.post(path)
        assert answer.status_code != 405, (path, answer.status_code)
        assert not answer.headers.get("content-type", "").startswith("application/json"), path
