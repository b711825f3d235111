"""The one permission question a gem's call asks: may this caller do ``action`` on ``target``?

Every check of the gem API goes through :func:`decide` (which answers with a :class:`Decision`) or
:func:`require` (which raises the refusal). A refusal names the narrowest permission that would
allow the call (OD-K06): ``facts.write:self:pref.food.rated`` for one predicate, ``entities.read:
person`` for a kind, ``collections.write:diary`` for where a collection sits. The callers never look
inside a :class:`~notochord.access.permissions.PermissionSet` themselves.

Targets by action:

- ``facts.read`` / ``facts.write``: a :class:`FactSlot` (the subject's kind and the predicate);
- ``entities.resolve`` / ``entities.read`` / ``entities.write``: a :class:`Kind`;
- ``collections.read`` / ``collections.write``: an :class:`InCollection` (the gem's reach and the
  collection);
- ``collections.create``, ``collections.bulk``, ``changes.manage``, ``origin.override``: none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

from notochord.access.permissions import PermissionSet, SimpleName, narrowest_facts_permission
from notochord.access.scope import CollectionAccess, collection_permission
from notochord.errors import KnowledgePermissionError, KnowledgeValidationError
from notochord.knowledge.collections import CollectionTree
from notochord.knowledge.predicates import PredicateRange
from notochord.knowledge.quotas import DailyLimits

__all__ = [
    "ACTIONS",
    "ALLOWED",
    "Action",
    "Decision",
    "FactSlot",
    "InCollection",
    "Kind",
    "daily_limits",
    "decide",
    "readable_ranges",
    "require",
    "require_own_or_manage",
]

Action = Literal[
    "facts.read",
    "facts.write",
    "entities.resolve",
    "entities.read",
    "entities.write",
    "collections.read",
    "collections.write",
    "collections.create",
    "collections.bulk",
    "changes.manage",
    "origin.override",
]
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)


@dataclass(frozen=True, slots=True)
class FactSlot:
    """A fact's place: the kind of its subject (``self`` for the user) and its predicate."""

    subject_kind: str
    predicate: str


@dataclass(frozen=True, slots=True)
class Kind:
    """Entities of one kind."""

    kind: str


@dataclass(frozen=True, slots=True)
class InCollection:
    """One collection, with the reach the gem has in the tree it sits in."""

    tree: CollectionTree
    reach: CollectionAccess
    collection_id: int


Target = FactSlot | Kind | InCollection | None


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer: allowed, or refused for want of ``missing`` (the narrowest permission)."""

    missing: str | None = None

    @property
    def allowed(self) -> bool:
        return self.missing is None

    def require(self) -> None:
        """Raise the refusal when not allowed."""
        if self.missing is not None:
            raise KnowledgePermissionError(self.missing)


ALLOWED: Final = Decision()


def _expect(action: Action, target: Target, kind: type[object] | None) -> None:
    if (kind is None and target is not None) or (kind is not None and not isinstance(target, kind)):
        wanted = "no target" if kind is None else f"a {kind.__name__} target"
        raise KnowledgeValidationError(f"the permission question {action} takes {wanted}")


def decide(grants: PermissionSet, *, action: Action, target: Target = None) -> Decision:
    """Whether ``grants`` allow ``action`` on ``target``; see the module for which target goes with which action."""
    if action in ("facts.read", "facts.write"):
        _expect(action, target, FactSlot)
        assert isinstance(target, FactSlot)
        verb: Literal["read", "write"] = "read" if action == "facts.read" else "write"
        covered = (
            grants.can_read_fact(subject_kind=target.subject_kind, predicate=target.predicate)
            if verb == "read"
            else grants.can_write_fact(subject_kind=target.subject_kind, predicate=target.predicate)
        )
        return ALLOWED if covered else Decision(narrowest_facts_permission(verb, target.subject_kind, target.predicate))
    if action in ("entities.resolve", "entities.read", "entities.write"):
        _expect(action, target, Kind)
        assert isinstance(target, Kind)
        verb_e: Literal["resolve", "read", "write"] = action.removeprefix("entities.")  # type: ignore[assignment]
        if grants.entities_allows(action=verb_e, kind=target.kind):
            return ALLOWED
        return Decision(f"{action}:{target.kind}")
    if action in ("collections.read", "collections.write"):
        _expect(action, target, InCollection)
        assert isinstance(target, InCollection)
        reach = target.reach.readable if action == "collections.read" else target.reach.writable
        if target.collection_id in reach:
            return ALLOWED
        return Decision(collection_permission(target.tree, target.collection_id, action.removeprefix("collections.")))
    _expect(action, target, None)
    simple: SimpleName = action  # type: ignore[assignment]
    return ALLOWED if grants.has(simple) else Decision(simple)


def require(grants: PermissionSet, *, action: Action, target: Target = None) -> None:
    """:func:`decide`, raising ``lacks knowledge permission <missing>`` when refused."""
    decide(grants, action=action, target=target).require()


def require_own_or_manage(grants: PermissionSet, *, writer: str, actor: str) -> None:
    """Acting on what another writer wrote also needs ``changes.manage`` (K-PERM-17)."""
    if writer != actor:
        require(grants, action="changes.manage")


def readable_ranges(grants: PermissionSet, *, subject_kind: str) -> list[PredicateRange]:
    """The predicate ranges a query about ``subject_kind`` may see (compiled into its SQL)."""
    return grants.readable_fact_prefixes(subject_kind=subject_kind)


def daily_limits(grants: PermissionSet) -> DailyLimits:
    """The gem's daily write quota: larger with ``collections.bulk`` (K-PERM-19)."""
    return DailyLimits.for_writer(bulk=decide(grants, action="collections.bulk").allowed)
