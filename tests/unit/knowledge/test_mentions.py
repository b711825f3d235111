"""Mentions found by one automaton equal the per-name scan they replace (K-DOC, OD-K41)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from notochord import Space
from notochord.db.schema import chunks, mentions
from notochord.knowledge.identifiers import folded
from notochord.knowledge.mentions import MentionMatcher
from notochord.search.textindex import is_cjk


def scan_per_name(text: str, forms: Iterable[tuple[int, str]]) -> set[int]:
    """The matcher the automaton replaced, kept as the oracle: one regular expression per name."""
    lowered = folded(text)
    found: set[int] = set()
    for entity_id, form in forms:
        needle = folded(form)
        if needle not in lowered:
            continue
        before = "" if is_cjk(needle[0]) or not needle[0].isalnum() else r"(?<!\w)"
        after = "" if is_cjk(needle[-1]) or not needle[-1].isalnum() else r"(?!\w)"
        if re.search(before + re.escape(needle) + after, lowered):
            found.add(entity_id)
    return found


# Few letters, so names overlap, contain each other and recur inside words; case pairs that fold
# differently (ß, İ, Σ), CJK, digits, underscores and punctuation at the edges of names.
ALPHABET = "abAB ßSsİiΣσς張王小笼包1_-.@'éÉ\u00a0\u0301"
names = st.text(alphabet=ALPHABET, min_size=2, max_size=6).filter(lambda s: len(s.strip()) >= 2)


@settings(max_examples=300, deadline=None)
@given(
    forms=st.lists(st.tuples(st.integers(1, 6), names), max_size=8),
    pieces=st.lists(st.one_of(names, st.text(alphabet=ALPHABET, max_size=4)), max_size=10),
)
def test_the_automaton_finds_exactly_the_entities_the_per_name_scan_finds(
    forms: list[tuple[int, str]], pieces: list[str]
) -> None:
    """Random names and texts built from them: the same entity ids, case-insensitively, on word boundaries."""
    stripped = [(i, f.strip()) for i, f in forms]
    text = "".join(pieces)
    assert MentionMatcher(stripped).mentioned(text) == scan_per_name(text, stripped)


def test_names_touching_other_letters_are_not_mentions_but_cjk_names_may_touch() -> None:
    """OD-K41: ``Piet`` is not in ``Pieterburen``; ``王芳`` is in ``我和王芳去``; case does not matter."""
    matcher = MentionMatcher([(1, "Piet"), (2, "王芳"), (3, "Anna Smit"), (4, "a.smit@example.org")])
    assert matcher.mentioned("Pieterburen is far") == set()
    assert matcher.mentioned("I met PIET.") == {1}
    assert matcher.mentioned("我和王芳去") == {2}
    assert matcher.mentioned("ANNA SMIT wrote from a.smit@example.org") == {3, 4}
    assert MentionMatcher([]).mentioned("anything") == set()


def _mentioned(space: Space, doc_id: int) -> set[int]:
    with space.core.store.read() as conn:
        chunk_ids = sa.select(chunks.c.id).where(chunks.c.document_id == doc_id)
        return set(conn.execute(sa.select(mentions.c.entity_id).where(mentions.c.chunk_id.in_(chunk_ids))).scalars())


def test_a_document_written_after_an_entity_edit_sees_the_edit(space: Space) -> None:
    """The cached automaton is rebuilt when entities or identifiers change: a new person, a new
    identifier and the undo of that identifier each show in the next document's mentions."""
    anna = space.user.entities.resolve(name="Anna", create=True)
    assert anna is not None
    first = space.user.documents.upsert(collection="keep", title="one", body="Anna and Bram cooked.")
    assert _mentioned(space, first.id) == {anna.id}

    bram = space.user.entities.resolve(name="Bram", create=True)
    assert bram is not None
    second = space.user.documents.upsert(collection="keep", title="two", body="Anna and Bram cooked.")
    assert _mentioned(space, second.id) == {anna.id, bram.id}

    space.user.entities.add_identifier(bram.id, "handle", "mastodon:bee")
    third = space.user.documents.upsert(collection="keep", title="three", body="Bee cooked.")
    assert _mentioned(space, third.id) == {bram.id}

    space.changes.revert(space.changes.list(limit=2)[1].id)  # the handle goes again
    fourth = space.user.documents.upsert(collection="keep", title="four", body="Bee cooked.")
    assert _mentioned(space, fourth.id) == set()


def test_a_name_is_mentioned_whichever_unicode_form_either_side_uses() -> None:
    """OD-K41: "José" typed with the accent as its own combining mark is the same name, in the
    document or in the entity's name."""
    composed, decomposed = unicodedata.normalize("NFC", "José Ruiz"), unicodedata.normalize("NFD", "José Ruiz")
    assert MentionMatcher([(1, composed)]).mentioned(f"Lunch with {decomposed} today") == {1}
    assert MentionMatcher([(1, decomposed)]).mentioned(f"Lunch with {composed.upper()} today") == {1}
    assert MentionMatcher([(1, "Jos")]).mentioned(f"Lunch with {decomposed}") == set()
