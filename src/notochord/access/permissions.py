"""Knowledge permission strings, parsed once into frozen values.

A permission string has the form ``data type.action:scope`` (K-PERM-01). The grammar (OD-K13) is::

    facts.(read|write):<subject>:<prefix>        subject = self | kind
                                                 prefix  = seg.seg(.seg)*  or  seg.seg(.seg)*.*
    entities.(resolve|read|write):<kind>
    collections.(read|write):(diary|keep|user-selected)
    collections.create | collections.bulk | changes.manage | origin.override      (no scope)

    kind = [a-z][a-z0-9_]*, never "self"
    seg  = one or more lowercase Unicode letters, digits or _

A facts prefix has at least two levels (before ``.*`` when it ends in one) and its first level is one
of :data:`~notochord.knowledge.predicates.FIRST_LEVELS`. No whitespace anywhere. A specific
collection id is never a target: collections are granted as ``diary``, ``keep`` or
``user-selected`` and the user ticks the concrete collections later (P-KVAL-05).

Invariants:

- Every :class:`Permission` value is well formed. The constructors validate their fields, so a value
  built directly is held to the same grammar as one parsed from text, and ``str(p)`` is the
  canonical string that parses back to an equal value.
- Strings are never compared with ``startswith``: coverage works on whole predicate levels, so
  ``contact.email.*`` covers ``contact.email`` and ``contact.email.work`` but not
  ``contact.emails`` (OD-K11).
- Implications (OD-K27): ``entities.write:k`` and ``entities.read:k`` each allow
  ``entities.resolve:k``; ``entities.write`` does not imply ``entities.read``;
  ``collections.write:t`` implies ``collections.read:t``. Facts permissions imply nothing: a
  ``facts.write`` grant does not allow reading.

``SimplePermission`` is one class for the four scope-less permissions rather than four classes: they
carry no data besides their name and share one semantics (granted or not), so a closed ``Literal``
of names keeps :meth:`PermissionSet.has` a plain membership test.
"""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, get_args

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.predicates import FIRST_LEVELS, PredicateRange, is_segment

__all__ = [
    "COLLECTION_TARGETS",
    "SELF",
    "SIMPLE_PERMISSIONS",
    "CollectionTarget",
    "CollectionsAction",
    "CollectionsPermission",
    "EntitiesAction",
    "EntitiesPermission",
    "FactsAction",
    "FactsPermission",
    "Permission",
    "PermissionSet",
    "SimpleName",
    "SimplePermission",
    "kind_problem",
    "narrowest_facts_permission",
]

FactsAction = Literal["read", "write"]
EntitiesAction = Literal["resolve", "read", "write"]
CollectionsAction = Literal["read", "write"]
CollectionTarget = Literal["diary", "keep", "user-selected"]
SimpleName = Literal["collections.create", "collections.bulk", "changes.manage", "origin.override"]

SELF: Final = "self"
COLLECTION_TARGETS: Final[tuple[CollectionTarget, ...]] = get_args(CollectionTarget)
SIMPLE_PERMISSIONS: Final[tuple[SimpleName, ...]] = get_args(SimpleName)

_FACTS_ACTIONS: Final[tuple[FactsAction, ...]] = get_args(FactsAction)
_ENTITIES_ACTIONS: Final[tuple[EntitiesAction, ...]] = get_args(EntitiesAction)
_COLLECTIONS_ACTIONS: Final[tuple[CollectionsAction, ...]] = get_args(CollectionsAction)

# Every action a data type knows, scoped or not; drives the "unknown action" message.
_ACTIONS: Final[dict[str, tuple[str, ...]]] = {
    "facts": _FACTS_ACTIONS,
    "entities": _ENTITIES_ACTIONS,
    "collections": (*_COLLECTIONS_ACTIONS, "create", "bulk"),
    "changes": ("manage",),
    "origin": ("override",),
}

_KIND_RE: Final = re.compile(r"[a-z][a-z0-9_]*", re.ASCII)
_TWO_LEVELS_WILDCARD: Final = "a facts prefix needs at least two levels before .*"
_TWO_LEVELS_FULL: Final = "a facts prefix without .* is a full predicate and needs at least two levels"


def _fail(text: object, rule: str) -> KnowledgeValidationError:
    shown = text if isinstance(text, str) and text else repr(text)
    return KnowledgeValidationError(f"{shown} : {rule}")


def _join(names: Iterable[str]) -> str:
    return ", ".join(names)


def _either(names: Iterable[str]) -> str:
    *rest, last = names
    return f"{', '.join(rest)} or {last}" if rest else last


