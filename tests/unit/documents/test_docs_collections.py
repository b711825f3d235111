"""Collections through ``ctx.knowledge.collections`` and the user's host API (K-COL-01…17).

Also K-CON-15…17 and K-CON-22 (built-in names and refs), OD-K04, OD-K31…K33, OD-K56 (the user's
moves), and K-PERM-14 (ticks cover subfolders made later).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from docs_fixtures import col_ref, doc_id, dump, gem

from notochord import KnowledgePermissionError, KnowledgeValidationError, Space
from notochord.gems.api.documents import CollectionsApi, DocumentsApi
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage
from notochord.knowledge.writes import Actor

pytestmark = pytest.mark.anyio

KEEP_RW = ["collections.read:keep", "collections.write:keep"]


def _usage(space: Space, gem_id: str) -> tuple[int, int]:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day="2026-09-29")


async def _names(api: KnowledgeApi) -> list[str]:
    return [c.name for c in await api.collections.list()]


# ---------------------------------------------------------------------- built-ins


def test_diary_and_keep_are_built_in_top_level_collections(space: Space) -> None:
    """K-CON-15, K-CON-16: a fresh space holds exactly ``diary`` and ``keep``, both top level."""
    rows = space.user.collections.list()
    assert [(r.name, r.builtin, r.parent_id, r.kind) for r in rows] == [
        ("diary", "diary", None, "builtin"),
        ("keep", "keep", None, "builtin"),
    ]


async def test_builtins_have_per_gem_refs_accepted_wherever_the_name_is(space: Space, gems_root: Path) -> None:
    """OD-K04, K-CON-22: diary/keep appear with refs, different for each gem, and every collection
    parameter takes the name or the ref alike."""
    first = gem(space, gems_root, "first", KEEP_RW)
    second = gem(space, gems_root, "second", KEEP_RW)
    keep_first = await col_ref(first, "keep")
    keep_second = await col_ref(second, "keep")
    assert keep_first.startswith("col_") and keep_second.startswith("col_")
    assert keep_first != keep_second

    by_name = await first.documents.upsert({"collection": "keep", "key": "k", "title": "Note", "body": "x"})
    by_ref = await first.documents.upsert({"collection": keep_first, "key": "k", "title": "Note", "body": "x"})
    assert (by_name.status, by_ref.status, by_ref.ref) == ("created", "unchanged", by_name.ref)
    assert (await first.documents.get_by_key(keep_first, "k")) == (await first.documents.get_by_key("keep", "k"))
    assert [d.ref for d in await first.documents.list(keep_first)] == [by_name.ref]
    hits = await first.search("", {"collections": [keep_first]})
    assert [h.document for h in hits] == [by_name.ref]
    assert (await first.documents.get(by_name.ref)).collection == keep_first


# ---------------------------------------------------------------------- collections.list


async def test_list_shape_is_exactly_the_documented_fields(space: Space, gems_root: Path) -> None:
    """K-COL-01, EX-12: ``{ref, name, builtin, kind, canWrite, parent}`` and nothing else."""
    api = gem(space, gems_root, "g", KEEP_RW)
    [keep] = await api.collections.list()
    assert set(dump(keep)) == {"ref", "name", "builtin", "kind", "canWrite", "parent"}
    assert dump(keep) == {
        "ref": keep.ref,
        "name": "keep",
        "builtin": "keep",
        "kind": "builtin",
        "canWrite": True,
        "parent": None,
    }


async def test_list_is_empty_without_permissions_and_never_throws(space: Space, gems_root: Path) -> None:
    """K-COL-02, K-COL-12: a gem with nothing switched on sees nothing, and the query does not raise."""
    space.user.collections.create("Work")
    api = gem(space, gems_root, "g", ["collections.read:diary", "collections.read:user-selected"], on=())
    assert await api.collections.list() == []


async def test_list_holds_only_what_the_gem_can_read_or_write(space: Space, gems_root: Path) -> None:
    """K-COL-02, K-COL-05: read:diary → diary read-only; write:keep → keep writable; an unticked user
    collection stays out."""
    space.user.collections.create("Work")
    space.user.collections.create("Inside keep", parent="keep")
    api = gem(space, gems_root, "g", ["collections.read:diary", "collections.write:keep"])
    listed = {c.name: (c.builtin, c.can_write) for c in await api.collections.list()}
    assert listed == {"diary": ("diary", False), "keep": ("keep", True), "Inside keep": (None, True)}


async def test_parent_is_the_containing_ref_or_null_at_top_level(space: Space, gems_root: Path) -> None:
    """K-COL-03: a subfolder names its parent's ref; a top-level collection has ``null``."""
    space.user.collections.create("Travel", parent="keep")
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    by_name = {c.name: c for c in await api.collections.list()}
    assert by_name["keep"].parent is None
    assert by_name["Travel"].parent == by_name["keep"].ref


