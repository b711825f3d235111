"""Documents through ``ctx.knowledge.documents`` (K-DOC-01…21, K-CON-18…20, OD-K34…K37, OD-K42,
OD-K54, OD-K55, K-QUOTA-07…09)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from docs_fixtures import col_ref, doc_id, dump, gem

from notochord import (
    KnowledgeNotFoundError,
    KnowledgePermissionError,
    KnowledgeValidationError,
    Space,
)
from notochord.clock import FixedClock
from notochord.db.schema import chunk_vectors, chunks
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.knowledge.quotas import usage

pytestmark = pytest.mark.anyio

KEEP_RW = ["collections.read:keep", "collections.write:keep"]
DIARY_RW = ["collections.read:diary", "collections.write:diary"]
THREE_SECTIONS = "# Starter\n\nTomato soup.\n\n# Main\n\nBeef stew with carrots.\n\n# Dessert\n\nApple pie."


def _keep(space: Space, gems_root: Path, gem_id: str = "g", extra: tuple[str, ...] = ()) -> KnowledgeApi:
    return gem(space, gems_root, gem_id, [*KEEP_RW, *extra])


def _chunk_ids(space: Space, document: int) -> list[int]:
    with space.core.store.read() as conn:
        return list(
            conn.execute(
                sa.select(chunks.c.id).where(chunks.c.document_id == document).order_by(chunks.c.idx)
            ).scalars()
        )


def _usage(space: Space, gem_id: str) -> tuple[int, int]:
    with space.core.store.read() as conn:
        return usage(conn, writer=f"gem:{gem_id}", day="2026-09-29")


def _changes(space: Space, gem_id: str) -> list[str]:
    return [c.op for c in reversed(space.changes.list(actor=f"gem:{gem_id}"))]


# ---------------------------------------------------------------------- upsert


async def test_upsert_returns_status_and_ref(space: Space, gems_root: Path) -> None:
    """K-DOC-01, EX-10: exactly ``{status, ref}``."""
    api = _keep(space, gems_root)
    result = await api.documents.upsert({"collection": "keep", "title": "Note", "body": "Hello"})
    assert dump(result) == {"status": "created", "ref": result.ref}
    assert result.ref.startswith("doc_")


async def test_upsert_by_key_overwrites_without_duplicating(space: Space, gems_root: Path) -> None:
    """K-DOC-02: the same key again updates the one document."""
    api = _keep(space, gems_root)
    first = await api.documents.upsert({"collection": "keep", "key": "r1", "title": "Stew", "body": "v1"})
    second = await api.documents.upsert({"collection": "keep", "key": "r1", "title": "Stew", "body": "v2"})
    assert (first.status, second.status, second.ref) == ("created", "updated", first.ref)
    assert [d.ref for d in await api.documents.list("keep")] == [first.ref]
    assert (await api.documents.get(first.ref)).body == "v2"


async def test_a_key_is_scoped_to_its_collection(space: Space, gems_root: Path) -> None:
    """K-DOC-02, OD-K34: the same key in two collections names two documents."""
    api = _keep(space, gems_root, extra=("collections.create",))
    box = await api.collections.create("Box")
    in_keep = await api.documents.upsert({"collection": "keep", "key": "k", "body": "a"})
    in_box = await api.documents.upsert({"collection": box.ref, "key": "k", "body": "b"})
    assert in_keep.ref != in_box.ref and in_box.status == "created"


async def test_identical_content_is_unchanged_and_rebuilds_nothing(space: Space, gems_root: Path) -> None:
    """K-DOC-03: same chunk ids and vectors, no new change, nothing pending for the embedder."""
    api = _keep(space, gems_root)
    args = {"collection": "keep", "key": "r1", "title": "Menu", "body": THREE_SECTIONS, "meta": {"a": 1}}
    created = await api.documents.upsert(args)
    space.index.wait()
    before_chunks = _chunk_ids(space, doc_id(api, created.ref))
    with space.core.store.read() as conn:
        before_vectors = conn.execute(sa.select(chunk_vectors).order_by(chunk_vectors.c.chunk_id)).all()
    before_changes = _changes(space, "g")
    before_doc = await api.documents.get(created.ref)

    again = await api.documents.upsert(dict(args))
    assert (again.status, again.ref) == ("unchanged", created.ref)
    assert _chunk_ids(space, doc_id(api, created.ref)) == before_chunks
    assert space.index.pending() == 0
    with space.core.store.read() as conn:
        assert conn.execute(sa.select(chunk_vectors).order_by(chunk_vectors.c.chunk_id)).all() == before_vectors
    assert _changes(space, "g") == before_changes
    assert await api.documents.get(created.ref) == before_doc


async def test_a_real_edit_rebuilds_the_chunks(space: Space, gems_root: Path) -> None:
    """K-DOC-03 (contrast), K-CON-20: an update re-chunks, and the new chunks wait for vectors."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "r1", "body": THREE_SECTIONS})
    space.index.wait()
    assert space.index.pending() == 0
    await api.documents.upsert({"collection": "keep", "key": "r1", "body": THREE_SECTIONS + "\n\nCoffee."})
    assert len(_chunk_ids(space, doc_id(api, created.ref))) == 3
    assert space.index.pending() == 3


