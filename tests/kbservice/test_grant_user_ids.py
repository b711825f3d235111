"""A grant names its user by the id in the user's tokens: an id holding control characters or a
lone surrogate names nobody and is refused with a 400 that says why, writing nothing (KB-GRANT)."""

from __future__ import annotations

import pytest
from kb_harness import World


@pytest.mark.parametrize("kind", ["kb", "agents"])
@pytest.mark.parametrize("user_id", ["%00", "ann%00", "ann%0Abob", "%7F"], ids=["NUL", "NUL inside", "newline", "DEL"])
def test_a_grant_to_a_user_id_with_control_characters_is_400(world: World, kind: str, user_id: str) -> None:
    resource = world.create_kb() if kind == "kb" else world.create_agent()
    path = f"/{kind}/{resource['id']}/grants/{user_id}"
    response = world.request("PUT", path, world["owner"], json={"permission": "edit"})
    assert response.status_code == 400, response.text
    assert "control characters" in response.json()["message"]
    listed = world.request("GET", f"/{kind}/{resource['id']}/grants", world["owner"])
    assert listed.status_code == 200
    assert listed.json()["grants"] == []