async def test_parent_is_null_when_the_gem_cannot_see_the_parent(space: Space, gems_root: Path) -> None:
    """K-COL-04: only a subfolder was ticked, so its parent is invisible and reads as ``null``."""
    work = space.user.collections.create("Work")
    clients = space.user.collections.create("Clients", parent=work.id)
    space.user.collections.create("Acme", parent=clients.id)
    api = gem(space, gems_root, "g", ["collections.read:user-selected"])
    space.gems.tick_collection("g", clients.id, on=True)
    by_name = {c.name: c for c in await api.collections.list()}
    assert set(by_name) == {"Clients", "Acme"}
    assert by_name["Clients"].parent is None
    assert by_name["Acme"].parent == by_name["Clients"].ref


async def test_kind_tells_builtin_user_and_gem_collections_apart(space: Space, gems_root: Path) -> None:
    """OD-K31: ``builtin`` for diary/keep, ``user`` for the user's, ``gem`` for any gem's."""
    space.user.collections.create("Mine", parent="keep")
    other = gem(space, gems_root, "other", ["collections.create", *KEEP_RW])
    await other.collections.create("Other's", {"parent": "keep"})
    api = gem(space, gems_root, "g", ["collections.read:keep", "collections.create"])
    await api.collections.create("Own")
    kinds = {(c.name, c.kind, c.builtin) for c in await api.collections.list()}
    assert kinds == {
        ("keep", "builtin", "keep"),
        ("Mine", "user", None),
        ("Other's", "gem", None),
        ("Own", "gem", None),
    }


# ---------------------------------------------------------------------- collections.create


async def test_create_needs_collections_create(space: Space, gems_root: Path) -> None:
    """K-COL-06, K-PERM-23: without the switch the call throws the exact permission, and nothing exists."""
    api = gem(space, gems_root, "g", ["collections.create"], on=())
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.create"):
        await api.collections.create("Recipes")
    assert [r.name for r in space.user.collections.list()] == ["diary", "keep"]


async def test_create_returns_ref_name_and_null_parent(space: Space, gems_root: Path) -> None:
    """K-COL-06, EX-12, OD-K32: names are trimmed; the result has ref, name and ``parent: null``."""
    api = gem(space, gems_root, "g", ["collections.create"])
    created = await api.collections.create("  Recipes  ")
    assert dump(created) == {"ref": created.ref, "name": "Recipes", "parent": None}
    assert [c.ref for c in await api.collections.list()] == [created.ref]


async def test_names_need_not_be_unique_but_must_not_be_empty(space: Space, gems_root: Path) -> None:
    """OD-K32: two collections may share a name (refs tell them apart); a blank name is refused."""
    api = gem(space, gems_root, "g", ["collections.create"])
    one = await api.collections.create("Recipes")
    two = await api.collections.create("Recipes")
    assert one.ref != two.ref
    with pytest.raises(KnowledgeValidationError):
        await api.collections.create("   ")


async def test_name_of_1000_characters_passes_and_1001_fails(space: Space, gems_root: Path) -> None:
    """K-COL-11, K-QUOTA-13: the limit is inclusive and a refused create writes nothing."""
    api = gem(space, gems_root, "g", ["collections.create"])
    await api.collections.create("n" * 1000)
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await api.collections.create("n" * 1001)
    assert len(await api.collections.list()) == 1


async def test_create_inside_a_parent_needs_write_on_it(space: Space, gems_root: Path) -> None:
    """K-COL-07, OD-K06: read access to keep is not enough; the error names collections.write:keep."""
    api = gem(space, gems_root, "g", ["collections.create", "collections.read:keep"])
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.write:keep"):
        await api.collections.create("Sichuan", {"parent": "keep"})
    assert await _names(api) == ["keep"]


async def test_create_inside_a_parent_also_needs_collections_create(space: Space, gems_root: Path) -> None:
    """K-COL-07: write on the parent alone does not allow creating."""
    api = gem(space, gems_root, "g", ["collections.create", *KEEP_RW], on=KEEP_RW)
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.create"):
        await api.collections.create("Sichuan", {"parent": "keep"})


