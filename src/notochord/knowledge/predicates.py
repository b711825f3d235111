"""Predicate names: the grammar, the fixed first level, and the 30 core predicates.

Pure data and pure functions; the stored vocabulary (declared predicates, aliases) lives in
:mod:`notochord.knowledge.vocabulary`. :class:`PredicateRange` is the one implementation of the
whole-level wildcard rule (OD-K11), in Python (``covers``) and in SQL (``clause``).

Grammar (OD-K13): a predicate is two or more dot-separated segments; a segment is one or more
lowercase Unicode letters, digits or ``_``; the first segment is one of :data:`FIRST_LEVELS`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa

__all__ = [
    "CORE_PREDICATES",
    "FIRST_LEVELS",
    "MAX_PREDICATE",
    "Cardinality",
    "CorePredicate",
    "PredicateRange",
    "is_segment",
    "predicate_problem",
    "ranges_clause",
    "under_prefix",
]

Cardinality = Literal["one", "many"]

MAX_PREDICATE = 400
"""The longest predicate name the vocabulary holds (its column's size)."""

FIRST_LEVELS: tuple[str, ...] = (
    "identity",
    "contact",
    "location",
    "relation",
    "pref",
    "schedule",
    "work",
    "health",
    "finance",
    "x",
)


@dataclass(frozen=True)
class CorePredicate:
    name: str
    cardinality: Cardinality
    display_en: str
    display_zh: str


def _p(name: str, cardinality: Cardinality, en: str, zh: str) -> CorePredicate:
    return CorePredicate(name, cardinality, en, zh)


# K-VOCAB-01…30 in the source's order; English names for group-only meanings follow OD-K53.
CORE_PREDICATES: tuple[CorePredicate, ...] = (
    _p("identity.name", "one", "Name", "姓名"),
    _p("identity.nickname", "many", "Forms of address", "称呼"),
    _p("identity.birthday", "one", "Birthday", "生日"),
    _p("identity.language", "many", "Languages spoken", "会说的语言"),
    _p("contact.email", "many", "Email", "联系方式"),
    _p("contact.phone", "many", "Phone", "联系方式"),
    _p("contact.address", "many", "Address", "联系方式"),
    _p("location.home.city", "one", "City of residence", "居住城市"),
    _p("location.home.address", "one", "Home address", "住址"),
    _p("location.work.city", "one", "Work city", "工作城市"),
    _p("location.timezone", "one", "Time zone", "时区"),
    _p("relation.family", "many", "Family", "人际关系"),
    _p("relation.spouse", "one", "Spouse", "人际关系"),
    _p("relation.friend", "many", "Friends", "人际关系"),
    _p("relation.colleague", "many", "Colleagues", "人际关系"),
    _p("relation.member_of", "many", "Member of", "人际关系"),
    _p("work.company", "one", "Company", "公司"),
    _p("work.title", "one", "Job title", "职位"),
    _p("work.project", "many", "Projects", "项目"),
    _p("pref.food.like", "many", "Foods you like", "饮食偏好"),
    _p("pref.food.dislike", "many", "Foods you dislike", "饮食偏好"),
    _p("pref.food.diet", "many", "Diet", "饮食偏好"),
    _p("pref.food.cuisine", "many", "Favourite cuisines", "饮食偏好"),
    _p("pref.communication.style", "one", "Communication style", "沟通风格"),
    _p("pref.communication.language", "one", "Reply language", "回复语言"),
    _p("schedule.routine", "many", "Daily routine", "作息"),
    _p("schedule.event", "many", "Schedule", "日程"),
    _p("health.allergy", "many", "Allergies", "过敏"),
    _p("health.condition", "many", "Health conditions", "健康状况"),
    _p("finance.currency", "one", "Usual currency", "常用货币"),
)


def is_segment(text: str) -> bool:
    """One or more lowercase Unicode letters, digits or ``_`` (no other characters)."""
    if not text or text != text.lower():
        return False
    return all(ch == "_" or ch.isalnum() for ch in text)


def predicate_problem(name: str, *, min_levels: int = 2) -> str | None:
    """Why ``name`` is not a well-formed predicate, or ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return "a predicate must be a non-empty string"
    if len(name) > MAX_PREDICATE:
        return f"a predicate exceeds limit of {MAX_PREDICATE} characters (got {len(name)}); shorten it"
    segments = name.split(".")
    if len(segments) < min_levels:
        return f"predicate {name!r} needs at least {min_levels} dot-separated levels"
    for segment in segments:
        if not is_segment(segment):
            if is_segment(unicodedata.normalize("NFC", segment)):
                # it reads exactly like a valid level: only the accent's encoding tells them apart
                return (
                    f"predicate {name!r} has a level {segment!r} whose accents are separate combining marks; "
                    "send it with composed characters (Unicode NFC)"
                )
            return f"predicate {name!r} has a malformed level {segment!r} (use lowercase letters, digits or _)"
    if segments[0] not in FIRST_LEVELS:
        return f"predicate {name!r} must start with one of {', '.join(FIRST_LEVELS)}"
    return None


def under_prefix(predicate: str, prefix: str) -> bool:
    """Whole-level prefix match: ``location.home`` matches ``location.home.city``, not
    ``location.homepage`` (OD-K11)."""
    return predicate == prefix or predicate.startswith(prefix + ".")


@dataclass(frozen=True, slots=True, order=True)
class PredicateRange:
    """A range of predicates: ``prefix`` alone, or with ``wildcard`` also every predicate below it.

    ``PredicateRange("contact.email", wildcard=True)`` (``contact.email.*``) covers ``contact.email``
    and ``contact.email.work`` but never ``contact.emails``: coverage works on whole levels.
    """

    prefix: str
    wildcard: bool

    def __str__(self) -> str:
        return f"{self.prefix}.*" if self.wildcard else self.prefix

    def covers(self, predicate: str) -> bool:
        """Whether ``predicate`` lies in this range."""
        return under_prefix(predicate, self.prefix) if self.wildcard else predicate == self.prefix

    def includes(self, other: PredicateRange) -> bool:
        """Whether every predicate of ``other`` lies in this range."""
        if self.wildcard:
            return under_prefix(other.prefix, self.prefix)
        return not other.wildcard and other.prefix == self.prefix

    def clause(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        """The SQL form of :meth:`covers` on ``column`` (``_`` and ``%`` in a prefix match literally)."""
        if not self.wildcard:
            return column == self.prefix
        return sa.or_(column == self.prefix, column.startswith(self.prefix + ".", autoescape=True))


def ranges_clause(ranges: Iterable[PredicateRange], column: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
    """Whether ``column`` lies in any of ``ranges``; no range at all matches nothing."""
    parts = [r.clause(column) for r in ranges]
    return sa.or_(*parts) if parts else sa.false()