async def test_upsert_by_ref_updates_that_document(space: Space, gems_root: Path) -> None:
    """K-DOC-04, OD-K35: by ref, ``collection`` may be left out; identical content is unchanged."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "title": "Draft", "body": "one"})
    updated = await api.documents.upsert({"ref": created.ref, "title": "Final", "body": "two"})
    same = await api.documents.upsert({"ref": created.ref, "collection": "keep", "title": "Final", "body": "two"})
    assert [(r.status, r.ref) for r in (updated, same)] == [("updated", created.ref), ("unchanged", created.ref)]
    fetched = await api.documents.get(created.ref)
    assert (fetched.title, fetched.body) == ("Final", "two")


async def test_upsert_without_key_or_ref_always_creates(space: Space, gems_root: Path) -> None:
    """K-DOC-05: two identical writes without key or ref make two documents."""
    api = _keep(space, gems_root)
    one = await api.documents.upsert({"collection": "keep", "title": "Same", "body": "same"})
    two = await api.documents.upsert({"collection": "keep", "title": "Same", "body": "same"})
    assert (one.status, two.status) == ("created", "created") and one.ref != two.ref
    assert len(await api.documents.list("keep")) == 2


async def test_defaults_are_empty_title_body_and_meta(space: Space, gems_root: Path) -> None:
    """OD-K35, K-CON-19: title ``''``, body ``''``, meta ``{}``."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "blank"})
    fetched = await api.documents.get(created.ref)
    assert (fetched.title, fetched.body, fetched.meta, fetched.source_uri) == ("", "", {}, None)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"collection": "keep", "key": "k", "ref": "REF", "body": "b"}, "key"),
        ({"collection": "keep", "body": "b", "text": "t", "sourceUri": "https://example.org/a"}, "body"),
        ({"collection": "keep", "text": "imported"}, "sourceUri"),
        ({"title": "no collection", "body": "b"}, "collection"),
        ({"collection": "keep", "body": "b", "meta": ["not", "an", "object"]}, "meta"),
        ({"collection": "keep", "body": "b", "colour": "red"}, "colour"),
    ],
)
async def test_invalid_argument_combinations_are_refused(
    space: Space, gems_root: Path, args: dict[str, object], fragment: str
) -> None:
    """OD-K35: key with ref, body with text, text without sourceUri, no collection for a new document,
    a non-object meta and unknown options are validation errors that write nothing."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    existing = await api.documents.upsert({"collection": "keep", "body": "x"})
    given = {k: (existing.ref if v == "REF" else v) for k, v in args.items()}
    before = _usage(space, "g")
    with pytest.raises(KnowledgeValidationError, match=fragment):
        await api.documents.upsert(given)
    assert _usage(space, "g") == before
    assert len(await api.documents.list("keep")) == 1


async def test_source_uri_without_text_is_refused(space: Space, gems_root: Path) -> None:
    """OD-K35: ``sourceUri`` needs ``text`` (the reverse of the case above)."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    with pytest.raises(KnowledgeValidationError, match="text"):
        await api.documents.upsert({"collection": "keep", "sourceUri": "https://example.org/a"})


