"""Browsing entities by name folds case the same way on every backend.

A name filter matches case-insensitively by Unicode case folding (``str.casefold`` after composing
accents), so ``émile`` finds ``ÉMILE``, ``strasse`` finds ``Straße`` and ``ΣΊΣΥΦΟΣ`` finds
``σίσυφος``, on SQLite as on PostgreSQL; and a page is ordered by that folded name, character by
character, so both backends list the same entities in the same order. The host's page and a gem's
``entities.list`` agree. K-ENT-08, K-UI-08, OD-K29.
"""

from __future__ import annotations

import pytest

from notochord import Space

_NAMES = ["ÉMILE Zola", "émile Durand", "Straße Haus", "ΣΊΣΥΦΟΣ", "Zoë", "zach", "Ångström", "adam", "Ölaf"]


def _create(space: Space, names: list[str]) -> dict[str, int]:
    made: dict[str, int] = {}
    for name in names:
        found = space.user.entities.resolve(name=name, create=True)
        assert found is not None
        made[name] = found.id
    return made


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("émile", ["émile Durand", "ÉMILE Zola"]),
        ("ÉMILE", ["émile Durand", "ÉMILE Zola"]),
        ("strasse", ["Straße Haus"]),
        ("STRASSE", ["Straße Haus"]),
        ("σίσυφος", ["ΣΊΣΥΦΟΣ"]),
        ("zoë", ["Zoë"]),
        ("ÅNGSTRÖM", ["Ångström"]),
        ("öl", ["Ölaf"]),
    ],
    ids=["accented-lower", "accented-upper", "sharp-s", "sharp-s-upper", "greek", "diaeresis", "ring", "prefix"],
)
def test_a_name_query_matches_by_unicode_case_folding(space: Space, query: str, expected: list[str]) -> None:
    """K-ENT-08, OD-K29: the same entities match on both backends, whatever the case of the letters."""
    _create(space, _NAMES)

    page = space.user.entities.page(query=query)
    listed = space.user.entities.list("person", query=query)

    assert [e.display_name for e in page.items] == expected
    assert page.total == len(expected)
    assert [e.display_name for e in listed] == expected


def test_an_identifier_query_matches_by_unicode_case_folding(space: Space) -> None:
    """K-ENT-08, OD-K29: a query matches an identifier's value as it matches a name."""
    made = _create(space, ["Someone"])
    space.user.entities.add_identifier(made["Someone"], "handle", "mastodon:ÉLODIE")

    assert [e.id for e in space.user.entities.page(query="élodie").items] == [made["Someone"]]
    assert [e.id for e in space.user.entities.list("person", query="élodie")] == [made["Someone"]]


def test_a_decomposed_accent_matches_the_composed_letter(space: Space) -> None:
    """OD-K26, OD-K29: ``E`` plus a combining accent is the letter ``É``, in a name and in a query."""
    _create(space, ["E\u0301mile Decomposed"])

    assert [e.display_name for e in space.user.entities.page(query="émile").items] == ["E\u0301mile Decomposed"]


def test_a_page_is_ordered_by_the_folded_name_on_every_backend(space: Space) -> None:
    """OD-K29: sorted by display name case-insensitively, code point by code point after folding,
    so both backends give one order whatever the server's locale (which may skip spaces and
    punctuation when it sorts); the gem's list gives the same."""
    names = [*_NAMES, "a-c", "ab", "a c"]
    _create(space, names)

    expected = sorted(names, key=lambda n: (n.casefold(), names.index(n)))
    page = space.user.entities.page()
    assert [e.display_name for e in page.items] == expected
    assert [e.display_name for e in space.user.entities.list("person")] == expected


def test_pages_of_a_folded_order_do_not_overlap(space: Space) -> None:
    """OD-K29: names equal once folded are ordered by creation, so consecutive pages never repeat one."""
    # a name finds the entity of that name and kind, so the equal names are of different kinds
    for name, kind in [("ann", "person"), ("ANN", "org"), ("Ann", "place"), ("aNN", "team"), ("Bob", "person")]:
        space.user.entities.resolve(kind=kind, name=name, create=True)

    first = space.user.entities.page(limit=2)
    rest = space.user.entities.page(offset=2, limit=10)
    ids = [e.id for e in first.items + rest.items]
    assert len(ids) == len(set(ids)) == 5
    assert [e.display_name for e in first.items + rest.items] == ["ann", "ANN", "Ann", "aNN", "Bob"]
