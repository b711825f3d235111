"""The vocabulary: core predicates, declared predicates, aliases, and hint resolution.

Resolution of a ``predicateHint`` (OD-K09) refuses a hint holding a control character that is not
whitespace (a NUL or an escape in one line of plain text is the caller's mistake, not a separator to
fold into a slug), normalises the hint (trim, lowercase, collapse whitespace: tabs and line breaks
included; one Unicode form, NFC) and tries, in vocabulary order (core table order, then declaration
order):

1. an exact predicate name;
2. an exact alias: declared aliases, and the English and Chinese display names of core predicates;
3. a description: exact equality with a declared description or display name, then the first entry
   whose description or display name contains every word of the hint.

No fuzzy or semantic matching. A hint that matches nothing becomes ``x.<slug>`` (OD-K10), added with
cardinality ``many``; the addition happens inside the caller's write transaction, so a refused write
adds nothing.

The vocabulary is global to a space and only grows: declarations are never removed (K-UNINST-10).
"""

from __future__ import annotations

import re
import threading
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from notochord.db.schema import predicate_aliases, predicates, space_meta
from notochord.errors import KnowledgeValidationError
from notochord.knowledge.predicates import CORE_PREDICATES, Cardinality, predicate_problem
from notochord.knowledge.records import Predicate
from notochord.knowledge.writes import VOCABULARY_VERSION_KEY, data_versions, forget_lookups

__all__ = ["Resolution", "Vocabulary", "check_hint", "normalize_hint", "slug_for_hint"]

_VERSION_KEY = VOCABULARY_VERSION_KEY
_NOT_WORD = re.compile(r"[^\w]+")


def _composed_lower(text: str) -> str:
    # one Unicode form before and after lowercasing: "é" sent as "e" plus a combining accent (as
    # some systems type it) is the same letter, and must not become "e_" in a slug
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).lower())


def normalize_hint(hint: str) -> str:
    return " ".join(_composed_lower(hint).split())


def slug_for_hint(hint: str) -> str:
    """The ``x.`` predicate for an unmatched hint (OD-K10)."""
    lowered = _composed_lower(hint).strip()
    segments = [_NOT_WORD.sub("_", part) for part in lowered.split(".")]
    slug = ".".join(s for s in segments if s)[:200].strip(".")
    if not slug or slug.strip("_.") == "":
        raise KnowledgeValidationError(
            f"predicateHint {hint!r} has no letters or digits to name a predicate; pass a full predicate"
        )
    name = slug if slug.startswith("x.") else f"x.{slug}"
    problem = predicate_problem(name)
    if problem:
        raise KnowledgeValidationError(f"predicateHint {hint!r} cannot name a predicate: {problem}")
    return name


@dataclass(frozen=True)
class Resolution:
    name: str
    cardinality: Cardinality
    is_new: bool
    """True when the hint matched nothing and ``name`` is an ``x.`` predicate to add."""


@dataclass(frozen=True)
class _Snapshot:
    version: str
    entries: tuple[Predicate, ...]
    by_name: dict[str, Predicate]


# the control characters that are whitespace in text: tabs, line and page breaks. Python's isspace()
# also counts the separators U+001C..U+001F, which no text uses as spacing.
_LINE_WHITESPACE: Final = frozenset("\t\n\v\f\r\x85")


def check_hint(hint: object) -> None:
    """A predicate hint is a non-empty string without control characters other than whitespace.

    Raises:
        KnowledgeValidationError: naming the first control character by its code point (the hint
            itself is not quoted: the character would garble the message or end it early).
    """
    if not isinstance(hint, str) or not hint.strip():
        raise KnowledgeValidationError("predicateHint is required: pass a predicate such as pref.food.like")
    control = next((c for c in hint if unicodedata.category(c) == "Cc" and c not in _LINE_WHITESPACE), None)
    if control is not None:
        raise KnowledgeValidationError(
            f"predicateHint contains a control character (U+{ord(control):04X}); pass the predicate or a "
            "one-line description as plain text, such as pref.food.like"
        )