async def test_by_ref_the_collection_must_be_the_current_one(space: Space, gems_root: Path) -> None:
    """OD-K35, K-COL-13: a gem cannot move a document by naming another collection."""
    api = _keep(space, gems_root, extra=("collections.create",))
    box = await api.collections.create("Box")
    created = await api.documents.upsert({"collection": "keep", "body": "x"})
    with pytest.raises(KnowledgeValidationError, match="collection"):
        await api.documents.upsert({"ref": created.ref, "collection": box.ref, "body": "y"})
    assert (await api.documents.get(created.ref)).collection == await col_ref(api, "keep")


# ---------------------------------------------------------------------- imported content


async def test_imported_text_keeps_no_body_but_is_searchable(space: Space, gems_root: Path) -> None:
    """K-DOC-06, OD-K37: ``get`` gives ``body: None`` with the ``sourceUri``; search returns passages."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    text = "# Lentils\n\nRed lentils cook in twenty minutes and need no soaking."
    created = await api.documents.upsert(
        {"collection": "keep", "title": "Pulses", "text": text, "sourceUri": "https://example.org/pulses"}
    )
    fetched = await api.documents.get(created.ref)
    assert (fetched.body, fetched.source_uri, fetched.chunk_count) == (
        None,
        "https://example.org/pulses",
        1,
    )
    space.index.wait()
    hits = await api.search("lentils soaking")
    assert [(h.document, h.text) for h in hits] == [(created.ref, text)]
    again = await api.documents.upsert(
        {
            "collection": "keep",
            "ref": created.ref,
            "title": "Pulses",
            "text": text,
            "sourceUri": "https://example.org/pulses",
        }
    )
    assert again.status == "unchanged"


@pytest.mark.parametrize(
    "uri",
    ["file:///etc/passwd", "ftp://example.org/a", "javascript:alert(1)", "example.org/page", "data:,hello"],
)
async def test_source_uri_must_be_http_or_https(space: Space, gems_root: Path, uri: str) -> None:
    """K-DOC-07: other schemes are refused, even when the host is listed."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    with pytest.raises(KnowledgeValidationError, match="sourceUri"):
        await api.documents.upsert({"collection": "keep", "text": "t", "sourceUri": uri})
    assert await api.documents.list("keep") == []


async def test_source_uri_host_must_be_in_the_network_permission(space: Space, gems_root: Path) -> None:
    """K-DOC-08, OD-K54: an unlisted host fails with a message naming ``sourceUri`` and ``network``."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    for uri in ("https://evil.example/a", "https://sub.example.org/a", "https://example.org.evil.net/"):
        with pytest.raises(KnowledgeValidationError, match="sourceUri") as caught:
            await api.documents.upsert({"collection": "keep", "text": "t", "sourceUri": uri})
        assert "network" in str(caught.value)
    assert await api.documents.list("keep") == []


async def test_a_gem_without_network_permission_cannot_write_source_uri(space: Space, gems_root: Path) -> None:
    """K-DOC-08, OD-K54."""
    api = _keep(space, gems_root)
    with pytest.raises(KnowledgeValidationError, match="sourceUri") as caught:
        await api.documents.upsert({"collection": "keep", "text": "t", "sourceUri": "https://example.org/"})
    assert "network" in str(caught.value)


@pytest.mark.parametrize(
    ("hosts", "uri", "allowed"),
    [
        (["example.org"], "https://EXAMPLE.org/a", True),
        (["example.org"], "https://Example.ORG:443/a", True),
        (["example.org"], "https://example.org:443/a", True),
        (["example.org"], "http://example.org:80/a", True),
        (["example.org"], "https://example.org:8443/a", False),
        (["example.org"], "http://example.org:443/a", False),
        (["example.org:8443"], "https://example.org:8443/a", True),
        (["example.org:8443"], "https://example.org/a", False),
    ],
)
async def test_source_uri_host_matching_rules(
    space: Space, gems_root: Path, hosts: list[str], uri: str, allowed: bool
) -> None:
    """OD-K54: case-insensitive; the default port matches an entry without a port; any other port
    must be listed as ``host:port``."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=hosts)
    args = {"collection": "keep", "text": "imported", "sourceUri": uri}
    if allowed:
        assert (await api.documents.upsert(args)).status == "created"
    else:
        with pytest.raises(KnowledgeValidationError, match="network"):
            await api.documents.upsert(args)


