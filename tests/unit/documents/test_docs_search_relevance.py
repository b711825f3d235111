"""Each hit says why it was found, and the floor people see is a separate judgement."""

from __future__ import annotations

from dataclasses import replace

from notochord import Space
from notochord.knowledge.hybrid_search import MIN_SIMILARITY, is_relevant

NOTES = {
    "Stew": "Tomato beef stew, simmered for three hours.",
    "Ride": "A bicycle ride along the river.",
    "Taxes": "File the income tax return before May.",
}


def _fill(space: Space) -> None:
    for title, body in NOTES.items():
        space.user.documents.upsert(collection="keep", title=title, body=body)
    space.index.wait()


def test_hits_say_whether_words_matched_and_how_similar_they_are(space: Space) -> None:
    """K-SRCH-02: the fused ranking is unchanged; every readable passage is
    still returned, the word match marked, each with the vector leg's cosine similarity."""
    _fill(space)
    hits = space.user.search("beef stew")
    assert hits[0].title == "Stew"
    assert [h.text_match for h in hits] == [True] + [False] * (len(hits) - 1)
    assert len(hits) == len(NOTES)
    assert all(h.similarity is not None and -1.0 <= h.similarity <= 1.0 for h in hits)
    assert space.user.search("")[0].text_match is False  # a listing matches nothing


def test_without_an_embedder_only_word_matches_are_found_and_none_has_a_similarity(text_space: Space) -> None:
    """Full text alone returns matches only."""
    _fill(text_space)
    [hit] = text_space.user.search("bicycle")
    assert (hit.title, hit.text_match, hit.similarity) == ("Ride", True, None)
    assert text_space.user.search("sourdough") == []


def test_a_hit_is_relevant_when_words_match_or_its_similarity_reaches_the_floor(text_space: Space) -> None:
    """The floor applies to passages found by meaning alone, at MIN_SIMILARITY."""
    _fill(text_space)
    [hit] = text_space.user.search("bicycle")
    assert is_relevant(hit)
    by_meaning = replace(hit, text_match=False, similarity=MIN_SIMILARITY)
    assert is_relevant(by_meaning)
    assert not is_relevant(replace(by_meaning, similarity=MIN_SIMILARITY - 0.01))
    assert not is_relevant(replace(by_meaning, similarity=None))
    assert is_relevant(replace(by_meaning, similarity=0.5), min_similarity=0.4)