def kind_problem(kind: object) -> str | None:
    """Why ``kind`` is not an entity kind (OD-K57), or ``None`` when it is one."""
    if not isinstance(kind, str) or not kind:
        return "an entity kind is required (for example person, org or place)"
    if kind == SELF:
        return "self is not an entity kind; facts about the user use facts.<action>:self:<prefix>"
    if not _KIND_RE.fullmatch(kind):
        return f"entity kind {kind!r} must be a lowercase ASCII letter followed by letters, digits or _"
    return None


def _subject_problem(subject: object) -> str | None:
    if subject == SELF:
        return None
    if not isinstance(subject, str) or not subject:
        return "a facts permission needs a subject: self or an entity kind such as person"
    problem = kind_problem(subject)
    return None if problem is None else f"subject {subject!r} is neither self nor an entity kind"


def _prefix_problem(base: str, *, wildcard: bool) -> str | None:
    """Check the prefix with any trailing ``.*`` already removed."""
    if "*" in base:
        return "* may only stand alone as the last level, after a dot (for example pref.food.*)"
    segments = base.split(".")
    for segment in segments:
        if not segment:
            return "a facts prefix has an empty level (two dots in a row, or a leading or trailing dot)"
        if not is_segment(segment):
            return f"level {segment!r} may only hold lowercase letters, digits or _"
    if len(segments) < 2:
        return _TWO_LEVELS_WILDCARD if wildcard else _TWO_LEVELS_FULL
    if segments[0] not in FIRST_LEVELS:
        return f"the first level must be one of {_join(FIRST_LEVELS)} (got {segments[0]!r})"
    return None


class Permission(ABC):
    """A parsed knowledge permission. Subclasses are frozen dataclasses; compare them by value."""

    __slots__ = ()

    @staticmethod
    def parse(text: str) -> Permission:
        """Parse one permission string.

        Raises:
            KnowledgeValidationError: the string is malformed; the message is
                ``<string> : <the rule it breaks>``.

        Example::

            >>> Permission.parse("facts.read:self:location.home.*")
            FactsPermission(action='read', subject='self', prefix='location.home', wildcard=True)
        """
        return _parse(text)

    @abstractmethod
    def __str__(self) -> str:
        """The canonical permission string."""


@dataclass(frozen=True, slots=True)
class FactsPermission(Permission):
    """``facts.<action>:<subject>:<prefix>`` (K-PERM-06/08/24).

    ``prefix`` never carries the ``.*``; ``wildcard`` says whether the string ended in one.
    """

    action: FactsAction
    subject: str
    prefix: str
    wildcard: bool

    def __post_init__(self) -> None:
        if self.action not in _FACTS_ACTIONS:
            raise _fail(str(self), f"a facts action is one of {_join(_FACTS_ACTIONS)}")
        problem = _subject_problem(self.subject) or _prefix_problem(self.prefix, wildcard=self.wildcard)
        if problem is not None:
            raise _fail(str(self), problem)

    @property
    def range(self) -> PredicateRange:
        """The predicates this permission's scope includes (its subject aside)."""
        return PredicateRange(self.prefix, self.wildcard)

    def __str__(self) -> str:
        return f"facts.{self.action}:{self.subject}:{self.prefix}{'.*' if self.wildcard else ''}"

    def covers_predicate(self, predicate: str) -> bool:
        """Whether this permission's scope includes ``predicate`` (OD-K11).

        ``a.b.*`` covers ``a.b`` and every ``a.b.…`` on whole levels; a full predicate covers only
        itself. The subject is not considered here.
        """
        return self.range.covers(predicate)

    def covers_facts(self, other: FactsPermission) -> bool:
        """Whether this permission's scope includes everything ``other``'s scope does (OD-K12).

        Only subject and prefix are compared, never the action, so the install check asks
        ``read.covers_facts(write)``. ``self`` and a kind are distinct subjects.
        """
        return self.subject == other.subject and self.range.includes(other.range)


@dataclass(frozen=True, slots=True)
class EntitiesPermission(Permission):
    """``entities.<action>:<kind>`` (K-PERM-09…11; a kind is required, D-04)."""

    action: EntitiesAction
    kind: str

    def __post_init__(self) -> None:
        if self.action not in _ENTITIES_ACTIONS:
            raise _fail(str(self), f"an entities action is one of {_join(_ENTITIES_ACTIONS)}")
        problem = kind_problem(self.kind)
        if problem is not None:
            raise _fail(str(self), problem)

    def __str__(self) -> str:
        return f"entities.{self.action}:{self.kind}"

    def allows(self, *, action: EntitiesAction, kind: str) -> bool:
        """Whether holding this grant allows ``action`` on entities of ``kind`` (OD-K27)."""
        if kind != self.kind:
            return False
        if action == self.action:
            return True
        return action == "resolve" and self.action in ("read", "write")