# ---------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("permissions", "target", "needed"),
    [
        (["collections.read:keep"], "keep", "collections.write:keep"),
        (["collections.read:diary"], "diary", "collections.write:diary"),
        ([], "keep", "collections.write:keep"),
    ],
)
async def test_upsert_needs_write_on_the_target(
    space: Space, gems_root: Path, permissions: list[str], target: str, needed: str
) -> None:
    """K-DOC-10, OD-K06, OD-K27: read is not write; the error names the narrowest permission."""
    api = gem(space, gems_root, "g", [*permissions, "collections.create"])
    with pytest.raises(KnowledgePermissionError, match=re.escape(f"lacks knowledge permission {needed}")):
        await api.documents.upsert({"collection": target, "body": "x"})
    assert _usage(space, "g") == (0, 0)


async def test_upsert_into_an_unticked_user_collection_names_user_selected(space: Space, gems_root: Path) -> None:
    """K-DOC-10, OD-K06: a collection the user ticked for read only, or not at all."""
    work = space.user.collections.create("Work")
    api = gem(
        space,
        gems_root,
        "g",
        ["collections.read:user-selected", "collections.write:user-selected"],
        on=["collections.read:user-selected"],
    )
    space.gems.tick_collection("g", work.id, on=True)
    work_ref = await col_ref(api, "Work")
    with pytest.raises(KnowledgePermissionError, match=r"collections\.write:user-selected"):
        await api.documents.upsert({"collection": work_ref, "body": "x"})
    space.gems.set_permission("g", "collections.write:user-selected", True)
    assert (await api.documents.upsert({"collection": work_ref, "body": "x"})).status == "created"


async def test_overwriting_another_writers_document_needs_changes_manage(space: Space, gems_root: Path) -> None:
    """K-DOC-09, OD-K34: by key and by ref, the user's document cannot be overwritten without
    ``changes.manage``; with it, it can."""
    user_doc = space.user.documents.upsert(collection="keep", key="shared", title="Mine", body="user text")
    api = _keep(space, gems_root, extra=("changes.manage",))
    space.gems.set_permission("g", "changes.manage", False)
    ref = await api.documents.get_by_key("keep", "shared")
    assert ref is not None
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission changes\.manage"):
        await api.documents.upsert({"collection": "keep", "key": "shared", "body": "gem text"})
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission changes\.manage"):
        await api.documents.upsert({"ref": ref.ref, "body": "gem text"})
    assert space.user.documents.get(user_doc.id).body == "user text"
    space.gems.set_permission("g", "changes.manage", True)
    result = await api.documents.upsert({"collection": "keep", "key": "shared", "body": "gem text"})
    assert (result.status, result.ref) == ("updated", ref.ref)


