"""One predicate range, one wildcard rule: ``PredicateRange.covers`` and its SQL form agree.

OD-K11: ``contact.email.*`` covers ``contact.email`` and every predicate below it
on whole levels, never ``contact.emails``; the same rule holds in Python and in the SQL that
filters a gem's reads.
"""

from __future__ import annotations

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from notochord.access.permissions import FactsPermission, Permission, PermissionSet
from notochord.knowledge.predicates import PredicateRange, ranges_clause

# a small alphabet so that random predicates often share prefixes; _ and % are LIKE wildcards
_SEGMENT = st.text(alphabet="ab_%.", min_size=1, max_size=4).filter(lambda s: "." not in s)
_PREDICATE = st.lists(_SEGMENT, min_size=1, max_size=4).map(".".join)

_ENGINE = sa.create_engine("sqlite://")


def _sql_covers(ranges: list[PredicateRange], predicate: str) -> bool:
    query = sa.select(sa.literal(predicate).label("name")).subquery()
    with _ENGINE.connect() as conn:
        found = conn.execute(sa.select(sa.func.count()).where(ranges_clause(ranges, query.c.name))).scalar_one()
    return bool(found)


def test_a_wildcard_range_covers_whole_levels_only() -> None:
    emails = PredicateRange("contact.email", wildcard=True)
    assert emails.covers("contact.email")
    assert emails.covers("contact.email.work")
    assert not emails.covers("contact.emails")
    assert not emails.covers("contact")
    assert not _sql_covers([emails], "contact.emails")
    assert _sql_covers([emails], "contact.email.work")


def test_a_full_range_covers_only_itself() -> None:
    rated = PredicateRange("pref.food.rated", wildcard=False)
    assert rated.covers("pref.food.rated")
    assert not rated.covers("pref.food.rated.best")
    assert not _sql_covers([rated], "pref.food.rated.best")
    assert str(rated) == "pref.food.rated"
    assert str(PredicateRange("pref.food", wildcard=True)) == "pref.food.*"


def test_no_range_at_all_covers_nothing_in_sql() -> None:
    assert not _sql_covers([], "pref.food.like")


@settings(deadline=None)
@given(prefix=_PREDICATE, wildcard=st.booleans(), predicate=_PREDICATE)
def test_covers_and_clause_agree_on_random_predicates(prefix: str, wildcard: bool, predicate: str) -> None:
    """The Python and the SQL form of the rule never disagree, LIKE wildcards in names included."""
    given_range = PredicateRange(prefix, wildcard=wildcard)
    assert _sql_covers([given_range], predicate) is given_range.covers(predicate)


@settings(deadline=None)
@given(prefix=_PREDICATE, predicate=_PREDICATE)
def test_a_wildcard_range_covers_exactly_the_predicates_on_or_below_its_prefix(prefix: str, predicate: str) -> None:
    below = predicate == prefix or predicate.split(".")[: prefix.count(".") + 1] == prefix.split(".")
    assert PredicateRange(prefix, wildcard=True).covers(predicate) is below


def test_a_facts_permission_carries_its_range_parsed_once() -> None:
    """A permission string is parsed once: the same text gives the very same frozen value."""
    first = Permission.parse("facts.read:self:contact.email.*")
    assert Permission.parse("facts.read:self:contact.email.*") is first
    assert isinstance(first, FactsPermission)
    assert first.range == PredicateRange("contact.email", wildcard=True)
    grants = PermissionSet.of(["facts.read:self:contact.email.*"])
    assert grants.readable_fact_prefixes(subject_kind="self") == [first.range]
