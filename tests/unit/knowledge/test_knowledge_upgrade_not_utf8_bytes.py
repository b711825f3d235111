"""Text holding bytes that are not UTF-8 is refused in words about bytes (K-FACT-11, K-DOC-01, K-ENT-01).

Python decodes a byte that is not part of UTF-8 (in a shell argument such as ``$'a\\xffb'``, or a
file name) to a lone surrogate in U+DC80..U+DCFF (``surrogateescape``). Someone who typed such an
argument sent bytes, not half of a UTF-16 pair: the refusal names the byte and where it is, and asks
for UTF-8 text. Any other lone surrogate is still called one. Either way nothing is written, on
SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

import notochord
from notochord.db.schema import changes, collections, documents, entities, facts
from notochord.errors import KnowledgeValidationError

_TABLES = (facts, changes, entities, documents, collections)

# what a shell hands over for $'a\xffb': the byte 0xff is no UTF-8, so Python decodes it to U+DCFF
SHELL_ARGUMENT = b"a\xffb".decode("utf-8", "surrogateescape")


def _counts(space: notochord.Space) -> dict[str, int]:
    with space.core.store.read() as conn:
        return {t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()) for t in _TABLES}


def test_a_shell_argument_with_a_byte_that_is_not_utf8_is_refused_naming_the_byte(space: notochord.Space) -> None:
    """K-FACT-11: the refusal says which byte, at which character, and to send UTF-8; it never
    speaks of UTF-16 surrogates, and nothing is written."""
    assert SHELL_ARGUMENT == "a\udcffb"
    before = _counts(space)
    with pytest.raises(KnowledgeValidationError) as refused:
        space.user.facts.put(predicate="pref.food.like", value=SHELL_ARGUMENT)
    message = str(refused.value)
    assert message == (
        "value contains a byte that is not UTF-8 (0xff, at character 2), which the store cannot hold; "
        "send the text as UTF-8 and write again"
    )
    assert "UTF-16" not in message and "surrogate" not in message
    assert refused.value.reason == "unstorable"
    assert refused.value.values == {"what": "value", "char": "U+DCFF"}
    assert _counts(space) == before


# bytes as Python decodes them, and how the refusal names the first that is not UTF-8
BYTES = [
    (b"\x80", "a byte that is not UTF-8 (0x80, at character 1)"),
    (b"caf\xe9", "a byte that is not UTF-8 (0xe9, at character 4)"),
    # a UTF-8 character before the byte counts as one character, however many bytes it took
    ("d\u00e9j\u00e0 ".encode() + b"\xc3(", "a byte that is not UTF-8 (0xc3, at character 6)"),
]


def _writes_holding(space: notochord.Space, bad: str) -> list[tuple[str, Callable[[], object]]]:
    """Writes with ``bad`` in one of their texts, each with the field its refusal names."""
    docs = space.user.documents
    return [
        ("the document title", lambda: docs.upsert(collection="keep", title=bad, body="Fine.")),
        ("the document", lambda: docs.upsert(collection="keep", title="Fine", body=bad)),
        ("the entity name", lambda: space.user.entities.resolve(name=bad, create=True)),
        ("value", lambda: space.user.facts.put(predicate="pref.food.like", value={"notes": ["fine", bad]})),
    ]


def test_every_byte_that_is_not_utf8_is_named_where_it_stands_in_each_kind_of_text(space: notochord.Space) -> None:
    """K-DOC-01, K-ENT-01: a title (a file name read from disk), a body, an entity name and a nested
    fact value name the byte and its character position in the text that holds it."""
    before = _counts(space)
    for raw, said in BYTES:
        for field, write in _writes_holding(space, raw.decode("utf-8", "surrogateescape")):
            with pytest.raises(KnowledgeValidationError) as refused:
                write()
            message = str(refused.value)
            assert field in message and said in message and "send the text as UTF-8" in message, message
            assert "UTF-16" not in message, message
    assert _counts(space) == before


def test_a_filter_holding_a_byte_that_is_not_utf8_asks_for_utf8(space: notochord.Space) -> None:
    """K-ENT-01: a search text that could match nothing because it holds a byte that is not UTF-8
    says so, and asks for UTF-8."""
    space.user.entities.resolve(name="Ann", create=True)
    with pytest.raises(KnowledgeValidationError) as refused:
        space.user.entities.page(query=b"Ann\xff".decode("utf-8", "surrogateescape"))
    assert str(refused.value) == (
        "query contains a byte that is not UTF-8 (0xff, at character 4), which no stored text can hold, "
        "so nothing could match; send the text as UTF-8 and ask again"
    )
    assert refused.value.reason == "unstorable_filter"


def test_other_lone_surrogates_keep_their_own_words(space: notochord.Space) -> None:
    """K-FACT-11: half of a UTF-16 pair outside U+DC80..U+DCFF (as a JavaScript string or a ``\\ud83d``
    escape may hold) is no byte of a shell argument: it is still called a lone surrogate, to remove."""
    before = _counts(space)
    for lone in ["\ud800", "\udbff", "\udc00", "\udc7f", "\udd00", "\udfff"]:
        with pytest.raises(KnowledgeValidationError) as refused:
            space.user.facts.put(predicate="pref.food.like", value=f"te{lone}a")
        assert str(refused.value) == (
            f"value contains a lone surrogate (U+{ord(lone):04X}, half of a UTF-16 pair, not a character), "
            "which the store cannot hold; remove it (or replace it, e.g. with a space) and write again"
        )
        with pytest.raises(KnowledgeValidationError, match=r"a lone surrogate .* remove it and ask again"):
            space.user.entities.page(query=f"Ann{lone}")
    assert _counts(space) == before
