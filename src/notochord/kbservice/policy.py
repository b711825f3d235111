"""The one permission question of the knowledge-base service: may this actor do this to that?

Every entry point asks :func:`decide` (or :func:`authorize`, which raises) with a typed actor, an
action and a target; nothing else in the service compares roles. The rules, in evaluation order:

1. **Visibility** (OD-B13): a target of another organization is *hidden* (404, indistinguishable from
   a missing one) unless the actor is a platform superadmin.
2. **Superadmin** (KB-GEN-09): a platform superadmin passes every check.
3. **Organization actions**: listing needs any organization role (OD-B08); creating needs member or
   higher (KB-CRT-03); managing grants and reading the audit log need admin or higher (OD-B10 as
   overridden).
4. **Resource actions** (KB-GEN-10, OD-B09, OD-B10): the actor's level on a resource is the higher of
   what the organization role gives (owner, admin, member → ``delete``; viewer → ``view``; none →
   nothing) and the actor's grant on that resource, where ``delete`` ⊇ ``edit`` ⊇ ``view``. Grants are
   read from the resource's own organization, so a grant on another organization's resource never
   reaches this point (rule 1 hides it first). Each resource action needs one level: reading a
   knowledge base's documents, searching it and retrieving through an agent need ``view``; adding
   and removing documents need ``edit`` on the knowledge base (OD-B07).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from notochord.kbservice.actors import Actor, OrgRole
from notochord.kbservice.errors import KbForbiddenError, KbNotFoundError

__all__ = [
    "Action",
    "Decision",
    "Level",
    "OrgScope",
    "Outcome",
    "Resource",
    "ResourceType",
    "authorize",
    "decide",
]


class Level(enum.IntEnum):
    """A permission level on one resource; a higher level includes the lower ones."""

    NONE = 0
    VIEW = 1
    EDIT = 2
    DELETE = 3

    @classmethod
    def parse(cls, value: object) -> Level | None:
        """``'view'``, ``'edit'`` or ``'delete'`` → the level; anything else → ``None``."""
        if isinstance(value, str) and value in {"view", "edit", "delete"}:
            return cls[value.upper()]
        return None

    def __str__(self) -> str:
        return self.name.lower()


class ResourceType(enum.StrEnum):
    KB = "kb"
    AGENT = "agent"

    @property
    def noun(self) -> str:
        return "knowledge base" if self is ResourceType.KB else "agent"


class Action(enum.Enum):
    LIST = "list"
    CREATE = "create"
    READ_AUDIT = "read_audit"
    MANAGE_GRANTS = "manage_grants"
    VIEW = "view"
    EDIT = "edit"
    DELETE = "delete"
    READ_DOCUMENTS = "read_documents"
    SEARCH = "search"
    RETRIEVE = "retrieve"
    ADD_DOCUMENT = "add_document"
    REMOVE_DOCUMENT = "remove_document"


# Reading a knowledge base's documents, searching it and retrieving through an agent are views;
# adding and removing documents are edits of the knowledge base (OD-B07).
_RESOURCE_LEVEL = {
    Action.VIEW: Level.VIEW,
    Action.EDIT: Level.EDIT,
    Action.DELETE: Level.DELETE,
    Action.READ_DOCUMENTS: Level.VIEW,
    Action.SEARCH: Level.VIEW,
    Action.RETRIEVE: Level.VIEW,
    Action.ADD_DOCUMENT: Level.EDIT,
    Action.REMOVE_DOCUMENT: Level.EDIT,
}
_ORG_MINIMUM = {
    Action.CREATE: (OrgRole.MEMBER, "Requires member role or higher"),
    Action.READ_AUDIT: (OrgRole.ADMIN, "Requires admin role or higher"),
    Action.MANAGE_GRANTS: (OrgRole.ADMIN, "Requires admin role or higher"),
    Action.LIST: (OrgRole.VIEWER, "Requires an organization role (viewer or higher)"),
}


@dataclass(frozen=True)
class Resource:
    """A knowledge base or an agent, with the organization that owns it."""

    type: ResourceType
    id: str
    organization_id: str


@dataclass(frozen=True)
class OrgScope:
    """An organization as a whole: the target of listing, creating and reading the audit log."""

    organization_id: str


class Outcome(enum.Enum):
    ALLOW = "allow"
    FORBIDDEN = "forbidden"
    HIDDEN = "hidden"


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    reason: str

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOW


_ALLOW = Decision(Outcome.ALLOW, "allowed")
_HIDDEN = Decision(Outcome.HIDDEN, "not found")


def _role_level(role: OrgRole | None) -> Level:
    if role is None:
        return Level.NONE
    return Level.VIEW if role is OrgRole.VIEWER else Level.DELETE


def decide(*, actor: Actor, action: Action, target: Resource | OrgScope, grant: Level = Level.NONE) -> Decision:
    """Answer whether ``actor`` may perform ``action`` on ``target``.

    Args:
        actor: the authenticated caller.
        action: what the caller wants to do.
        target: a resource (with its owning organization) or an organization as a whole.
        grant: the actor's grant on ``target``, read from the target's organization.
    """
    if target.organization_id != actor.organization_id and not actor.is_superadmin:
        return _HIDDEN
    if actor.is_superadmin:
        return _ALLOW
    if action in _ORG_MINIMUM:
        minimum, reason = _ORG_MINIMUM[action]
        if actor.org_role is None or actor.org_role < minimum:
            return Decision(Outcome.FORBIDDEN, reason)
        return _ALLOW
    if not isinstance(target, Resource):
        raise TypeError(f"{action} needs a resource target")
    needed = _RESOURCE_LEVEL[action]
    if max(_role_level(actor.org_role), grant) >= needed:
        return _ALLOW
    return Decision(Outcome.FORBIDDEN, f"Requires {needed} permission on this {target.type.noun}")


def authorize(*, actor: Actor, action: Action, target: Resource | OrgScope, grant: Level = Level.NONE) -> None:
    """Like :func:`decide`, but raise unless the action is allowed.

    Raises:
        KbNotFoundError: the target is hidden from the actor.
        KbForbiddenError: the target is visible but the actor lacks the role or grant.
    """
    decision = decide(actor=actor, action=action, target=target, grant=grant)
    if decision.outcome is Outcome.HIDDEN:
        raise KbNotFoundError(target.type.noun if isinstance(target, Resource) else "organization")
    if decision.outcome is Outcome.FORBIDDEN:
        raise KbForbiddenError(decision.reason)
