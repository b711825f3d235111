"""The document list body written straight from the documents is the bytes the response model writes.

The route no longer builds a
``DocumentOut`` per document and validates the list again in a second threadpool hop. Whatever a
document holds — any title, any source, missing file names and authors — the body must stay
byte-for-byte what ``DocumentList`` writes under its wire names (OD-B06).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from notochord.kbservice.documents import KbDocument
from notochord.server.routes.documents_json import document_list_json
from notochord.server.routes.models import DocumentList, document_out

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_MAYBE = st.one_of(st.none(), _TEXT)

documents = st.builds(
    KbDocument,
    id=st.uuids().map(str),
    kb_id=st.uuids().map(str),
    title=_TEXT,
    source_type=st.sampled_from(["text", "file", "url", "structured"]),
    source_url=_MAYBE,
    filename=_MAYBE,
    content_type=_MAYBE,
    status=st.sampled_from(["ready", "indexing"]),
    chunk_count=st.integers(min_value=0, max_value=10**6),
    created_by=_MAYBE,
    created_at=_TEXT,
    updated_at=_TEXT,
    content=_MAYBE,
    data=st.none(),
)


@given(st.lists(documents, max_size=5), st.integers(0, 10**6), st.integers(1, 100), st.integers(0, 10**6))
def test_a_document_list_body_is_what_the_list_model_writes(
    found: list[KbDocument], total: int, limit: int, offset: int
) -> None:
    """The same keys, order and escapes as ``DocumentList``; content never shown."""
    expected = DocumentList(documents=[document_out(d) for d in found], total=total, limit=limit, offset=offset)
    body = document_list_json(found, total=total, limit=limit, offset=offset)
    assert body == expected.model_dump_json(by_alias=True).encode()


def test_an_empty_page_is_an_empty_list_with_its_paging() -> None:
    """No documents is the empty list with the total and the paging asked."""
    assert document_list_json([], total=0, limit=20, offset=0) == b'{"documents":[],"total":0,"limit":20,"offset":0}'
