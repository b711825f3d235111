"""The search bodies written straight from passages are the bytes the response models write.

The search and
retrieval routes no longer build and re-validate a response model per passage. Whatever a passage
holds — any text, any score from zero to the tiniest or largest float, a missing source — the body
must stay byte-for-byte what ``SearchResults`` and ``RetrieveResults`` write under their wire names
(OD-B05, OD-B06).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from notochord.kbservice.retrieval import Passage
from notochord.server.routes.models import RetrieveResults, SearchResults, passage_out, retrieved_passage_out
from notochord.server.routes.passages_json import retrieve_results_json, search_results_json

# text as it can be stored: any code point but lone surrogates (refused on the way in)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)

passages = st.builds(
    Passage,
    kb_id=st.uuids().map(str),
    kb_name=_TEXT,
    document_id=st.uuids().map(str),
    title=_TEXT,
    text=_TEXT,
    score=st.one_of(
        st.just(0.0),
        st.floats(min_value=0, max_value=1, allow_subnormal=True),
        st.floats(min_value=-1e300, max_value=1e300),
        st.sampled_from([1e-7, 9.99e-5, 1e-4, 1e16, 1e17, 1 / 61, 0.1 + 0.2]),
    ),
    chunk=st.integers(min_value=0, max_value=10**6),
    start=st.integers(min_value=0, max_value=10**9),
    end=st.integers(min_value=0, max_value=10**9),
    source_type=st.sampled_from(["text", "url", "file", "qa", "ünïcode"]),
    source_url=st.one_of(st.none(), _TEXT),
    priority=st.integers(min_value=-(10**6), max_value=10**6),
)


@given(st.lists(passages, max_size=6))
def test_a_search_body_is_what_the_search_model_writes(found: list[Passage]) -> None:
    """The same keys, order, escapes and number formats as ``SearchResults``."""
    expected = SearchResults(results=[passage_out(p) for p in found], count=len(found))
    assert search_results_json(found) == expected.model_dump_json(by_alias=True).encode()


@given(st.lists(passages, max_size=6))
def test_a_retrieval_body_is_what_the_retrieval_model_writes(found: list[Passage]) -> None:
    """Each passage tagged with its knowledge base, as ``RetrieveResults`` writes it."""
    expected = RetrieveResults(passages=[retrieved_passage_out(p) for p in found], count=len(found))
    assert retrieve_results_json(found) == expected.model_dump_json(by_alias=True).encode()


def test_an_empty_answer_is_an_empty_list_and_a_zero_count() -> None:
    """Nothing found is ``{"results":[],"count":0}``, exactly."""
    assert search_results_json([]) == b'{"results":[],"count":0}'
    assert retrieve_results_json([]) == b'{"passages":[],"count":0}'