async def test_another_gems_document_counts_as_another_writer(space: Space, gems_root: Path) -> None:
    """K-DOC-09: the last writer owns the document; a second gem needs ``changes.manage``."""
    first = _keep(space, gems_root, "first")
    second = _keep(space, gems_root, "second")
    written = await first.documents.upsert({"collection": "keep", "key": "k", "body": "first"})
    with pytest.raises(KnowledgePermissionError, match=r"changes\.manage"):
        await second.documents.upsert({"collection": "keep", "key": "k", "body": "second"})
    with pytest.raises(KnowledgePermissionError, match=r"changes\.manage"):
        await second.documents.delete((await second.documents.list("keep"))[0].ref)
    assert (await first.documents.get(written.ref)).body == "first"


async def test_deleting_another_writers_document_needs_changes_manage(space: Space, gems_root: Path) -> None:
    """K-DOC-09."""
    space.user.documents.upsert(collection="keep", title="User's", body="b")
    api = _keep(space, gems_root, extra=("changes.manage",))
    space.gems.set_permission("g", "changes.manage", False)
    [summary] = await api.documents.list("keep")
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission changes\.manage"):
        await api.documents.delete(summary.ref)
    space.gems.set_permission("g", "changes.manage", True)
    assert dump(await api.documents.delete(summary.ref)) == {"status": "deleted"}


async def test_reading_and_deleting_need_access_to_the_current_collection(space: Space, gems_root: Path) -> None:
    """K-DOC-17: get/getByKey need read, delete needs write; after the user moves the document out of
    reach, each call throws the permission of its new place."""
    work = space.user.collections.create("Work")
    reader = gem(space, gems_root, "reader", ["collections.read:keep"])
    writer = _keep(space, gems_root, "writer")
    created = await writer.documents.upsert({"collection": "keep", "title": "Note", "body": "b"})
    [seen] = await reader.documents.list("keep")
    assert (await reader.documents.get(seen.ref)).title == "Note"
    with pytest.raises(KnowledgePermissionError, match=r"collections\.write:keep"):
        await reader.documents.delete(seen.ref)

    space.user.documents.move(doc_id(writer, created.ref), collection=work.id)
    with pytest.raises(KnowledgePermissionError, match=r"collections\.read:user-selected"):
        await reader.documents.get(seen.ref)
    with pytest.raises(KnowledgePermissionError, match=r"collections\.write:user-selected"):
        await writer.documents.delete(created.ref)
    with pytest.raises(KnowledgePermissionError, match=r"collections\.read:diary"):
        await reader.documents.get_by_key("diary", "2026-09-29")


async def test_unknown_foreign_and_malformed_refs_read_as_no_document(space: Space, gems_root: Path) -> None:
    """K-DOC-17, OD-K08: another gem's ref is not found, like a forged one."""
    first = _keep(space, gems_root, "first")
    second = _keep(space, gems_root, "second")
    created = await first.documents.upsert({"collection": "keep", "body": "b"})
    for ref in (created.ref, "doc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not-a-ref"):
        with pytest.raises(KnowledgeNotFoundError, match="no document"):
            await second.documents.get(ref)
        with pytest.raises(KnowledgeNotFoundError, match="no document"):
            await second.documents.delete(ref)


# ---------------------------------------------------------------------- get / getByKey / list


async def test_get_returns_the_documented_shape(space: Space, gems_root: Path) -> None:
    """K-DOC-11, OD-K36, K-CON-18, K-CON-19."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert(
        {"collection": "keep", "key": "menu", "title": "Menu", "body": THREE_SECTIONS, "meta": {"course": 3}}
    )
    assert dump(await api.documents.get(created.ref)) == {
        "ref": created.ref,
        "collection": await col_ref(api, "keep"),
        "key": "menu",
        "title": "Menu",
        "body": THREE_SECTIONS,
        "meta": {"course": 3},
        "sourceUri": None,
        "createdAt": "2026-09-29T08:00:00.000Z",
        "updatedAt": "2026-09-29T08:00:00.000Z",
        "chunkCount": 3,
    }


async def test_get_with_a_range_returns_those_chunks_and_the_range(space: Space, gems_root: Path) -> None:
    """K-DOC-11, OD-K36, EX-11: ``{from: 1, to: 3}`` is chunks 1 and 2 joined by a blank line, and
    ``range: {from, to, total}`` is part of the returned shape."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "title": "Menu", "body": THREE_SECTIONS})
    part = await api.documents.get(created.ref, {"range": {"from": 1, "to": 3}})
    assert part.body == "# Main\n\nBeef stew with carrots.\n\n# Dessert\n\nApple pie."
    shape = dump(part)
    assert shape["body"] == part.body
    assert shape["range"] == {"from": 1, "to": 3, "total": 3}
    assert part["range"] == {"from": 1, "to": 3, "total": 3}
    first = await api.documents.get(created.ref, {"range": {"from": 0, "to": 1}})
    assert first.body == "# Starter\n\nTomato soup."


