"""A hostile caller: JSON values at their edges.

A fact's value and a document's ``meta`` are JSON. JSON objects have text keys, and equal values
are found equal by their canonical JSON (OD-K17): so a value written from Python with keys that are
not text (``{10: 'a'}``) is refused, naming the key, instead of being stored in an order that no
JSON caller can write again (``{'9': …, '10': …}`` sorted as numbers), which left the same value
current twice and an identical ``meta`` reported as ``updated``. Values that JSON does hold —
numbers beyond 64 bits, ``-0.0``, ``true`` beside ``1`` — are stored and read back as written.
K-CON-10, K-FACT-21, K-DOC-01, K-DOC-03, K-QUOTA-10, K-QUOTA-14, OD-K17, OD-K23, OD-K35.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notochord import Space
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.batches import BatchItemError
from notochord.knowledge.quotas import compact_json

_NOT_TEXT_KEYED = [{10: "a", 9: "b"}, {1: "one"}, {True: 1}, {None: 0}, {1.5: "x"}, [{"ok": {2: "deep"}}]]


def test_a_fact_value_with_a_key_that_is_not_text_is_refused_and_writes_nothing(space: Space) -> None:
    """OD-K17, K-QUOTA-14: before, ``{10: 'a', 9: 'b'}`` was stored as ``{"9":"b","10":"a"}`` (keys
    sorted as numbers), so ``{'10': 'a', '9': 'b'}`` — the same JSON — was written beside it as a
    second current value instead of a duplicate."""
    for value in _NOT_TEXT_KEYED:
        with pytest.raises(KnowledgeValidationError, match=r"key .* is not text.*write the key as text"):
            space.user.facts.put(predicate="pref.food.like", value=value)
        with pytest.raises(BatchItemError, match="item 1 of the batch: value has an object key"):
            space.as_assistant.facts.put_many(
                [{"predicate": "pref.food.like", "value": "tea"}, {"predicate": "pref.food.like", "value": value}]
            )

    assert space.user.facts.lookup("self", "pref") == []
    assert space.changes.list() == []


def test_a_meta_with_a_key_that_is_not_text_is_refused_before_anything_is_written(space: Space) -> None:
    """K-DOC-03, OD-K35: before, ``meta={10: 'a', 9: 'b'}`` was stored, and rewriting it as the JSON
    it reads back as (``{'10': 'a', '9': 'b'}``) was reported ``updated`` and re-indexed."""
    with pytest.raises(KnowledgeValidationError, match=r"meta has an object key 10 .* is not text"):
        space.user.documents.upsert(collection="keep", key="k", title="T", meta={10: "a", 9: "b"})  # type: ignore[dict-item]
    with pytest.raises(BatchItemError, match="item 0 of the batch: meta has an object key"):
        space.user.documents.upsert_many([{"collection": "keep", "title": "T", "meta": {"n": {3: "x"}}}])

    written = space.user.documents.upsert(collection="keep", key="k", title="T", meta={"10": "a", "9": "b"})
    again = space.user.documents.upsert(collection="keep", key="k", title="T", meta={"9": "b", "10": "a"})
    assert (written.status, again.status) == ("created", "unchanged")
    assert [c.op for c in space.changes.list()] == ["documents.create"]


_DIFFERENT_JSON = [(1, True), (0, False), (1, 1.0), (0.0, -0.0), (2**64, 2**64 + 1), ("1", 1)]


def test_values_of_different_json_are_two_values_and_read_back_as_written(space: Space) -> None:
    """K-CON-10, K-FACT-21, OD-K17: ``1`` and ``true`` (equal in Python) are different JSON, so both
    are kept; numbers of any size JSON writes are stored exactly; and the order of an object's keys
    never makes two values of one JSON."""
    first_object = space.user.facts.put(predicate="pref.food.like", value={"10": "a", "9": "b"})
    same_object = space.user.facts.put(predicate="pref.food.like", value={"9": "b", "10": "a"})
    assert (same_object.status, same_object.id) == ("duplicate", first_object.id)

    for slot, (first, second) in enumerate(_DIFFERENT_JSON):
        predicate = f"x.pass6.slot{slot}"
        a = space.user.facts.put(predicate=predicate, value=first)
        b = space.user.facts.put(predicate=predicate, value=second)

        assert (a.status, b.status) == ("applied", "applied")
        stored = {f.id: f.value for f in space.user.facts.lookup("self", predicate)}
        # repr tells 1 from True and 1.0, and 0.0 from -0.0
        assert (repr(stored[a.id]), repr(stored[b.id])) == (repr(first), repr(second))


_json_keys = st.text(max_size=4)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_json_keys, inner, max_size=4),
    max_leaves=12,
)
_bad_keys = st.one_of(st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_json_values, key=_bad_keys, where=st.integers(min_value=0, max_value=3))
def test_any_json_value_is_accepted_and_one_holding_a_key_that_is_not_text_is_refused(
    value: Any, key: object, where: int
) -> None:
    """OD-K17, OD-K23: every JSON value has one canonical text, which reads back to the value; a key
    that is not text anywhere in it is refused by name, wherever it sits."""
    encoded = compact_json(value)
    assert json.loads(encoded) == value
    assert compact_json(json.loads(encoded)) == encoded

    hostile: Any = {key: value}
    for _ in range(where):
        hostile = [{"wrapped": hostile}]
    with pytest.raises(KnowledgeValidationError, match=r"object key .* is not text"):
        compact_json(hostile)
