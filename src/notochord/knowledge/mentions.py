"""Which entities a chunk of text mentions, found by one Aho-Corasick automaton.

A chunk mentions an entity when it contains, case-insensitively, in any Unicode form (an accent
typed as its own combining mark matches the composed letter) and on word boundaries, the
entity's display name, a ``name`` identifier, an email, or a handle's account (OD-K41, K-DOC).
Letters and digits at either end of a name must not touch other word characters; a CJK character
at an end may (CJK text has no spaces), and so may an end that is punctuation.

Every surface form of every live entity goes into one automaton, so a chunk is scanned once
whatever the number of entities, instead of once per name. The automaton is built from the store
and cached per entity-data version (:data:`~notochord.knowledge.writes.ENTITY_VERSION_KEY`, renewed
by every recorded entity or identifier write), so documents written between two entity edits share
one build.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

import ahocorasick
import sqlalchemy as sa

from notochord.db.schema import entities, identifiers
from notochord.knowledge.identifiers import folded
from notochord.knowledge.writes import data_versions
from notochord.search.textindex import is_cjk

__all__ = ["MentionIndex", "MentionMatcher", "surface_forms"]

_MIN_NAME = 2
_WORD = re.compile(r"\w")


def surface_forms(conn: sa.Connection) -> list[tuple[int, str]]:
    """(entity id, text to look for) for every live entity other than the user."""
    live = (
        sa.select(entities.c.id)
        .where(entities.c.kind != "self", entities.c.deleted_at.is_(None), entities.c.merged_into.is_(None))
        .scalar_subquery()
    )
    forms: list[tuple[int, str]] = [
        (row.id, row.display_name)
        for row in conn.execute(sa.select(entities.c.id, entities.c.display_name).where(entities.c.id.in_(live)))
    ]
    for row in conn.execute(
        sa.select(identifiers.c.entity_id, identifiers.c.type, identifiers.c.value).where(
            identifiers.c.removed_at.is_(None), identifiers.c.type.in_(["name", "email", "handle"])
        )
    ):
        value = row.value.split(":", 1)[1] if row.type == "handle" else row.value
        forms.append((row.entity_id, value))
    return [(i, f.strip()) for i, f in forms if len(f.strip()) >= _MIN_NAME]


@dataclass(frozen=True)
class _Needle:
    length: int
    bounded_start: bool
    bounded_end: bool
    entity_ids: frozenset[int]


def _bounded(char: str) -> bool:
    # Word boundaries for alphabetic scripts; CJK text has no spaces, so a CJK name may touch
    # other CJK characters on either side (OD-K41).
    return char.isalnum() and not is_cjk(char)


class MentionMatcher:
    """Finds the entities whose surface forms occur in a text; immutable once built."""

    def __init__(self, forms: Iterable[tuple[int, str]]) -> None:
        by_needle: dict[str, set[int]] = {}
        for entity_id, form in forms:
            needle = folded(form)
            if needle:
                by_needle.setdefault(needle, set()).add(entity_id)
        self._automaton: ahocorasick.Automaton | None = None
        if by_needle:
            automaton = ahocorasick.Automaton()
            for needle, ids in by_needle.items():
                automaton.add_word(
                    needle, _Needle(len(needle), _bounded(needle[0]), _bounded(needle[-1]), frozenset(ids))
                )
            automaton.make_automaton()
            self._automaton = automaton

    def mentioned(self, text: str) -> set[int]:
        """Ids of the entities mentioned in ``text``."""
        found: set[int] = set()
        if self._automaton is None:
            return found
        lowered = folded(text)
        size = len(lowered)
        for end, needle in self._automaton.iter(lowered):
            if needle.entity_ids <= found:
                continue
            start = end - needle.length + 1
            if needle.bounded_start and start > 0 and _WORD.match(lowered[start - 1]):
                continue
            if needle.bounded_end and end + 1 < size and _WORD.match(lowered[end + 1]):
                continue
            found |= needle.entity_ids
        return found


class MentionIndex:
    """The matcher of one space, rebuilt only when its entity data changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[str, MentionMatcher] | None = None

    def matcher(self, conn: sa.Connection) -> MentionMatcher:
        """The matcher for the entity data ``conn`` sees."""
        version = data_versions(conn).entities
        with self._lock:
            if self._cached is not None and self._cached[0] == version:
                return self._cached[1]
        built = MentionMatcher(surface_forms(conn))
        with self._lock:
            self._cached = (version, built)
        return built
