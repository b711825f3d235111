"""An id beyond what the store can hold, typed into a console address, is the visitor's mistake:
a page that says so, never a server error (K-UI-01)."""

from __future__ import annotations

import html

import pytest
from console_harness import ConsoleServer

BEYOND_64_BITS = "99999999999999999999"


@pytest.mark.parametrize("path", [f"/knowledge/documents/{BEYOND_64_BITS}", f"/knowledge/entities/{BEYOND_64_BITS}"])
def test_a_page_of_an_id_too_large_to_exist_says_so(console: ConsoleServer, path: str) -> None:
    answer = console.client().get(path)
    assert answer.status_code == 400
    assert "a number is too large" in html.unescape(answer.text)


@pytest.mark.parametrize(
    "path",
    [
        f"/knowledge/documents/{BEYOND_64_BITS}/delete",
        f"/knowledge/documents/{BEYOND_64_BITS}/restore",
        f"/knowledge/entities/{BEYOND_64_BITS}/delete",
    ],
)
def test_an_action_on_an_id_too_large_to_exist_is_refused_and_changes_nothing(
    console: ConsoleServer, path: str
) -> None:
    client, token = console.signed_in("/changes")
    before = console.space.changes.list()
    answer = client.post(path, data={"csrf": token})
    assert answer.status_code == 400
    assert "a number is too large" in html.unescape(answer.text)
    assert console.space.changes.list() == before