@dataclass(frozen=True, slots=True)
class CollectionsPermission(Permission):
    """``collections.<read|write>:<diary|keep|user-selected>`` (K-PERM-12…14)."""

    action: CollectionsAction
    target: CollectionTarget

    def __post_init__(self) -> None:
        if self.action not in _COLLECTIONS_ACTIONS:
            raise _fail(str(self), f"a scoped collections action is one of {_join(_COLLECTIONS_ACTIONS)}")
        if self.target not in COLLECTION_TARGETS:
            raise _fail(str(self), _target_problem(self.target))

    def __str__(self) -> str:
        return f"collections.{self.action}:{self.target}"

    def allows(self, *, action: CollectionsAction, target: CollectionTarget) -> bool:
        """Whether holding this grant allows ``action`` on ``target`` (write implies read, OD-K27)."""
        if target != self.target:
            return False
        return action == self.action or (action == "read" and self.action == "write")


@dataclass(frozen=True, slots=True)
class SimplePermission(Permission):
    """A permission without a scope: ``collections.create``, ``collections.bulk``,
    ``changes.manage`` or ``origin.override`` (K-PERM-15/17/18/19)."""

    name: SimpleName

    def __post_init__(self) -> None:
        if self.name not in SIMPLE_PERMISSIONS:
            raise _fail(self.name, f"not a permission without scope (expected {_join(SIMPLE_PERMISSIONS)})")

    def __str__(self) -> str:
        return self.name


def _target_problem(target: str) -> str:
    if not target:
        return f"a collections permission needs a target: {_join(COLLECTION_TARGETS)}"
    return (
        f"specific collection ids cannot be requested (got {target!r}); the target must be "
        f"{_either(COLLECTION_TARGETS)}, and the user ticks collections on the gem's page"
    )


def _scope_without_colon(text: str, scope: str, shape: str) -> None:
    if ":" in scope:
        raise _fail(text, f"too many ':' separators; the shape is {shape}")


def _parse(text: object) -> Permission:
    if not isinstance(text, str):
        raise _fail(text, "a permission must be a string")
    return _parse_text(text)


# Grants are read on every gem call (a revoke acts at once), but a string is parsed only once: the
# values are frozen, so sharing them is safe, and the set of strings a space uses is small.
@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Permission:
    if not text:
        raise _fail(text, "a permission string must not be empty")
    if any(ch.isspace() for ch in text):
        raise _fail(text, "a permission string must not contain whitespace")
    if text != text.lower():
        raise _fail(text, "permission strings are lowercase")
    head, colon, scope = text.partition(":")
    data_type, dot, action = head.partition(".")
    if data_type not in _ACTIONS:
        raise _fail(text, f"unknown data type {data_type!r} (expected one of {_join(_ACTIONS)})")
    if not dot or action not in _ACTIONS[data_type]:
        expected = _join(f"{data_type}.{a}" for a in _ACTIONS[data_type])
        got = f"unknown action {action!r}" if dot else "missing action"
        raise _fail(text, f"{got} for {data_type} (expected one of {expected})")

    if head in SIMPLE_PERMISSIONS:
        if colon:
            raise _fail(text, f"{head} takes no scope")
        return SimplePermission(head)

    if data_type == "facts":
        shape = f"{head}:<subject>:<prefix>"
        subject, colon2, prefix = scope.partition(":")
        if not colon or not colon2:
            raise _fail(text, f"a facts permission needs a subject and a prefix: {shape}")
        _scope_without_colon(text, prefix, shape)
        problem = _subject_problem(subject)
        if problem is None and not prefix:
            problem = "a facts permission needs a predicate prefix after the subject"
        if problem is None and prefix == "*":
            problem = _TWO_LEVELS_WILDCARD
        wildcard = prefix.endswith(".*")
        base = prefix[:-2] if wildcard else prefix
        if problem is None:
            problem = _prefix_problem(base, wildcard=wildcard)
        if problem is not None:
            raise _fail(text, problem)
        return FactsPermission(action, subject, base, wildcard)  # type: ignore[arg-type]

    if data_type == "entities":
        _scope_without_colon(text, scope, f"{head}:<kind>")
        problem = kind_problem(scope)
        if problem is not None:
            raise _fail(text, problem)
        return EntitiesPermission(action, scope)  # type: ignore[arg-type]

    # Only collections.read / collections.write remain: every other head is a simple permission.
    _scope_without_colon(text, scope, f"{head}:<target>")
    if scope not in COLLECTION_TARGETS:
        raise _fail(text, _target_problem(scope))
    return CollectionsPermission(action, scope)  # type: ignore[arg-type]


