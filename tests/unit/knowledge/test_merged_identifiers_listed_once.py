"""A careful user: merging two records of one person who share identifiers.

Two records of one person often hold the same identifier (the same email, spelled in another case;
the same name). After a merge the kept person lists each identifier once, as adding it again would
say it ``exists``: before, the shared ones were listed twice, by ``get``, ``list`` and the Knowledge
page alike. Undoing the merge gives each person back every identifier of their own.
K-ENT-07, K-ENT-08, K-ENT-09, K-ENT-12, K-UI-12, OD-K26, OD-K29, OD-K44.
"""

from __future__ import annotations

from notochord import Space


def _shown(identifiers: object) -> list[tuple[str, str]]:
    return [(i.type, i.value) for i in identifiers]  # type: ignore[attr-defined]


def test_a_merged_person_lists_each_identifier_once_and_the_undo_splits_them_again(space: Space) -> None:
    """K-ENT-12, OD-K29: the kept record's spelling stands; the other's same identifier is not listed again."""
    ann = space.user.entities.resolve(name="Ann", email="ann@example.org", create=True)
    other = space.user.entities.resolve(name="Ann Smith", phone="+31 6 1234 5678", create=True)
    assert ann is not None and other is not None
    space.user.entities.add_identifier(other.id, "email", " ANN@Example.org")
    space.user.entities.add_identifier(other.id, "name", "ann")

    merge = space.user.entities.merge(keep=ann.id, merge=other.id)

    expected = [
        ("name", "Ann"),
        ("email", "ann@example.org"),
        ("name", "Ann Smith"),
        ("phone", "+31 6 1234 5678"),
    ]
    assert _shown(space.user.entities.get(ann.id).identifiers) == expected
    assert _shown(space.user.entities.get(other.id).identifiers) == expected
    assert [_shown(e.identifiers) for e in space.user.entities.list()] == [expected]
    assert [_shown(e.identifiers) for e in space.user.entities.page().items] == [expected]
    assert space.user.entities.add_identifier(ann.id, "email", "Ann@example.ORG") == "exists"

    space.changes.revert(merge)
    assert _shown(space.user.entities.get(ann.id).identifiers) == [("name", "Ann"), ("email", "ann@example.org")]
    assert _shown(space.user.entities.get(other.id).identifiers) == [
        ("name", "Ann Smith"),
        ("phone", "+31 6 1234 5678"),
        ("email", "ANN@Example.org"),
        ("name", "ann"),
    ]