async def test_a_bad_range_is_refused(space: Space, gems_root: Path) -> None:
    """OD-K36: whole chunk numbers with 0 <= from <= to."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "body": THREE_SECTIONS})
    for window in ({"from": 2, "to": 1}, {"from": -1, "to": 1}, {"from": "0", "to": 1}, {"to": 2}):
        with pytest.raises(KnowledgeValidationError, match="range"):
            await api.documents.get(created.ref, {"range": window})


async def test_get_by_key_returns_the_document_or_none(space: Space, gems_root: Path) -> None:
    """K-DOC-12, EX-11."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "k1", "title": "T", "body": "b"})
    found = await api.documents.get_by_key("keep", "k1")
    assert found is not None and found == await api.documents.get(created.ref)
    assert await api.documents.getByKey("keep", "k1") == found
    assert await api.documents.get_by_key("keep", "missing") is None


async def test_list_holds_direct_documents_only_with_the_documented_fields(space: Space, gems_root: Path) -> None:
    """K-DOC-13, K-DOC-14, K-COL-17, OD-K42: no body, ``updatedAt`` present, subfolders left out."""
    api = _keep(space, gems_root, extra=("collections.create",))
    sub = await api.collections.create("Sub", {"parent": "keep"})
    direct = await api.documents.upsert({"collection": "keep", "key": "d", "title": "Direct", "body": "b"})
    await api.documents.upsert({"collection": sub.ref, "title": "Nested", "body": "b"})
    [item] = await api.documents.list("keep")
    assert dump(item) == {
        "ref": direct.ref,
        "key": "d",
        "title": "Direct",
        "meta": {},
        "createdAt": "2026-09-29T08:00:00.000Z",
        "updatedAt": "2026-09-29T08:00:00.000Z",
    }
    assert [d.title for d in await api.documents.list(sub.ref)] == ["Nested"]


async def test_list_is_newest_first_by_document_date(space: Space, gems_root: Path, clock: FixedClock) -> None:
    """OD-K42, OD-K39: ``meta.date`` when it is an ISO date, else ``updatedAt``; an update moves a
    document up."""
    from datetime import timedelta

    api = _keep(space, gems_root)
    old = await api.documents.upsert({"collection": "keep", "title": "Old", "body": "b"})
    clock.advance(timedelta(hours=1))
    await api.documents.upsert({"collection": "keep", "title": "Newer", "body": "b"})
    await api.documents.upsert({"collection": "keep", "title": "Dated", "body": "b", "meta": {"date": "2026-01-01"}})
    assert [d.title for d in await api.documents.list("keep")] == ["Newer", "Old", "Dated"]
    clock.advance(timedelta(hours=1))
    await api.documents.upsert({"ref": old.ref, "title": "Old", "body": "edited"})
    listed = await api.documents.list("keep")
    assert [d.title for d in listed] == ["Old", "Newer", "Dated"]
    assert listed[0].updated_at == "2026-09-29T10:00:00.000Z" and listed[0].created_at == "2026-09-29T08:00:00.000Z"


