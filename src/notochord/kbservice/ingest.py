"""What the knowledge-base service writes: files as received, sources before they are stored, and
storing many of them in one transaction (K-DOC, K-CHG, OD-B07).

Rules:

- Every source becomes one document in its knowledge base's collection, keyed by a fresh public id,
  through :meth:`notochord.knowledge.documents.Documents.upsert_many`: the sources of one call are
  written in one transaction, each its own change, all or none.
- A refused source is a 413 when a limit was exceeded and a 400 otherwise; with several sources the
  message names the file (its position from 1 and its name). A knowledge base deleted meanwhile is
  a 404. Nothing of the call is written in either case.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from notochord.errors import KnowledgeNotFoundError
from notochord.kbservice.errors import KbNotFoundError, KbPayloadTooLargeError, KbValidationError
from notochord.kbservice.knowledge_bases import KnowledgeBase
from notochord.kbservice.validation import KbSettings
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.core import KnowledgeCore
from notochord.knowledge.quotas import MAX_BODY, MAX_NAME
from notochord.knowledge.writes import USER

__all__ = [
    "UPLOAD_EXTENSIONS",
    "Source",
    "Upload",
    "check_text",
    "first_heading",
    "store_sources",
    "title_field",
]

UPLOAD_EXTENSIONS = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx")


@dataclass(frozen=True)
class Upload:
    """A file as received: its bytes, its name and its declared type, and an optional title."""

    data: bytes
    filename: str | None
    content_type: str | None
    title: str | None = None


@dataclass(frozen=True)
class Source:
    """What one request asks to store, before it is written."""

    title: str
    text: str
    source_type: str
    source_url: str | None = None
    filename: str | None = None
    content_type: str | None = None
    data: Any = None


def title_field(fields: Mapping[str, Any], *, required: bool = False) -> str | None:
    value = fields.get("title")
    if value is None:
        if required:
            raise KbValidationError("title is required with data")
        return None
    if not isinstance(value, str):
        raise KbValidationError("title must be a string")
    value = value.strip()
    if len(value) > MAX_NAME:
        raise KbValidationError(f"title is longer than {MAX_NAME} characters")
    if required and not value:
        raise KbValidationError("title must be a non-empty string")
    return value or None


def first_heading(text: str) -> str | None:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            if heading:
                return heading[:MAX_NAME]
        elif stripped:
            return None
    return None


def check_text(text: str, what: str) -> str:
    if len(text) > MAX_BODY:
        raise KbPayloadTooLargeError(f"{what} is {len(text)} characters, over the limit of {MAX_BODY}")
    if not text.strip():
        raise KbValidationError(f"{what} contains no text")
    return text


def store_sources(
    core: KnowledgeCore, kb: KnowledgeBase, sources: Sequence[Source], *, created_by: str | None, settings: KbSettings
) -> list[str]:
    """Write ``sources`` into the knowledge base in one transaction; their public ids, in order."""
    public_ids = [str(uuid.uuid4()) for _ in sources]
    items = [_item(kb, source, public_id, created_by) for source, public_id in zip(sources, public_ids, strict=True)]
    try:
        core.documents.upsert_many(items, actor=USER, max_chars=settings.chunk_size)
    except BatchItemError as exc:
        if isinstance(exc.__cause__, KnowledgeNotFoundError):
            # the knowledge base was deleted while the documents were being prepared
            raise KbNotFoundError("knowledge base") from exc
        problem = exc.problem
        if len(sources) > 1:
            problem = f"file {exc.index + 1} ({sources[exc.index].filename or sources[exc.index].title}): {problem}"
        if "exceeds limit" in exc.problem:
            raise KbPayloadTooLargeError(problem) from exc
        raise KbValidationError(problem) from exc
    return public_ids


def _item(kb: KnowledgeBase, source: Source, public_id: str, created_by: str | None) -> Mapping[str, Any]:
    service_meta = {
        "source_type": source.source_type,
        "filename": source.filename,
        "content_type": source.content_type,
        "created_by": created_by,
    }
    meta: dict[str, Any] = {"kb": service_meta}
    if source.data is not None:
        meta["data"] = source.data
    as_import = source.source_url is not None
    return {
        "collection_id": kb.collection_id,
        "key": public_id,
        "title": source.title,
        "body": None if as_import else source.text,
        "text": source.text if as_import else None,
        "source_uri": source.source_url,
        "meta": meta,
    }
