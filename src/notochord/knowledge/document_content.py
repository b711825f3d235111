"""What one document write may hold: the argument rules of an upsert and the content hash (K-DOC).

Rules:

- The argument rules of OD-K35, checked before anything is read: ``key`` with an id, ``body`` with
  ``text``, and ``text`` without ``sourceUri`` (or the reverse) are refused; a key is a non-empty
  string; title, key, body, text and meta stay within the single-write limits
  (:mod:`~notochord.knowledge.quotas`). A key or an imported text the store cannot hold (a NUL, a
  lone surrogate) is refused here: the key before it is looked up, the text because it is stored
  only as chunks, which go in bulk, unchecked by statement.
- A document's content is its title, body or text, meta and sourceUri; two writes of the same
  content have the same :func:`content_hash`, which is what makes a repeated upsert ``unchanged``
  (K-DOC-03) and what an undo restores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import shown
from notochord.knowledge.quotas import MAX_BODY, check_json_size, check_length, refuse_nul_in, storable

__all__ = ["MAX_SOURCE_URI", "UPSERT_ARGUMENTS", "Content", "checked_content", "content_hash", "is_iso_date"]

MAX_SOURCE_URI = 8192
"""The longest ``sourceUri``, in characters: longer than any URL a web server accepts or any file path."""

UPSERT_ARGUMENTS = frozenset({"collection_id", "key", "doc_id", "title", "body", "meta", "text", "source_uri"})
"""What one item of :meth:`~notochord.knowledge.documents.Documents.upsert_many` may hold."""


@dataclass(frozen=True, slots=True)
class Content:
    """A write's content once checked: ``body`` is ``""`` when neither body nor text was given, and
    ``content`` is the text that is chunked (the body, else the imported text)."""

    title: str
    body: str | None
    text: str | None
    meta: dict[str, Any]
    content: str


def checked_content(
    *,
    key: str | None,
    doc_id: int | None,
    title: str | None,
    body: str | None,
    meta: Mapping[str, Any] | None,
    text: str | None,
    source_uri: str | None,
) -> Content:
    """The content of an upsert with these arguments, after the module's rules.

    Raises:
        KnowledgeValidationError: an argument breaks a rule; the message names it.
    """
    if key is not None and doc_id is not None:
        raise KnowledgeValidationError("pass either key or ref, not both")
    if body is not None and text is not None:
        raise KnowledgeValidationError(
            "pass either body (your own content) or text with sourceUri (imported), not both"
        )
    if (text is None) != (source_uri is None):
        raise KnowledgeValidationError("text and sourceUri go together: imported content needs both")
    if source_uri is not None:
        if not isinstance(source_uri, str) or not source_uri.strip():
            raise KnowledgeValidationError(
                f"sourceUri must be a non-empty string naming where the text came from, not {shown(source_uri)}"
            )
        check_length("sourceUri", source_uri, MAX_SOURCE_URI)
        if not storable(source_uri):
            refuse_nul_in("documents", {"source_uri": source_uri})
    if key is not None and (not isinstance(key, str) or not key):
        raise KnowledgeValidationError("key must be a non-empty string")
    if key is not None:
        check_length("key", key)
        if not storable(key):
            refuse_nul_in("documents", {"key": key})
    title = "" if title is None else title
    if not isinstance(title, str):
        raise KnowledgeValidationError("title must be a string")
    check_length("title", title)
    for name, value in (("body", body), ("text", text)):
        if value is not None:
            if not isinstance(value, str):
                raise KnowledgeValidationError(f"{name} must be a string")
            check_length(name, value, MAX_BODY)
    if not storable(text):
        refuse_nul_in("chunks", {"text": text})
    if meta is not None and not isinstance(meta, Mapping):
        raise KnowledgeValidationError("meta must be an object (a dict), such as {'date': '2026-09-29'}")
    meta_dict = dict(meta or {})
    check_json_size("meta", meta_dict)
    if body is None and text is None:
        body = ""
    content = body if body is not None else text
    assert content is not None
    return Content(title, body, text, meta_dict, content)


def content_hash(
    title: str, body: str | None, text: str | None, meta: Mapping[str, Any], source_uri: str | None
) -> str:
    """The hash of a document's content: equal for equal content, whatever the order of meta's keys."""
    canonical = json.dumps(
        {"title": title, "body": body, "text": text, "meta": meta, "sourceUri": source_uri},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    # a lone surrogate hashes too: the write seam, not the hash, refuses what the store cannot hold
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def is_iso_date(text: str) -> bool:
    """Whether ``text`` is a calendar date written ``YYYY-MM-DD`` (a diary key)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10