def narrowest_facts_permission(action: FactsAction, subject_kind: str, predicate: str) -> str:
    """The narrowest facts permission string allowing ``action`` on one predicate (OD-K06).

    Example::

        >>> narrowest_facts_permission("write", "self", "pref.food.rated")
        'facts.write:self:pref.food.rated'

    Raises:
        KnowledgeValidationError: the subject or predicate is malformed.
    """
    return str(FactsPermission(action, subject_kind, predicate, False))


@dataclass(frozen=True)
class PermissionSet:
    """The permissions a caller holds right now, answering the runtime's questions.

    Build it from granted values (``PermissionSet.of(["facts.read:self:location.home.*"])``). Every
    question is keyword-only, and unknown subjects, kinds or predicates simply match no grant.
    """

    permissions: frozenset[Permission] = frozenset()

    def __post_init__(self) -> None:
        stray = [p for p in self.permissions if not isinstance(p, Permission)]
        if stray:
            raise KnowledgeValidationError(
                f"a PermissionSet holds parsed Permission values, not {type(stray[0]).__name__}"
            )

    @classmethod
    def of(cls, items: Iterable[Permission | str]) -> PermissionSet:
        """Build a set from permission values or strings (strings are parsed)."""
        return cls(frozenset(item if isinstance(item, Permission) else Permission.parse(item) for item in items))

    def __iter__(self) -> Iterator[Permission]:
        return iter(sorted(self.permissions, key=str))

    def __len__(self) -> int:
        return len(self.permissions)

    def __contains__(self, item: object) -> bool:
        return item in self.permissions

    def strings(self) -> list[str]:
        """The canonical strings, sorted."""
        return sorted(str(p) for p in self.permissions)

    def _facts(self, action: FactsAction, subject_kind: str) -> list[FactsPermission]:
        return [
            p
            for p in self.permissions
            if isinstance(p, FactsPermission) and p.action == action and p.subject == subject_kind
        ]

    def can_read_fact(self, *, subject_kind: str, predicate: str) -> bool:
        """Whether some ``facts.read`` grant for ``subject_kind`` covers ``predicate``."""
        return any(p.covers_predicate(predicate) for p in self._facts("read", subject_kind))

    def can_write_fact(self, *, subject_kind: str, predicate: str) -> bool:
        """Whether some ``facts.write`` grant for ``subject_kind`` covers ``predicate``."""
        return any(p.covers_predicate(predicate) for p in self._facts("write", subject_kind))

    def fact_prefixes(self, *, action: FactsAction, subject_kind: str) -> list[PredicateRange]:
        """The predicate ranges granted for ``action`` on ``subject_kind``.

        Redundant ranges (included in another one) are dropped and the rest sorted; compile them
        into SQL with :meth:`PredicateRange.clause`.
        """
        grants = self._facts(action, subject_kind)
        kept = {p.range for p in grants if not any(q != p and q.covers_facts(p) for q in grants)}
        return sorted(kept)

    def readable_fact_prefixes(self, *, subject_kind: str) -> list[PredicateRange]:
        """:meth:`fact_prefixes` for reading: what a query may see about ``subject_kind``."""
        return self.fact_prefixes(action="read", subject_kind=subject_kind)

    def entities_allows(self, *, action: EntitiesAction, kind: str) -> bool:
        """Whether ``action`` on entities of ``kind`` is allowed, implications included."""
        if action not in _ENTITIES_ACTIONS:
            raise KnowledgeValidationError(f"unknown entities action {action!r}")
        return any(isinstance(p, EntitiesPermission) and p.allows(action=action, kind=kind) for p in self.permissions)

    def collections_allows(self, *, action: CollectionsAction, target: CollectionTarget) -> bool:
        """Whether ``action`` on the ``target`` class of collections is allowed (write implies read)."""
        if action not in _COLLECTIONS_ACTIONS:
            raise KnowledgeValidationError(f"unknown collections action {action!r}")
        return any(
            isinstance(p, CollectionsPermission) and p.allows(action=action, target=target) for p in self.permissions
        )

    def has(self, simple_name: SimpleName) -> bool:
        """Whether the scope-less permission ``simple_name`` is granted.

        Raises:
            KnowledgeValidationError: ``simple_name`` is not one of the scope-less permissions, so
                a typo can never read as "not granted".
        """
        if simple_name not in SIMPLE_PERMISSIONS:
            raise KnowledgeValidationError(
                f"{simple_name!r} is not a permission without scope (expected {_join(SIMPLE_PERMISSIONS)})"
            )
        return SimplePermission(simple_name) in self.permissions
