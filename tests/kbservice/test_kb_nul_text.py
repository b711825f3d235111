"""The service refuses U+0000 in any text field with a 400 (its answer to bad input), on both backends
alike. PostgreSQL's text cannot hold the character; refusing it at the door keeps the answer the same
whichever store an organization runs on, and nothing is created."""

from __future__ import annotations

from typing import Any

import pytest
from kb_harness import World

REQUESTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "an agent's name": ("POST", "/agents", {"name": "\x00"}),
    "a knowledge base's description": ("POST", "/kb", {"name": "Help", "description": "Articles\x00"}),
    "a knowledge base's name": ("POST", "/kb", {"name": "Help\x00Center"}),
}


@pytest.mark.parametrize("what", sorted(REQUESTS))
def test_a_nul_character_in_a_text_field_is_refused_and_nothing_is_created(world: World, what: str) -> None:
    method, path, body = REQUESTS[what]
    listed_before = world.request("GET", path, world["owner"]).json()
    response = world.request(method, path, world["owner"], json=body)
    assert response.status_code == 400, response.text
    assert "NUL character (U+0000)" in response.text
    assert world.request("GET", path, world["owner"]).json() == listed_before
