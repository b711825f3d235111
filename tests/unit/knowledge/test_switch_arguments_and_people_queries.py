"""A new user of the host API: arguments that look right and are not.

``create`` and ``pin`` are switches: only ``True`` or ``False`` turns them, since ``bool('no')`` is
true and a caller passing the text would create a person or pin a fact it meant not to. A search
text no stored name can hold (a NUL, a lone surrogate) is refused in words naming the argument,
on either store, instead of failing with the encoder's or the driver's error.
K-ENT-01, K-ENT-05, K-FACT-01, K-UI-12, OD-K15, OD-K26, OD-K46.
"""

from __future__ import annotations

import pytest

from notochord import Space
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.batches import BatchItemError

_NOT_SWITCHES = ["no", "false", 1, 0, None, [], "True"]


def test_resolve_creates_only_when_create_is_true(space: Space) -> None:
    """K-ENT-05, OD-K46: before, ``resolve(name='Ann', create='no')`` created Ann."""
    for given in _NOT_SWITCHES:
        with pytest.raises(KnowledgeValidationError, match=r"create must be true or false, not "):
            space.user.entities.resolve(name="Ann", create=given)  # type: ignore[arg-type]

    assert space.user.entities.list() == []
    assert space.changes.list() == []
    assert space.user.entities.resolve(name="Ann", create=False) is None


def test_a_put_pins_only_when_pin_is_true_or_false(space: Space) -> None:
    """K-FACT-01, OD-K15: before, ``put(…, pin='no')`` pinned the fact, alone and in a batch."""
    for given in ["no", "false", 1, 0, [], "True"]:
        with pytest.raises(KnowledgeValidationError, match=r"pin must be true or false, not "):
            space.user.facts.put(predicate="location.home.city", value="Delft", pin=given)  # type: ignore[arg-type]
        with pytest.raises(BatchItemError, match=r"item 0 of the batch: pin must be true or false"):
            space.user.facts.put_many([{"predicate": "location.home.city", "value": "Delft", "pin": given}])

    assert space.user.facts.lookup("self", "location") == []
    unpinned = space.user.facts.put(predicate="location.home.city", value="Delft", pin=False)
    assert space.user.facts.get(unpinned.id).pinned is False
    assert space.user.facts.profile() == []


def test_a_page_of_people_searched_by_a_text_no_name_can_hold_is_refused_by_name(space: Space) -> None:
    """K-UI-12: before, a lone surrogate failed with ``UnicodeEncodeError`` on both stores, and a NUL
    on PostgreSQL with a message that named no argument."""
    space.user.entities.resolve(name="Ann", create=True)

    for query in ["Ann\x00", "Ann\ud800"]:
        with pytest.raises(KnowledgeValidationError, match=r"query contains .* nothing could match") as refused:
            space.user.entities.page(query=query)
        assert refused.value.reason == "unstorable_filter"
    assert [e.display_name for e in space.user.entities.page(query="ann").items] == ["Ann"]