async def test_list_filters_by_time_range(space: Space, gems_root: Path) -> None:
    """K-DOC-13, OD-K42, EX-11: ``timeRange`` on the document date (diary entries by ``meta.date``)."""
    api = gem(space, gems_root, "g", DIARY_RW)
    for day in ("2026-08-31", "2026-09-01", "2026-09-15", "2026-09-30"):
        await api.documents.upsert({"collection": "diary", "key": day, "title": day, "body": f"Entry {day}"})
    september = await api.documents.list("diary", {"timeRange": {"from": "2026-09-01"}})
    assert [d.title for d in september] == ["2026-09-30", "2026-09-15", "2026-09-01"]
    window = await api.documents.list("diary", time_range={"from": "2026-09-01", "to": "2026-09-15"})
    assert [d.title for d in window] == ["2026-09-15", "2026-09-01"]


async def test_list_on_an_unreadable_collection_throws(space: Space, gems_root: Path) -> None:
    """K-DOC-15: unlike search, listing one collection is not a query method."""
    api = gem(space, gems_root, "g", ["collections.read:keep"])
    with pytest.raises(KnowledgePermissionError, match=r"lacks knowledge permission collections\.read:diary"):
        await api.documents.list("diary")


# ---------------------------------------------------------------------- delete


async def test_delete_is_a_revertible_change(space: Space, gems_root: Path) -> None:
    """K-DOC-16, OD-K42: ``{status: 'deleted'}``; the document is gone everywhere until the change is
    reverted; deleting it again throws ``no document``."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "k", "title": "Gone", "body": "soon gone"})
    space.index.wait()
    assert dump(await api.documents.delete(created.ref)) == {"status": "deleted"}
    assert await api.documents.list("keep") == []
    assert await api.documents.get_by_key("keep", "k") is None
    assert await api.search("soon gone") == []
    with pytest.raises(KnowledgeNotFoundError, match="no document"):
        await api.documents.get(created.ref)
    with pytest.raises(KnowledgeNotFoundError, match="no document"):
        await api.documents.delete(created.ref)

    [change] = [c for c in space.changes.list(actor="gem:g") if c.op == "documents.delete"]
    space.changes.revert(change.id)
    assert (await api.documents.get(created.ref)).title == "Gone"
    assert [h.document for h in await api.search("soon gone")] == [created.ref]


async def test_an_update_can_be_undone(space: Space, gems_root: Path) -> None:
    """K-DOC-16 (write rules), K-CHG: reverting an update restores the former content and index."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "k", "title": "Soup", "body": "tomato"})
    await api.documents.upsert({"collection": "keep", "key": "k", "title": "Soup", "body": "pumpkin"})
    [change] = [c for c in space.changes.list(actor="gem:g") if c.op == "documents.update"]
    space.changes.revert(change.id)
    assert (await api.documents.get(created.ref)).body == "tomato"
    space.index.wait()
    assert [h.text for h in await api.search("tomato")] == ["tomato"]


# ---------------------------------------------------------------------- size limits


@pytest.mark.parametrize(
    ("field", "ok", "too_big"),
    [
        ("title", "t" * 1000, "t" * 1001),
        ("meta", {"v": "m" * (65_536 - len('{"v":""}'))}, {"v": "m" * (65_537 - len('{"v":""}'))}),
    ],
)
async def test_title_and_meta_limits_are_inclusive(
    space: Space, gems_root: Path, field: str, ok: object, too_big: object
) -> None:
    """K-DOC-18, K-QUOTA-08, K-QUOTA-09, OD-K23, K-QUOTA-14: the limit passes, one more fails and
    writes nothing."""
    api = _keep(space, gems_root)
    assert (await api.documents.upsert({"collection": "keep", field: ok})).status == "created"
    before = _usage(space, "g")
    with pytest.raises(KnowledgeValidationError, match="exceeds limit"):
        await api.documents.upsert({"collection": "keep", field: too_big})
    assert _usage(space, "g") == before
    assert len(await api.documents.list("keep")) == 1


