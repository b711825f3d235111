"""The host API (what the CLI, the console and MCP use on an organization's space) reads a knowledge
base of the REST service but never writes it: its documents are the service's own (KB-GEN-02, OD-B24 as
the design shares the store). Every refusal changes nothing, and the service still lists exactly
what it stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kb_harness import World

import notochord.app
from notochord.errors import KnowledgePermissionError, ServiceContentError
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.collections import CollectionRow
from notochord.knowledge.user import HostKnowledge


def _kb_with_document(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    kb = world.create_kb()
    response = world.request(
        "POST", f"/kb/{kb['id']}/documents", world["member"], json={"title": "Refunds", "content": "Within 30 days."}
    )
    assert response.status_code == 201, response.text
    return kb, response.json()["document"]


def _kb_collection(host: HostKnowledge, kb_id: str) -> CollectionRow:
    (row,) = [r for r in host.collections.list() if r.builtin == "kb" and r.name == kb_id]
    return row


def _service_listing(world: World, kb_id: str) -> list[tuple[str | None, str]]:
    listed = world.request("GET", f"/kb/{kb_id}/documents", world["owner"]).json()["documents"]
    return [(d["id"], d["title"]) for d in listed]


def _org(world: World) -> notochord.app.Space:
    """Organization A's space, which its first knowledge base created."""
    space: notochord.app.Space = world.live.nc.org(world.a)
    return space


def test_host_refuses_every_write_into_a_knowledge_base_and_changes_nothing(world: World) -> None:
    kb, document = _kb_with_document(world)
    org = _org(world)
    host = org.user
    collection = _kb_collection(host, kb["id"])
    (stored,) = host.documents.list(collection.id)
    keep_doc = host.documents.upsert(collection="keep", title="Own note", body="The organization's own.")
    changes_before = len(org.changes.list())

    attempts: dict[str, Callable[[], object]] = {
        "upsert into it": lambda: host.documents.upsert(collection=collection.id, title="Sneaked in", body="x"),
        "upsert over its document": lambda: host.documents.upsert(id=stored.id, title="Rewritten", body="y"),
        "batch into it": lambda: host.documents.upsert_many(
            [
                {"collection": "keep", "title": "fine", "body": "a"},
                {"collection": collection.id, "title": "no", "body": "b"},
            ]
        ),
        "delete its document": lambda: host.documents.delete(stored.id),
        "move its document out": lambda: host.documents.move(stored.id, collection="keep"),
        "move a document in": lambda: host.documents.move(keep_doc.id, collection=collection.id),
        "create a collection inside": lambda: host.collections.create("Inside", parent=collection.id),
        "rename it": lambda: host.collections.rename(collection.id, "Renamed"),
        "move it": lambda: host.collections.move(collection.id, parent="keep"),
    }
    for what, attempt in attempts.items():
        with pytest.raises((ServiceContentError, BatchItemError)) as refused:
            attempt()
        error = refused.value.__cause__ if isinstance(refused.value, BatchItemError) else refused.value
        assert isinstance(error, ServiceContentError), what
        assert isinstance(error, KnowledgePermissionError), what
        assert kb["id"] in str(error) and "/api/knowledge" in str(error), what

    assert len(org.changes.list()) == changes_before
    assert [d.title for d in host.documents.list(collection.id)] == ["Refunds"]
    assert _kb_collection(host, kb["id"]).parent_id is None
    assert _service_listing(world, kb["id"]) == [(document["id"], "Refunds")]


def test_host_cannot_undo_the_services_upload_by_change_or_by_run(world: World) -> None:
    kb, document = _kb_with_document(world)
    org = _org(world)
    upload = org.changes.list(limit=1)[0]
    assert upload.target_type == "document" and upload.run_id is not None

    with pytest.raises(ServiceContentError, match="undo change"):
        org.changes.revert(upload.id)
    with pytest.raises(ServiceContentError, match="undo run"):
        org.changes.revert(run_id=upload.run_id)

    assert org.changes.get(upload.id).status == "applied"
    assert _service_listing(world, kb["id"]) == [(document["id"], "Refunds")]


def test_host_still_reads_knowledge_bases_and_writes_its_own_collections(world: World) -> None:
    kb, _ = _kb_with_document(world)
    org = _org(world)
    host = org.user
    collection = _kb_collection(host, kb["id"])
    assert [d.title for d in host.documents.list(collection.id)] == ["Refunds"]

    own = host.collections.create("Handbook")
    written = host.documents.upsert(collection=own.id, title="Leave", body="25 days a year.")
    moved = host.documents.upsert(collection="keep", title="Draft", body="later")
    host.documents.move(moved.id, collection=own.id)
    org.changes.revert(written.change_id)
    assert [d.title for d in host.documents.list(own.id)] == ["Draft"]