class Vocabulary:
    """Reads and extends the vocabulary of one space; caches it per space version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: _Snapshot | None = None

    # ----------------------------------------------------------------- reading

    def snapshot(self, conn: sa.Connection) -> _Snapshot:
        version = _version(conn)
        with self._lock:
            if self._cache is not None and self._cache.version == version:
                return self._cache
        aliases: dict[str, list[str]] = {}
        for row in conn.execute(sa.select(predicate_aliases).order_by(predicate_aliases.c.alias)):
            aliases.setdefault(row.predicate, []).append(row.alias)
        entries = tuple(
            Predicate(
                name=row.name,
                cardinality=row.cardinality,
                description=row.description,
                display_en=row.display_en,
                display_zh=row.display_zh,
                declared_by=row.declared_by,
                aliases=tuple(aliases.get(row.name, ())),
            )
            for row in conn.execute(sa.select(predicates).order_by(predicates.c.position))
        )
        snap = _Snapshot(version, entries, {p.name: p for p in entries})
        with self._lock:
            self._cache = snap
        return snap

    def get(self, conn: sa.Connection, name: str) -> Predicate | None:
        return self.snapshot(conn).by_name.get(name)

    def resolve(self, conn: sa.Connection, hint: str) -> Resolution:
        """Resolve a hint to a vocabulary predicate, or to the ``x.`` predicate it would create."""
        check_hint(hint)
        snap = self.snapshot(conn)
        norm = normalize_hint(hint)
        found = snap.by_name.get(norm)
        if found is None:
            found = _first(snap, lambda p: norm in _aliases(p))
        if found is None:
            found = _first(snap, lambda p: norm in _descriptions(p))
        if found is None:
            words = norm.split()
            found = _first(snap, lambda p: any(all(w in d for w in words) for d in _descriptions(p)))
        if found is not None:
            return Resolution(found.name, found.cardinality, is_new=False)
        name = slug_for_hint(hint)
        existing = snap.by_name.get(name)
        if existing is not None:
            return Resolution(existing.name, existing.cardinality, is_new=False)
        return Resolution(name, "many", is_new=True)

    # ----------------------------------------------------------------- writing

    def seed_core(self, conn: sa.Connection, *, now: str) -> None:
        """Insert the core predicates a new space lacks (idempotent)."""
        present = set(conn.execute(sa.select(predicates.c.name)).scalars())
        rows = [
            {
                "name": p.name,
                "cardinality": p.cardinality,
                "description": None,
                "display_en": p.display_en,
                "display_zh": p.display_zh,
                "declared_by": "core",
                "position": position,
                "created_at": now,
            }
            for position, p in enumerate(CORE_PREDICATES, start=1)
            if p.name not in present
        ]
        if rows:
            conn.execute(sa.insert(predicates), rows)
            _bump(conn)

    def add(
        self,
        conn: sa.Connection,
        *,
        name: str,
        cardinality: Cardinality,
        description: str | None,
        declared_by: str,
        aliases: tuple[str, ...] = (),
        now: str,
    ) -> Predicate:
        """Add or re-declare a predicate (OD-K50).

        Re-declaring an existing name with the same cardinality merges aliases (and fills a missing
        description); a different cardinality is refused, because existing facts depend on it.
        """
        problem = predicate_problem(name)
        if problem:
            raise KnowledgeValidationError(problem)
        existing = self.get(conn, name)
        if existing is not None and existing.cardinality != cardinality:
            raise KnowledgeValidationError(
                f"predicate {name} already exists with cardinality {existing.cardinality}; "
                f"it cannot be re-declared as {cardinality}"
            )
        if existing is None:
            position = conn.execute(sa.select(sa.func.coalesce(sa.func.max(predicates.c.position), 0))).scalar_one()
            conn.execute(
                sa.insert(predicates).values(
                    name=name,
                    cardinality=cardinality,
                    description=description,
                    display_en=None,
                    display_zh=None,
                    declared_by=declared_by,
                    position=position + 1,
                    created_at=now,
                )
            )
        elif description and not existing.description and existing.declared_by != "core":
            conn.execute(sa.update(predicates).where(predicates.c.name == name).values(description=description))
        known = set(existing.aliases) if existing else set()
        new_aliases = sorted({normalize_hint(a) for a in aliases if a.strip()} - known)
        if new_aliases:
            conn.execute(
                sa.insert(predicate_aliases),
                [{"alias": a, "predicate": name, "declared_by": declared_by} for a in new_aliases],
            )
        _bump(conn)
        result = self.get(conn, name)
        assert result is not None
        return result


def _aliases(p: Predicate) -> list[str]:
    names = [normalize_hint(a) for a in p.aliases]
    names += [normalize_hint(d) for d in (p.display_en, p.display_zh) if d]
    return names


def _descriptions(p: Predicate) -> list[str]:
    texts = [normalize_hint(p.description)] if p.description else []
    texts += [normalize_hint(d) for d in (p.display_en, p.display_zh) if d]
    return texts


def _first(snap: _Snapshot, matches: Callable[[Predicate], bool]) -> Predicate | None:
    for entry in snap.entries:
        if matches(entry):
            return entry
    return None


def _version(conn: sa.Connection) -> str:
    return data_versions(conn).vocabulary


def _bump(conn: sa.Connection) -> None:
    # A fresh random token rather than a counter: a version seen inside a transaction that later
    # rolled back can never be reused by another transaction, so a cached snapshot is never stale.
    token = uuid.uuid4().hex
    forget_lookups(conn)
    updated = conn.execute(sa.update(space_meta).where(space_meta.c.key == _VERSION_KEY).values(value=token)).rowcount
    if not updated:
        conn.execute(sa.insert(space_meta).values(key=_VERSION_KEY, value=token))