async def test_create_inside_keep_or_an_own_collection_returns_the_parent_ref(space: Space, gems_root: Path) -> None:
    """K-COL-07, K-COL-08, EX-12: ``parent`` may be ``'keep'`` or a ref; the result names the parent."""
    api = gem(space, gems_root, "g", ["collections.create", *KEEP_RW])
    keep = await col_ref(api, "keep")
    in_keep = await api.collections.create("Travel", {"parent": "keep"})
    assert in_keep.parent == keep
    recipes = await api.collections.create("Recipes")
    sichuan = await api.collections.create("Sichuan", parent=recipes.ref)
    assert dump(sichuan) == {"ref": sichuan.ref, "name": "Sichuan", "parent": recipes.ref}
    listed = {c.name: c.parent for c in await api.collections.list()}
    assert listed["Sichuan"] == recipes.ref and listed["Travel"] == keep


async def test_nothing_can_be_created_inside_the_diary(space: Space, gems_root: Path) -> None:
    """K-CON-17, K-COL-08, OD-K33: by name or by ref, for a gem with every right and for the user."""
    api = gem(space, gems_root, "g", ["collections.create", "collections.read:diary", "collections.write:diary"])
    diary = await col_ref(api, "diary")
    for parent in ("diary", diary):
        with pytest.raises(KnowledgeValidationError, match="diary"):
            await api.collections.create("Inside", {"parent": parent})
    with pytest.raises(KnowledgeValidationError, match="diary"):
        space.user.collections.create("Inside", parent="diary")
    assert await _names(api) == ["diary"]


async def test_collections_nest_at_most_five_levels(space: Space, gems_root: Path) -> None:
    """K-COL-09, OD-K33: keep › a › b › c › d is level 5, the deepest allowed; one more fails with ``depth``."""
    api = gem(space, gems_root, "g", ["collections.create", *KEEP_RW])
    parent = "keep"
    for name in "abcd":
        parent = (await api.collections.create(name, {"parent": parent})).ref
    with pytest.raises(KnowledgeValidationError, match="depth"):
        await api.collections.create("e", {"parent": parent})
    top = (await api.collections.create("1")).ref
    for name in "234":
        top = (await api.collections.create(name, {"parent": top})).ref
    await api.collections.create("5", {"parent": top})
    assert len(await api.collections.list()) == 1 + 4 + 5


async def test_creator_reads_and_writes_its_collection_and_later_subfolders(space: Space, gems_root: Path) -> None:
    """K-COL-10, K-PERM-15: with only ``collections.create``, the gem may write its collection and a
    subfolder the user adds afterwards, and may read what the user puts there."""
    api = gem(space, gems_root, "g", ["collections.create"])
    recipes = await api.collections.create("Recipes")
    assert [(c.name, c.can_write) for c in await api.collections.list()] == [("Recipes", True)]
    recipes_id = api.refs.decode("col", recipes.ref)
    soups = space.user.collections.create("Soups", parent=recipes_id)
    space.user.documents.upsert(collection=soups.id, title="Pea soup", body="Split peas, simmered.")
    listed = {c.name: (c.can_write, c.parent) for c in await api.collections.list()}
    assert listed == {"Recipes": (True, None), "Soups": (True, recipes.ref)}
    soups_ref = await col_ref(api, "Soups")
    assert [d.title for d in await api.documents.list(soups_ref)] == ["Pea soup"]
    written = await api.documents.upsert({"collection": soups_ref, "title": "Leek soup", "body": "Leeks."})
    assert written.status == "created"


async def test_a_gem_has_no_rights_on_another_gems_collection(space: Space, gems_root: Path) -> None:
    """K-COL-10: creator rights belong to the creator only."""
    owner = gem(space, gems_root, "owner", ["collections.create"])
    await owner.collections.create("Owner's")
    stranger = gem(space, gems_root, "stranger", ["collections.create"])
    assert await stranger.collections.list() == []


async def test_create_is_a_change_and_counts_toward_the_quota(space: Space, gems_root: Path) -> None:
    """K-COL-16, OD-K22, OD-K23: one ``collections.create`` change by the gem; 1 write and the name's
    characters are counted."""
    api = gem(space, gems_root, "g", ["collections.create"])
    before = _usage(space, "g")
    await api.collections.create("Recipes")
    assert _usage(space, "g") == (before[0] + 1, before[1] + len("Recipes"))
    [change] = [c for c in space.changes.list(actor="gem:g") if c.op == "collections.create"]
    assert change.status == "applied" and "Recipes" in change.summary


async def test_undoing_a_create_removes_the_empty_collection(space: Space, gems_root: Path) -> None:
    """K-COL-16, K-CHG: the create is revertible like any write."""
    api = gem(space, gems_root, "g", ["collections.create"])
    await api.collections.create("Recipes")
    [change] = [c for c in space.changes.list(actor="gem:g") if c.op == "collections.create"]
    assert space.changes.revert(change.id).status == "reverted"
    assert await api.collections.list() == []


