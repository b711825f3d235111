"""Several files uploaded to a knowledge base in one call are written in one transaction, all or
none (K-DOC, OD-B07), read within one budget for all of them; an upload that finds every reader busy
is told to retry later."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from kb_harness import World
from sqlalchemy import event

from notochord.extraction import isolated as isolated_extraction
from notochord.kbservice.actors import Actor, OrgRole
from notochord.kbservice.documents import IngestLimits, Upload
from notochord.kbservice.errors import KbPayloadTooLargeError, KbValidationError
from notochord.knowledge.quotas import MAX_BODY
from pdf_files import slow_pdf


def _member(world: World) -> Actor:
    member = world["member"]
    return Actor(member.user, world.a, None, is_superadmin=False, org_role=OrgRole.MEMBER)


@pytest.fixture
def writes(world: World) -> Iterator[list[str]]:
    """The write transactions of organization A's space while the test runs (SQLite's ``BEGIN
    IMMEDIATE``, PostgreSQL's write lock)."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement == "BEGIN IMMEDIATE" or statement.startswith("SELECT pg_advisory_xact_lock"):
            seen.append(statement)

    world.create_kb()  # opens the organization's space
    engine = world.live.nc.org(world.a).core.store.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


def _files(count: int) -> list[Upload]:
    return [
        Upload(data=f"# Article {n}\n\nRefunds take {n} days.".encode(), filename=f"a{n}.md", content_type=None)
        for n in range(count)
    ]


def test_many_uploaded_files_become_documents_in_one_transaction(world: World, writes: list[str]) -> None:
    kb = world.create_kb()
    writes.clear()
    added = world.live.service.documents.add_uploads(actor=_member(world), kb_id=kb["id"], uploads=_files(5))
    assert len(writes) == 1
    assert [d.title for d in added] == [f"Article {n}" for n in range(5)]
    assert all(d.source_type == "file" and d.chunk_count == 1 for d in added)
    listed = world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()
    assert listed["total"] == 5


def test_a_refused_file_refuses_the_whole_upload_and_names_the_file(world: World) -> None:
    kb = world.create_kb()
    documents = world.live.service.documents
    empty = Upload(data=b"   \n", filename="blank.md", content_type=None)
    with pytest.raises(KbValidationError, match=r"blank\.md: it contains no text"):
        documents.add_uploads(actor=_member(world), kb_id=kb["id"], uploads=[*_files(2), empty])
    huge = Upload(data=b"a" * (MAX_BODY + 1), filename="huge.txt", content_type=None)
    with pytest.raises(KbPayloadTooLargeError, match=r"huge\.txt"):
        documents.add_uploads(actor=_member(world), kb_id=kb["id"], uploads=[*_files(2), huge])
    with world.live.nc.org(world.a).core.store.read() as conn:
        count = conn.execute(sa.text("SELECT count(*) FROM documents")).scalar_one()
    assert count == 0
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()["total"] == 0


def _batch(world: World, kb_id: str, files: list[tuple[str, bytes]], who: str = "member") -> Any:
    parts = [("file", (name, data, "application/octet-stream")) for name, data in files]
    return world.request("POST", f"/kb/{kb_id}/documents/batch", world[who], files=parts)


def test_the_batch_route_adds_every_file_of_one_multipart_body(world: World, writes: list[str]) -> None:
    kb = world.create_kb()
    writes.clear()
    response = _batch(world, kb["id"], [(f"a{n}.md", f"# Article {n}\n\nShipping {n}.".encode()) for n in range(3)])
    assert response.status_code == 201, response.text
    assert [d["title"] for d in response.json()["documents"]] == ["Article 0", "Article 1", "Article 2"]
    assert len(writes) == 1
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()["total"] == 3


def test_the_batch_route_refuses_a_bad_file_whole_and_checks_permission_and_body_first(world: World) -> None:
    kb = world.create_kb()
    refused = _batch(world, kb["id"], [("a.md", b"# A\n\nfine"), ("photo.png", b"\x89PNG")])
    assert refused.status_code == 415, refused.text
    assert "photo.png" in refused.json()["message"]
    empty = _batch(world, kb["id"], [("a.md", b"# A\n\nfine"), ("blank.md", b"  ")])
    assert empty.status_code == 400, empty.text
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()["total"] == 0
    assert _batch(world, kb["id"], [("a.md", b"# A")], who="viewer").status_code == 403
    as_json = world.request("POST", f"/kb/{kb['id']}/documents/batch", world["member"], json={"content": "x"})
    assert as_json.status_code == 415
    other_field = [("other", ("a.md", b"# A", "text/markdown"))]
    no_file = world.request("POST", f"/kb/{kb['id']}/documents/batch", world["member"], files=other_field)
    assert no_file.status_code == 400, no_file.text


@pytest.fixture
def quick_batches(world: World) -> Iterator[float]:
    documents = world.live.service.documents
    before = documents.limits
    documents.limits = IngestLimits(batch_extract_seconds=1.5)
    yield 1.5
    documents.limits = before


def test_the_files_of_one_batch_share_one_reading_budget(world: World, quick_batches: float) -> None:
    """Each file has its own deadline, and the batch has one for all of them: a hundred files that
    each take a while to read cannot hold one request for hours. Six one-megabyte pages fit no
    budget of a second and a half; nothing is added."""
    kb = world.create_kb()
    page = slow_pdf(pages=1, stream_bytes=1_000_000)
    uploads = [Upload(data=page, filename=f"p{n}.pdf", content_type="application/pdf") for n in range(6)]
    with pytest.raises(KbValidationError, match=r": the files of this upload took longer than 1.5 s to read together;"):
        world.live.service.documents.add_uploads(actor=_member(world), kb_id=kb["id"], uploads=uploads)
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()["total"] == 0


def test_an_upload_that_cannot_get_a_reader_in_time_is_429_with_retry_after(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reader is busy (held here) and none frees up within the wait: the caller is told to come
    back, with Retry-After, instead of holding a server thread in the queue; nothing is added. Plain
    text needs no reader and is still added."""
    monkeypatch.setattr(isolated_extraction, "QUEUE_SECONDS", 0.2)
    kb = world.create_kb()
    for _ in range(isolated_extraction.CONCURRENT_EXTRACTIONS):
        assert isolated_extraction._slots.acquire(timeout=5)
    try:
        pdf = slow_pdf(pages=1, stream_bytes=10_000)
        refused = world.request(
            "POST", f"/kb/{kb['id']}/documents", world["member"], files={"file": ("a.pdf", pdf, "application/pdf")}
        )
        markdown = {"file": ("a.md", b"# A\n\nwords", "text/markdown")}
        text = world.request("POST", f"/kb/{kb['id']}/documents", world["member"], files=markdown)
    finally:
        for _ in range(isolated_extraction.CONCURRENT_EXTRACTIONS):
            isolated_extraction._slots.release()
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "60"
    assert refused.json() == {
        "error": "Too Many Requests",
        "message": (
            f"cannot extract text from a.pdf now: {isolated_extraction.CONCURRENT_EXTRACTIONS} other files are being"
            " read and none finished within 0.2 s; try again in a minute"
        ),
    }
    assert text.status_code == 201, text.text
    assert world.request("GET", f"/kb/{kb['id']}/documents", world["viewer"]).json()["total"] == 1
