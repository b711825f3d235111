"""The JSON body of a knowledge base's document list, written straight from the service's documents.

Like :mod:`~notochord.server.routes.passages_json`: building a :class:`~.models.DocumentOut` per
document and validating the list again against the route's ``response_model`` (in a second hop to
the threadpool) cost more than reading the page. This writes the very bytes the model would
(:class:`~.models.DocumentList` by its wire names): the same keys in the same order, the same
serialiser. The route still declares the model for the OpenAPI document; a test holds the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic_core

from notochord.kbservice.documents import KbDocument

__all__ = ["document_list_json"]


def _document(document: KbDocument) -> dict[str, Any]:
    return {
        "id": document.id,
        "kb_id": document.kb_id,
        "title": document.title,
        "source_type": document.source_type,
        "source_url": document.source_url,
        "filename": document.filename,
        "content_type": document.content_type,
        "status": document.status,
        "chunk_count": document.chunk_count,
        "created_by": document.created_by,
        "created_at": document.created_at,
        "updated_at": document.updated_at,
    }


def document_list_json(documents: Sequence[KbDocument], *, total: int, limit: int, offset: int) -> bytes:
    """``{"documents": [...], "total", "limit", "offset"}`` as :class:`~.models.DocumentList` writes it."""
    return pydantic_core.to_json(
        {"documents": [_document(d) for d in documents], "total": total, "limit": limit, "offset": offset}
    )
