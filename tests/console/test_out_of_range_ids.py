"""An id beyond what the store can hold, typed into a console address, names nothing: the console's
page for an address with nothing at it, as for any id that names nothing, never a server error
(K-UI-01, OD-K08)."""

from __future__ import annotations

import html

import pytest
from console_harness import ConsoleServer

BEYOND_64_BITS = "99999999999999999999"


@pytest.mark.parametrize("path", [f"/knowledge/documents/{BEYOND_64_BITS}", f"/knowledge/entities/{BEYOND_64_BITS}"])
def test_a_page_of_an_id_too_large_to_exist_has_nothing_at_it(console: ConsoleServer, path: str) -> None:
    client, _token = console.signed_in("/changes")
    answer = client.get(path)
    assert answer.status_code == 404
    assert "There is nothing at this address." in html.unescape(answer.text)


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
    assert answer.status_code == 404
    assert "There is nothing at this address." in html.unescape(answer.text)
    assert console.space.changes.list() == before
