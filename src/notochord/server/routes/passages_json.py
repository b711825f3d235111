"""The JSON bodies of search and retrieval, written straight from the service's passages.

A search answers up to a hundred passages, and building a response model for each, validating it
again against the route's ``response_model`` and then serialising it cost more than the rest of the
route. These functions write the very bytes the models would (:class:`~.models.SearchResults`,
:class:`~.models.RetrieveResults`, serialised by their wire names): the same keys in the same order,
the same serialiser (pydantic's, so numbers and escapes are identical), without the models. The
routes still declare the models, so the OpenAPI document is unchanged; a test holds the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic_core
from fastapi import Response

from notochord.kbservice.retrieval import Passage

__all__ = ["json_response", "retrieve_results_json", "search_results_json"]


def _passage(passage: Passage) -> dict[str, Any]:
    return {
        "kb_id": passage.kb_id,
        "document_id": passage.document_id,
        "title": passage.title,
        "text": passage.text,
        "score": float(passage.score),
        "locator": {
            "document_id": passage.document_id,
            "chunk": passage.chunk,
            "from": passage.start,
            "to": passage.end,
        },
        "source_type": passage.source_type,
        "source_url": passage.source_url,
    }


def search_results_json(passages: Sequence[Passage]) -> bytes:
    """``{"results": [...], "count": n}`` as :class:`~.models.SearchResults` writes it."""
    return pydantic_core.to_json({"results": [_passage(p) for p in passages], "count": len(passages)})


def retrieve_results_json(passages: Sequence[Passage]) -> bytes:
    """``{"passages": [...], "count": n}`` as :class:`~.models.RetrieveResults` writes it."""
    shown = []
    for passage in passages:
        item = _passage(passage)
        item["knowledgeBase"] = {"id": passage.kb_id, "name": passage.kb_name, "priority": passage.priority}
        shown.append(item)
    return pydantic_core.to_json({"passages": shown, "count": len(passages)})


def json_response(content: bytes) -> Response:
    """A 200 carrying ``content``, with the headers a response model's answer has."""
    return Response(content=content, media_type="application/json")
