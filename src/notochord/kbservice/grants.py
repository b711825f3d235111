"""Per-resource grants: ``view``, ``edit`` or ``delete`` for one user on one knowledge base or agent.

Rules (OD-B10 as overridden):

- One row per (resource, user) holding the highest level; ``delete`` ⊇ ``edit`` ⊇ ``view``.
- A grant lives in the space of the resource's organization, so it can only ever concern that
  organization's resources; the policy hides other organizations' resources before grants count.
- Listing, setting and removing grants need admin or higher in the resource's organization (or a
  superadmin). Removing a grant that does not exist succeeds (idempotent).
- A knowledge base's grants are removed with it; a soft-deleted agent's grants stay with the row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from notochord.db.schema import kb_grants
from notochord.kbservice.actors import Actor
from notochord.kbservice.errors import KbNotFoundError, KbValidationError
from notochord.kbservice.policy import Action, Level, Resource, ResourceType, authorize
from notochord.kbservice.spaces import Directory, Found, require_live
from notochord.kbservice.validation import JsonBody, parse_uuid

__all__ = ["Grant", "Grants", "check", "find", "grant_level", "locate", "locating"]

_MAX_USER_ID = 200


@dataclass(frozen=True)
class Grant:
    resource_type: str
    resource_id: str
    user_id: str
    permission: str
    granted_by: str
    granted_at: str


def _grant(row: Any) -> Grant:
    return Grant(
        resource_type=row.resource_type,
        resource_id=row.resource_id,
        user_id=row.user_id,
        permission=row.permission,
        granted_by=row.granted_by,
        granted_at=row.granted_at,
    )


def grant_level(conn: sa.Connection, *, type: ResourceType, resource_id: str, user_id: str) -> Level:
    """The level granted to ``user_id`` on the resource (``Level.NONE`` when there is no grant)."""
    value = conn.execute(
        sa.select(kb_grants.c.permission).where(
            kb_grants.c.resource_type == str(type),
            kb_grants.c.resource_id == resource_id,
            kb_grants.c.user_id == user_id,
        )
    ).scalar_one_or_none()
    return Level.parse(value) or Level.NONE


def find(
    directory: Directory, *, actor: Actor, type: ResourceType, resource_id: object, with_grant: bool = False
) -> tuple[Found, Resource]:
    """Find a live resource ``actor`` may address, without asking about permissions yet.

    With ``with_grant`` the actor's grant on it is read in the same transaction, for :func:`check`.

    Raises:
        KbNotFoundError: malformed id, missing, soft-deleted, or in an organization out of reach.
    """
    canonical = parse_uuid(resource_id, what=type.noun)
    found = directory.find(actor=actor, type=type, resource_id=canonical, with_grant=with_grant)
    if found is None:
        raise KbNotFoundError(type.noun)
    return found, Resource(type, canonical, found.row.organization_id)


def check(found: Found, resource: Resource, *, actor: Actor, action: Action) -> None:
    """Ask the one permission question about a found resource, with the actor's grant on it.

    The grant read with the resource is used when it is this actor's; otherwise it is read now.

    Raises:
        KbNotFoundError: the resource is hidden from ``actor``.
        KbForbiddenError: visible, but ``actor`` may not perform ``action``.
    """
    if found.grant is not None and found.grant[0] == actor.user_id:
        level = Level.parse(found.grant[1]) or Level.NONE
    else:
        with found.store.read() as conn:
            level = grant_level(conn, type=resource.type, resource_id=resource.id, user_id=actor.user_id)
    authorize(actor=actor, action=action, target=resource, grant=level)


def locate(
    directory: Directory, *, actor: Actor, type: ResourceType, resource_id: object, action: Action
) -> tuple[Found, Resource]:
    """:func:`find`, then :func:`check`: 404 before 403 (OD-B16), the row and the grant read in one snapshot."""
    found, resource = find(directory, actor=actor, type=type, resource_id=resource_id, with_grant=True)
    check(found, resource, actor=actor, action=action)
    return found, resource


@contextlib.contextmanager
def locating(
    directory: Directory, *, actor: Actor, type: ResourceType, resource_id: object, action: Action
) -> Iterator[tuple[Found, Resource, sa.Connection]]:
    """:func:`locate`, holding the read transaction of the check open for the ``with`` block: what the
    caller reads next is read in the snapshot the permission question was answered in."""
    canonical = parse_uuid(resource_id, what=type.noun)
    with directory.reading(actor=actor, type=type, resource_id=canonical) as (found, conn):
        resource = Resource(type, canonical, found.row.organization_id)
        check(found, resource, actor=actor, action=action)
        yield found, resource, conn


def _user_id(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_USER_ID or value != value.strip():
        raise KbValidationError("a user id is a non-empty string of at most 200 characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise KbValidationError("a user id may not hold control characters (such as NUL) or lone surrogates")
    return value


class Grants:
    """The admin side of grants."""

    def __init__(self, directory: Directory) -> None:
        self._directory = directory

    def list(self, *, actor: Actor, type: ResourceType, resource_id: object) -> list[Grant]:
        found, resource = locate(
            self._directory, actor=actor, type=type, resource_id=resource_id, action=Action.MANAGE_GRANTS
        )
        with found.store.read() as conn:
            rows = conn.execute(
                sa.select(kb_grants)
                .where(kb_grants.c.resource_type == str(type), kb_grants.c.resource_id == resource.id)
                .order_by(kb_grants.c.user_id)
            ).all()
        return [_grant(r) for r in rows]

    def put(self, *, actor: Actor, type: ResourceType, resource_id: object, user_id: object, body: JsonBody) -> Grant:
        """Set ``user_id``'s level on the resource to the body's ``permission``."""
        found, resource = locate(
            self._directory, actor=actor, type=type, resource_id=resource_id, action=Action.MANAGE_GRANTS
        )
        grantee = _user_id(user_id)
        level = Level.parse(body.object().get("permission"))
        if level is None or level is Level.NONE:
            raise KbValidationError("permission must be one of view, edit, delete")
        with found.store.write() as conn:
            require_live(conn, type=type, resource_id=resource.id)
            now = found.store.now()
            key = (
                kb_grants.c.resource_type == str(type),
                kb_grants.c.resource_id == resource.id,
                kb_grants.c.user_id == grantee,
            )
            conn.execute(sa.delete(kb_grants).where(*key))
            conn.execute(
                sa.insert(kb_grants).values(
                    resource_type=str(type),
                    resource_id=resource.id,
                    user_id=grantee,
                    permission=str(level),
                    granted_by=actor.user_id,
                    granted_at=now,
                )
            )
            return _grant(conn.execute(sa.select(kb_grants).where(*key)).one())

    def delete(self, *, actor: Actor, type: ResourceType, resource_id: object, user_id: object) -> None:
        found, resource = locate(
            self._directory, actor=actor, type=type, resource_id=resource_id, action=Action.MANAGE_GRANTS
        )
        grantee = _user_id(user_id)
        with found.store.write() as conn:
            conn.execute(
                sa.delete(kb_grants).where(
                    kb_grants.c.resource_type == str(type),
                    kb_grants.c.resource_id == resource.id,
                    kb_grants.c.user_id == grantee,
                )
            )
