"""Uninstall and the gem's documents and collections (K-UNINST-01, 04, 06, 08, 09, 12, 13; OD-K48)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_fixtures import doc_id, gem, knowledge, manifest, titles, write_manifest

from notochord import KnowledgeNotFoundError, Space
from notochord.gems.api.knowledge import KnowledgeApi

pytestmark = pytest.mark.anyio

PERMISSIONS = [
    "collections.create",
    "collections.read:keep",
    "collections.write:keep",
    "collections.read:diary",
    "collections.write:diary",
]


class World:
    """What the ``g`` gem and the user wrote, by internal id."""

    def __init__(self) -> None:
        self.gem_docs: dict[str, int] = {}
        self.user_docs: dict[str, int] = {}
        self.gem_collections: dict[str, int] = {}
        self.user_collections: dict[str, int] = {}


async def _world(space: Space, gems_root: Path) -> tuple[KnowledgeApi, World]:
    """The gem makes Recipes › Sichuan and writes into both, keep and the diary; the user adds a
    subfolder inside Recipes, moves one of their notes into Recipes, and moves one of the gem's
    documents out into their own Work collection."""
    w = World()
    api = gem(space, gems_root, "g", PERMISSIONS)
    recipes = await api.collections.create("Recipes")
    sichuan = await api.collections.create("Sichuan", {"parent": recipes.ref})
    w.gem_collections = {"Recipes": api.refs.decode("col", recipes.ref), "Sichuan": api.refs.decode("col", sichuan.ref)}
    for title, collection in (
        ("Stew", recipes.ref),
        ("Mapo tofu", sichuan.ref),
        ("Kept by gem", "keep"),
        ("Moved out", "keep"),
    ):
        written = await api.documents.upsert({"collection": collection, "title": title, "body": f"{title} walnut"})
        w.gem_docs[title] = doc_id(api, written.ref)
    entry = await api.documents.upsert({"collection": "diary", "key": "2026-09-29", "body": "Diary walnut"})
    w.gem_docs["Diary"] = doc_id(api, entry.ref)

    mine = space.user.collections.create("Mine", parent=w.gem_collections["Recipes"])
    work = space.user.collections.create("Work")
    w.user_collections = {"Mine": mine.id, "Work": work.id}
    w.user_docs["In mine"] = space.user.documents.upsert(collection=mine.id, title="In mine", body="Mine walnut").id
    loose = space.user.documents.upsert(collection="keep", title="Moved in", body="Moved in walnut").id
    space.user.documents.move(loose, collection=w.gem_collections["Recipes"])
    w.user_docs["Moved in"] = loose
    w.user_docs["User's own"] = space.user.documents.upsert(collection="keep", title="User's own", body="Own walnut").id
    space.user.documents.move(w.gem_docs["Moved out"], collection=work.id)
    space.index.wait()
    return api, w


def _alive(space: Space, ids: dict[str, int]) -> set[str]:
    alive = set()
    for name, i in ids.items():
        try:
            space.user.documents.get(i)
        except KnowledgeNotFoundError:
            continue
        alive.add(name)
    return alive


def _collections(space: Space) -> set[str]:
    return {c.name for c in space.user.collections.list()}


async def test_contributions_count_documents_and_collections_the_gem_created(space: Space, gems_root: Path) -> None:
    """K-UNINST-01, OD-K48: existing documents and collections the gem created, wherever they are."""
    await _world(space, gems_root)
    assert space.gems.contributions("g") == {"facts": 0, "documents": 5, "collections": 2}


async def test_keep_leaves_documents_and_collections_in_place(space: Space, gems_root: Path) -> None:
    """K-UNINST-02, K-UNINST-05: the default keeps everything."""
    _, w = await _world(space, gems_root)
    report = space.gems.uninstall("g")
    assert (report.documents, report.collections, report.deleted) == (5, 2, False)
    assert _alive(space, w.gem_docs) == set(w.gem_docs)
    assert _collections(space) == {"diary", "keep", "Recipes", "Sichuan", "Mine", "Work"}


async def test_delete_removes_the_gems_documents_wherever_they_are(space: Space, gems_root: Path) -> None:
    """K-UNINST-06, OD-K48: including the one the user moved into their own collection and the diary
    entry; the user's own document outside the gem's collections stays."""
    _, w = await _world(space, gems_root)
    report = space.gems.uninstall("g", delete_data=True)
    assert (report.documents, report.collections, report.deleted) == (5, 2, True)
    assert _alive(space, w.gem_docs) == set()
    assert _alive(space, w.user_docs) == {"User's own"}
    assert titles(space.user.search("walnut")) == ["User's own"]


async def test_delete_removes_the_gems_collections_with_everything_inside(space: Space, gems_root: Path) -> None:
    """K-UNINST-08: subfolders, a collection the user added inside, and a document the user moved in."""
    _, w = await _world(space, gems_root)
    space.gems.uninstall("g", delete_data=True)
    assert _collections(space) == {"diary", "keep", "Work"}
    assert "In mine" not in _alive(space, w.user_docs) and "Moved in" not in _alive(space, w.user_docs)


async def test_delete_also_follows_a_gem_collection_the_user_moved(space: Space, gems_root: Path) -> None:
    """K-UNINST-08: a gem collection the user moved into keep still goes, with its subtree."""
    _, w = await _world(space, gems_root)
    space.user.collections.move(w.gem_collections["Recipes"], parent="keep")
    space.gems.uninstall("g", delete_data=True)
    assert _collections(space) == {"diary", "keep", "Work"}


async def test_the_delete_step_is_one_batch_the_user_can_undo(space: Space, gems_root: Path) -> None:
    """K-UNINST-09, OD-K48: one run of the user's changes; reverting it brings every document and
    collection back where it was, searchable again."""
    _, w = await _world(space, gems_root)
    before_parents = {c.name: c.parent_id for c in space.user.collections.list()}
    report = space.gems.uninstall("g", delete_data=True)
    assert report.run_id is not None and report.run_id.startswith("uninstall:g:")
    batch = space.changes.list(run_id=report.run_id)
    assert batch and {c.actor for c in batch} == {"user"}
    # five gem documents and the user's two inside Recipes; Recipes, Sichuan and the user's Mine
    assert len(batch) == 7 + 3
    result = space.changes.revert(run_id=report.run_id)
    assert result.status == "reverted" and result.count == len(batch)
    assert _alive(space, w.gem_docs) == set(w.gem_docs)
    assert _alive(space, w.user_docs) == set(w.user_docs)
    assert {c.name: c.parent_id for c in space.user.collections.list()} == before_parents
    assert len(space.user.search("walnut", limit=100)) == 8


async def test_ticks_do_not_survive_an_uninstall(space: Space, gems_root: Path) -> None:
    """K-UNINST-04, K-UNINST-13: after a reinstall the user must tick collections again."""
    work = space.user.collections.create("Work")
    api = gem(space, gems_root, "t", ["collections.read:user-selected"])
    space.gems.tick_collection("t", work.id, on=True)
    assert [c.name for c in await api.collections.list()] == ["Work"]
    space.gems.uninstall("t")
    again = gem(space, gems_root, "t", ["collections.read:user-selected"])
    assert await again.collections.list() == []


async def test_a_reinstalled_gem_starts_without_rights_on_collections_it_once_created(
    space: Space, gems_root: Path
) -> None:
    """K-UNINST-12, K-UNINST-13, K-UNINST-04, AS-04: the kept collection stays, but a reinstalled gem
    with every permission off reads nothing, as a freshly installed gem does."""
    api = gem(space, gems_root, "c", ["collections.create", "collections.read:user-selected"])
    await api.collections.create("Kept")
    space.gems.uninstall("c")
    assert "Kept" in _collections(space)
    space.gems.install(
        write_manifest(gems_root, manifest("c", ["collections.create", "collections.read:user-selected"]))
    )
    assert await knowledge(space, "c").collections.list() == []
