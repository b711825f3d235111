"""``space.gems.tick_collection``: the one place that decides whether a collection may be ticked for a gem.

K-PERM-13: the collections the user ticks widen only a ``user-selected`` collections permission, so
a tick for a gem that requests none is refused (nothing recorded); unticking always succeeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import notochord
from notochord.errors import GemError, GemNotFoundError


def _install(space: notochord.Space, tmp_path: Path, gem_id: str, permissions: list[str]) -> None:
    folder = tmp_path / gem_id
    folder.mkdir()
    manifest = {
        "id": gem_id,
        "name": gem_id,
        "version": "1.0.0",
        "permissions": {"knowledge": {"permissions": permissions, "reason": "to test ticks"}},
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.install(folder)


def test_a_gem_that_requests_no_user_selected_permission_cannot_have_a_collection_ticked(
    space: notochord.Space, tmp_path: Path
) -> None:
    _install(space, tmp_path, "keeper", ["collections.read:keep", "collections.write:diary"])
    travel = space.user.collections.create("Travel")
    assert space.gems.asks_for_chosen_collections("keeper") is False
    with pytest.raises(GemError, match="gem keeper does not ask for collections you choose"):
        space.gems.tick_collection("keeper", travel.id, on=True)
    assert space.core.collections.ticked_now("keeper") == set()


def test_a_gem_that_requests_user_selected_can_have_a_collection_ticked_and_unticked(
    space: notochord.Space, tmp_path: Path
) -> None:
    _install(space, tmp_path, "reader", ["collections.read:user-selected"])
    travel = space.user.collections.create("Travel")
    assert space.gems.asks_for_chosen_collections("reader") is True
    space.gems.tick_collection("reader", travel.id, on=True)
    assert space.core.collections.ticked_now("reader") == {travel.id}
    space.gems.tick_collection("reader", travel.id, on=False)
    assert space.core.collections.ticked_now("reader") == set()


def test_a_tick_left_from_a_version_that_asked_can_still_be_removed(space: notochord.Space, tmp_path: Path) -> None:
    _install(space, tmp_path, "reader", ["collections.read:user-selected"])
    travel = space.user.collections.create("Travel")
    space.gems.tick_collection("reader", travel.id, on=True)
    upgraded = tmp_path / "reader-2"
    upgraded.mkdir()
    manifest = {"id": "reader", "name": "reader", "version": "2.0.0", "permissions": {"knowledge": {}}}
    (upgraded / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    space.gems.upgrade(upgraded)
    space.gems.tick_collection("reader", travel.id, on=False)
    assert space.core.collections.ticked_now("reader") == set()


def test_ticking_for_a_gem_that_is_not_installed_is_not_found(space: notochord.Space) -> None:
    travel = space.user.collections.create("Travel")
    with pytest.raises(GemNotFoundError):
        space.gems.tick_collection("nobody", travel.id, on=True)