# ---------------------------------------------------------------------- moves (the user's act)


def test_every_collection_document_and_search_method_is_asynchronous() -> None:
    """K-CON-21: each public method of ``collections``, ``documents`` and ``search`` is a coroutine."""
    methods = [
        getattr(part, name)
        for part in (CollectionsApi, DocumentsApi)
        for name in vars(part)
        if not name.startswith("_")
    ]
    assert len(methods) >= 7
    assert all(inspect.iscoroutinefunction(m) for m in [*methods, KnowledgeApi.search])


def test_gems_have_no_way_to_move_anything() -> None:
    """K-COL-13, OD-K56: neither facade offers ``move``."""
    assert not hasattr(CollectionsApi, "move")
    assert not hasattr(DocumentsApi, "move")
    assert not hasattr(KnowledgeApi, "move")


def test_the_core_refuses_moves_by_a_gem_actor(space: Space) -> None:
    """K-COL-13: even below the facade, only the user moves collections and documents."""
    work = space.user.collections.create("Work")
    doc = space.user.documents.upsert(collection="keep", title="t", body="b")
    with pytest.raises(KnowledgeValidationError, match="only the user"):
        space.core.collections.move(actor=Actor.gem("g"), collection_id=work.id, parent_id=None)
    with pytest.raises(KnowledgeValidationError, match="only the user"):
        space.core.documents.move(actor=Actor.gem("g"), doc_id=doc.id, collection_id=work.id)


def test_user_cannot_move_diary_or_keep(space: Space) -> None:
    """OD-K56: the built-ins stay at the top level."""
    work = space.user.collections.create("Work")
    for builtin in ("diary", "keep"):
        row = space.user.collections.get(builtin)
        with pytest.raises(KnowledgeValidationError, match=builtin):
            space.user.collections.move(row.id, parent=work.id)


def test_user_cannot_move_anything_into_the_diary(space: Space) -> None:
    """OD-K56, K-COL-08: neither a collection nor a document goes inside the diary."""
    work = space.user.collections.create("Work")
    doc = space.user.documents.upsert(collection=work.id, title="t", body="b")
    with pytest.raises(KnowledgeValidationError, match="diary"):
        space.user.collections.move(work.id, parent="diary")
    with pytest.raises(KnowledgeValidationError, match="diary"):
        space.user.documents.move(doc.id, collection="diary")
    assert space.user.collections.get(work.id).parent_id is None
    assert space.user.documents.get(doc.id).collection_id == work.id


def test_user_cannot_move_a_collection_into_itself_or_a_descendant(space: Space) -> None:
    """OD-K56."""
    a = space.user.collections.create("a")
    b = space.user.collections.create("b", parent=a.id)
    for target in (a.id, b.id):
        with pytest.raises(KnowledgeValidationError, match="itself"):
            space.user.collections.move(a.id, parent=target)


def test_user_moves_respect_the_depth_limit_of_the_whole_subtree(space: Space) -> None:
    """OD-K56, K-COL-09: a three-level subtree fits under level 2 (reaching level 5) but not under 3."""
    tree_top = space.user.collections.create("t1")
    t2 = space.user.collections.create("t2", parent=tree_top.id)
    space.user.collections.create("t3", parent=t2.id)
    k1 = space.user.collections.create("k1", parent="keep")
    k2 = space.user.collections.create("k2", parent=k1.id)
    with pytest.raises(KnowledgeValidationError, match="depth"):
        space.user.collections.move(tree_top.id, parent=k2.id)
    space.user.collections.move(tree_top.id, parent=k1.id)
    assert space.user.collections.get(tree_top.id).parent_id == k1.id


def test_user_cannot_move_a_document_written_with_a_key(space: Space) -> None:
    """K-DOC-19, OD-K56: a keyed document stays where its key finds it."""
    work = space.user.collections.create("Work")
    doc = space.user.documents.upsert(collection="keep", key="k1", title="t", body="b")
    with pytest.raises(KnowledgeValidationError, match="key"):
        space.user.documents.move(doc.id, collection=work.id)
    found = space.user.documents.get_by_key("keep", "k1")
    assert found is not None and found.id == doc.id


