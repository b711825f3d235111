"""Listing entities filters and orders in the store, and lists exactly what loading each one would.

``entities.list`` returns the live entities of one kind, ordered by their folded display name, and
with a query only those whose name or one of their listed identifiers (their own or of an entity
merged into them, a shared one in its first spelling) contains the folded query. The store answers
it from its folded columns; the result is the same as loading every live entity of the kind and
filtering and sorting them one by one. K-ENT-08, K-ENT-12, K-ENT-13, OD-K29, OD-K30.
"""

from __future__ import annotations

import sqlalchemy as sa

from notochord import Space
from notochord.db.schema import entities
from notochord.knowledge.identifiers import folded
from notochord.knowledge.records import Entity

QUERIES = [
    None,
    "",
    " ",
    "émile",
    "ÉMILE",
    "e\u0301mile",
    "strasse",
    "zola.fr",
    "old@",
    "kimj",
    "KIM JANSEN",
    "m   j",
    "%",
    "_",
    "\\",
    "100% pure_",
    "acme",
    "ö",
    "\x00",
    "nothing matches this",
]


def _person(space: Space, **identifiers: str) -> int:
    made = space.user.entities.resolve(create=True, **identifiers)
    assert made is not None
    return made.id


def _mixed(space: Space) -> None:
    """People with accents, ß, Greek and LIKE's special characters in their names; identifiers on
    them and on entities merged into them; a deleted person; a removed identifier; an organisation."""
    zola = _person(space, name="Émile Zola", email="emile@zola.fr")
    _person(space, name="émile Durand")
    _person(space, name="Straße Haus")
    _person(space, name="ΣΊΣΥΦΟΣ")
    _person(space, name="Zoë")
    _person(space, name="adam")
    _person(space, name="Ölaf")
    _person(space, name="100% Pure_Food")
    _person(space, name="Back\\slash")
    kim = _person(space, name="Kim Jansen", email="kim@example.com")
    alias = _person(space, name="K. J.")
    space.user.entities.add_identifier(alias, "email", "KIM@example.com")
    # the same name identifier in another spelling: listed once, in the first
    space.user.entities.add_identifier(alias, "name", "kim   jansen")
    space.user.entities.add_identifier(alias, "handle", "github:kimj")
    space.user.entities.merge(keep=kim, merge=alias)
    gone = _person(space, name="Émile Gone")
    space.user.entities.delete(gone)
    space.user.entities.add_identifier(zola, "email", "old@zola.fr")
    [added] = space.changes.list(limit=1)
    space.changes.revert(added.id)
    made = space.user.entities.resolve(kind="org", name="ACME Émile Corp", create=True)
    assert made is not None


def _as_each_loaded(space: Space, kind: str, query: str | None) -> list[Entity]:
    """The listing by its definition: every live entity of ``kind`` loaded alone, then filtered and sorted."""
    core = space.core.entities
    with space.core.store.read() as conn:
        ids = conn.execute(
            sa.select(entities.c.id).where(
                entities.c.kind == kind, entities.c.deleted_at.is_(None), entities.c.merged_into.is_(None)
            )
        ).scalars()
        found = [core.load(conn, i) for i in ids]
    if query:
        needle = folded(query)
        found = [
            e
            for e in found
            if needle in folded(e.display_name) or any(needle in folded(i.value) for i in e.identifiers)
        ]
    return sorted(found, key=lambda e: (folded(e.display_name), e.id))


def test_the_listing_is_what_loading_each_live_entity_gives(space: Space) -> None:
    """K-ENT-08, K-ENT-12, K-ENT-13, OD-K29: same entities, same identifiers, same order, for every
    kind and query (one space for all of them: building it is the slow part)."""
    _mixed(space)
    for kind in ("person", "org", "place"):
        for query in QUERIES:
            assert space.user.entities.list(kind, query=query) == _as_each_loaded(space, kind, query), (kind, query)


def test_merged_deleted_and_other_kinds_are_left_out_and_merged_identifiers_match(space: Space) -> None:
    """K-ENT-12, K-ENT-13: the merged record and the deleted one are not listed; the kept one is
    found through what was merged into it, its shared identifier listed once."""
    _mixed(space)
    names = [e.display_name for e in space.user.entities.list("person")]
    assert "K. J." not in names and "Émile Gone" not in names and "ACME Émile Corp" not in names
    assert [e.display_name for e in space.user.entities.list("person", query="émile")] == [
        "émile Durand",
        "Émile Zola",
    ]
    [kim] = space.user.entities.list("person", query="kimj")
    assert kim.display_name == "Kim Jansen"
    assert [(i.type, i.value) for i in kim.identifiers if i.type == "email"] == [("email", "kim@example.com")]


def test_a_query_matches_identifiers_only_as_they_are_listed(space: Space) -> None:
    """K-ENT-12: a spelling listed under an earlier one, or an identifier undone, matches nothing."""
    _mixed(space)
    assert space.user.entities.list("person", query="m   j") == []
    assert space.user.entities.list("person", query="old@") == []
    assert [e.display_name for e in space.user.entities.list("person", query="%")] == ["100% Pure_Food"]
    assert [e.display_name for e in space.user.entities.list("person", query="\\")] == ["Back\\slash"]
