"""Text holding U+0000 is refused by every write, on both backends, with the field named, and
nothing is written (K-FACT, K-DOC).

PostgreSQL cannot store the NUL character at all; SQLite used to store it, so a vault could hold
what it could never move to PostgreSQL. The write seam checks every write statement's texts before
they are sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

import notochord
from notochord.db.schema import change_objects, changes, collections, documents, entities, facts, predicates
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.batches import BatchItemError

_TABLES = (facts, changes, change_objects, entities, documents, collections, predicates)


def _counts(space: notochord.Space) -> dict[str, int]:
    with space.core.store.read() as conn:
        return {t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()) for t in _TABLES}


Write = tuple[str, Callable[[notochord.Space, int], Any], str]


def writes_holding(bad: str) -> list[Write]:
    """Every kind of write, each with ``bad`` in one of its texts; each takes the space and the id of
    its "notes" collection."""
    return [
        ("fact value", lambda s, _notes: s.user.facts.put(predicate="pref.food.like", value=f"te{bad}a"), "value"),
        (
            "nested value",
            lambda s, _notes: s.user.facts.put(predicate="pref.food.like", value={"a": [f"x{bad}"]}),
            "value",
        ),
        (
            "sourceRef",
            lambda s, _notes: s.user.facts.put(predicate="pref.food.like", value="tea", source_ref=f"doc{bad}"),
            "sourceRef",
        ),
        ("entity name", lambda s, _notes: s.user.entities.resolve(name=f"An{bad}na", create=True), "the entity name"),
        ("collection name", lambda s, _notes: s.user.collections.create(f"no{bad}tes"), "the collection name"),
        (
            "document title",
            lambda s, _notes: s.user.documents.upsert(collection=_notes, title=f"Da{bad}y", body="Fine."),
            "the document title",
        ),
        (
            "document body",
            lambda s, _notes: s.user.documents.upsert(collection=_notes, title="Day", body=f"Anna{bad} came."),
            "the document",
        ),
        (
            "batch item",
            lambda s, _notes: s.user.facts.put_many(
                [{"predicate": "pref.food.like", "value": "tea"}, {"predicate": "pref.food.like", "value": bad}]
            ),
            "value",
        ),
    ]


# (the character, what the refusal calls it): U+0000, which PostgreSQL's text cannot hold, and half
# of a UTF-16 pair, which is no character and no UTF-8 store can hold (it used to leak
# ``UnicodeEncodeError``)
UNSTORABLE = [("\x00", "the NUL character (U+0000)"), ("\ud800", "a lone surrogate (U+D800")]
CASES = [
    pytest.param(bad, said, what, write, field, id=f"{'nul' if bad == chr(0) else 'surrogate'}-{what}")
    for bad, said in UNSTORABLE
    for what, write, field in writes_holding(bad)
]


@pytest.mark.parametrize(("bad", "said", "what", "write", "field"), CASES)
def test_a_write_holding_what_the_store_cannot_hold_is_refused_naming_the_field_and_writes_nothing(
    space: notochord.Space, bad: str, said: str, what: str, write: Callable[[notochord.Space, int], Any], field: str
) -> None:
    """``KnowledgeValidationError`` naming the field and the character, on SQLite
    and PostgreSQL alike, and nothing written."""
    space.user.facts.put(predicate="pref.food.like", value="coffee")
    notes = space.user.collections.create("notes").id
    before = _counts(space)
    with pytest.raises((KnowledgeValidationError, BatchItemError)) as refused:
        write(space, notes)
    message = str(refused.value)
    assert field in message, message
    assert said in message and "remove it" in message, message
    assert _counts(space) == before, what


def test_text_beyond_the_basic_plane_is_written_as_before(space: notochord.Space) -> None:
    """Characters written as surrogate pairs in UTF-16 (emoji, rare CJK) are whole characters here."""
    notes = space.user.collections.create("notes").id
    assert space.user.facts.put(predicate="pref.food.like", value="tea \U0001f375 \U00020000").status == "applied"
    assert space.user.documents.upsert(collection=notes, title="\U0001f375", body="\U0001f600 fine").status == "created"
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["tea \U0001f375 \U00020000"]


def test_text_without_nul_is_written_as_before(space: notochord.Space) -> None:
    """The check refuses only U+0000 (other control characters are text)."""
    assert space.user.facts.put(predicate="pref.food.like", value="tea\tand\x01more").status == "applied"
    assert [f.value for f in space.user.facts.lookup("self", "pref")] == ["tea\tand\x01more"]