async def test_access_follows_location_when_the_user_moves_things(space: Space, gems_root: Path) -> None:
    """K-COL-14, K-DOC-20: moved into keep, a collection and a document become readable; moved out,
    unreadable again."""
    work = space.user.collections.create("Work")
    loose = space.user.documents.upsert(collection=work.id, title="Loose note", body="Remember the milk.")
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    assert await _names(api) == ["keep"]

    space.user.collections.move(work.id, parent="keep")
    assert await _names(api) == ["keep", "Work"]
    work_ref = await col_ref(api, "Work")
    assert [d.title for d in await api.documents.list(work_ref)] == ["Loose note"]

    space.user.collections.move(work.id, parent=None)
    assert await _names(api) == ["keep"]
    with pytest.raises(KnowledgePermissionError, match=r"collections\.read:user-selected"):
        await api.documents.list(work_ref)

    space.user.documents.move(loose.id, collection="keep")
    [summary] = await api.documents.list("keep")
    assert summary.title == "Loose note"
    space.user.documents.move(loose.id, collection=work.id)
    assert await api.documents.list("keep") == []
    with pytest.raises(KnowledgePermissionError, match=r"collections\.read:user-selected"):
        await api.documents.get(summary.ref)


async def test_refs_survive_moves(space: Space, gems_root: Path) -> None:
    """K-COL-15, K-DOC-20: a gem's refs of a collection and of a document stay the same after moves."""
    api = gem(space, gems_root, "g", ["collections.create", *KEEP_RW])
    box = await api.collections.create("Box")
    doc = await api.documents.upsert({"collection": box.ref, "title": "Inside", "body": "text"})
    box_id = api.refs.decode("col", box.ref)
    space.user.collections.move(box_id, parent="keep")
    space.user.documents.move(doc_id(api, doc.ref), collection="keep")
    moved_box = {c.name: c for c in await api.collections.list()}["Box"]
    assert moved_box.ref == box.ref and moved_box.parent == await col_ref(api, "keep")
    fetched = await api.documents.get(doc.ref)
    assert (fetched.ref, fetched.collection) == (doc.ref, await col_ref(api, "keep"))


async def test_user_moves_are_changes_that_can_be_undone(space: Space) -> None:
    """K-COL-13, K-CHG: a move is recorded and reverting it puts the collection back."""
    work = space.user.collections.create("Work")
    change_id = space.user.collections.move(work.id, parent="keep")
    assert change_id is not None
    assert space.changes.get(change_id).op == "collections.move"
    space.changes.revert(change_id)
    assert space.user.collections.get(work.id).parent_id is None


# ---------------------------------------------------------------------- user-selected ticks


async def test_a_tick_covers_subfolders_created_later(space: Space, gems_root: Path) -> None:
    """K-PERM-14: the user ticks Work; a subfolder added afterwards is covered, for reading and
    (with write) writing."""
    work = space.user.collections.create("Work")
    api = gem(space, gems_root, "g", ["collections.read:user-selected", "collections.write:user-selected"])
    space.gems.tick_collection("g", work.id, on=True)
    later = space.user.collections.create("Later", parent=work.id)
    space.user.documents.upsert(collection=later.id, title="Minutes", body="We agreed.")
    listed = {c.name: c.can_write for c in await api.collections.list()}
    assert listed == {"Work": True, "Later": True}
    later_ref = await col_ref(api, "Later")
    assert [d.title for d in await api.documents.list(later_ref)] == ["Minutes"]


async def test_ticks_take_effect_only_with_the_matching_switch(space: Space, gems_root: Path) -> None:
    """K-PERM-13, K-COL-05: a tick with read but not write lists the collection read-only; without the
    read switch the tick grants nothing; unticking removes it."""
    work = space.user.collections.create("Work")
    api = gem(
        space,
        gems_root,
        "g",
        ["collections.read:user-selected", "collections.write:user-selected"],
        on=["collections.read:user-selected"],
    )
    space.gems.tick_collection("g", work.id, on=True)
    assert [(c.name, c.can_write) for c in await api.collections.list()] == [("Work", False)]
    space.gems.set_permission("g", "collections.read:user-selected", False)
    assert await api.collections.list() == []
    space.gems.set_permission("g", "collections.read:user-selected", True)
    space.gems.tick_collection("g", work.id, on=False)
    assert await api.collections.list() == []


def test_diary_and_keep_cannot_be_ticked(space: Space, gems_root: Path) -> None:
    """K-PERM-13, OD-K06: they and their subfolders have permissions of their own."""
    gem(space, gems_root, "g", ["collections.read:user-selected"])
    inside = space.user.collections.create("Inside", parent="keep")
    for collection in (space.user.collections.get("diary").id, space.user.collections.get("keep").id, inside.id):
        with pytest.raises(KnowledgeValidationError):
            space.gems.tick_collection("g", collection, on=True)