async def test_meta_limit_counts_utf8_bytes(space: Space, gems_root: Path) -> None:
    """K-QUOTA-09, OD-K23: 64 KB are bytes of UTF-8, so Chinese text reaches it at a third of the
    characters."""
    api = _keep(space, gems_root)
    with pytest.raises(KnowledgeValidationError, match="meta exceeds limit"):
        await api.documents.upsert({"collection": "keep", "meta": {"v": "汉" * 22_000}})


@pytest.mark.parametrize("field", ["body", "text"])
async def test_body_and_imported_text_are_limited_to_five_million_characters(
    space: Space, gems_root: Path, field: str
) -> None:
    """K-DOC-18, K-QUOTA-07, OD-K23: 5,000,000 characters pass, 5,000,001 fail (imported text too)."""
    api = gem(space, gems_root, "g", KEEP_RW, hosts=["example.org"])
    extra = {"sourceUri": "https://example.org/big"} if field == "text" else {}
    sentence = "Lorem ipsum dolor sit amet. "
    limit = (sentence * (5_000_000 // len(sentence) + 1))[:5_000_000]
    with pytest.raises(KnowledgeValidationError, match=f"{field} exceeds limit"):
        await api.documents.upsert({"collection": "keep", field: limit + "x", **extra})
    assert _usage(space, "g") == (0, 0)
    result = await api.documents.upsert({"collection": "keep", field: limit, **extra})
    assert result.status == "created"
    assert _usage(space, "g") == (1, 5_000_000)


# ---------------------------------------------------------------------- diary


async def test_diary_entries_get_meta_date_from_an_iso_date_key(space: Space, gems_root: Path) -> None:
    """K-DOC-21, OD-K55: key ``2026-09-29`` without ``meta.date`` gets ``meta.date`` = key; a given
    ``meta.date`` is kept; outside the diary nothing is added."""
    api = gem(space, gems_root, "g", [*DIARY_RW, *KEEP_RW])
    entry = await api.documents.upsert({"collection": "diary", "key": "2026-09-29", "body": "# Today\n\n…"})
    assert (await api.documents.get(entry.ref)).meta == {"date": "2026-09-29"}
    other = await api.documents.upsert(
        {"collection": "diary", "key": "2026-09-28", "body": "b", "meta": {"date": "2026-09-27"}}
    )
    assert (await api.documents.get(other.ref)).meta == {"date": "2026-09-27"}
    kept = await api.documents.upsert({"collection": "keep", "key": "2026-09-29", "body": "b"})
    assert (await api.documents.get(kept.ref)).meta == {}


# ---------------------------------------------------------------------- every write is a change


async def test_every_document_write_is_a_change_and_counts_toward_the_quota(space: Space, gems_root: Path) -> None:
    """K-CON-20, OD-K22, OD-K23, K-CHG: created, updated and deleted are changes; unchanged is not, but
    every call counts one write and its title plus body characters."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "key": "k", "title": "Ti", "body": "abc"})
    await api.documents.upsert({"collection": "keep", "key": "k", "title": "Ti", "body": "abc"})
    await api.documents.upsert({"collection": "keep", "key": "k", "title": "Ti", "body": "abcd"})
    await api.documents.delete(created.ref)
    assert _usage(space, "g") == (4, 5 + 5 + 6 + 0)
    assert _changes(space, "g") == ["documents.create", "documents.update", "documents.delete"]
    assert {c.run_id for c in space.changes.list(actor="gem:g")} == {api.run_id}


async def test_a_write_is_indexed_for_words_at_once_and_for_meaning_after_wait(space: Space, gems_root: Path) -> None:
    """K-CON-20, DESIGN §5: full text at commit; the chunk waits for its vector until the index runs."""
    api = _keep(space, gems_root)
    created = await api.documents.upsert({"collection": "keep", "title": "Bread", "body": "Sourdough starter."})
    assert space.index.pending() == 1
    assert [h.document for h in await api.search("sourdough")] == [created.ref]
    assert space.index.wait() == 1 and space.index.pending() == 0
