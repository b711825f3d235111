"""Who calls the knowledge-base service: a typed actor built from verified claims.

Rules:

- ``sub`` is the user id, ``org`` (or ``organization_id``, the gateway's name) the organization id;
  both are required. An organization id must be a space name: 1-63 lowercase letters, digits,
  ``-`` or ``_`` (UUIDs qualify). If both spellings are present they must agree.
- ``platform_role`` is ``superadmin`` or absent; any other value means no platform role.
- ``org_role`` is one of ``owner``, ``admin``, ``member``, ``viewer``; anything else (or absent) means
  no organization role, which is refused by every check that needs one (OD-B08).
- The user id and the email are written into grants and audit entries, so neither may hold a control
  character (NUL among them) or a lone surrogate: such a token names no one a grant could name, and
  is refused like a malformed one.
- Claims are validated here, once; everything downstream works with :class:`Actor` values.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from notochord.kbservice.errors import KbAuthenticationError

__all__ = ["ORG_ID", "Actor", "OrgRole", "actor_from_claims"]

ORG_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_MAX_USER_ID = 200
_MAX_EMAIL = 320
_UNWRITABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


class OrgRole(enum.IntEnum):
    """Organization roles, ordered so that a higher role compares greater (KB-GEN-08)."""

    VIEWER = 1
    MEMBER = 2
    ADMIN = 3
    OWNER = 4

    @classmethod
    def parse(cls, value: object) -> OrgRole | None:
        if isinstance(value, str) and value.upper() in cls.__members__ and value == value.lower():
            return cls[value.upper()]
        return None

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Actor:
    """An authenticated caller of the service."""

    user_id: str
    organization_id: str
    email: str | None
    is_superadmin: bool
    org_role: OrgRole | None

    def __post_init__(self) -> None:
        if not self.user_id or len(self.user_id) > _MAX_USER_ID:
            raise KbAuthenticationError("the user id is missing or longer than 200 characters")
        if not _writable(self.user_id):
            raise KbAuthenticationError(
                "the user id (claim sub) may not hold control characters (such as NUL) or lone surrogates; "
                "ask for a token that names the user plainly"
            )
        if self.email is not None and not _writable(self.email):
            raise KbAuthenticationError(
                "the email claim may not hold control characters (such as NUL) or lone surrogates; "
                "ask for a token without it or with a plain address"
            )
        if not ORG_ID.match(self.organization_id):
            raise KbAuthenticationError("the organization id is malformed: use 1-63 lowercase letters, digits, - or _")


def _writable(text: str) -> bool:
    """Whether ``text`` holds no C0 control character, DEL or lone surrogate."""
    return _UNWRITABLE.search(text) is None


def _text(claims: Mapping[str, object], name: str) -> str | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise KbAuthenticationError(f"the claim {name} must be a string")
    return value


def actor_from_claims(claims: Mapping[str, object]) -> Actor:
    """Build an :class:`Actor` from verified token claims or trusted gateway headers.

    Raises:
        KbAuthenticationError: the user id or organization id is missing or malformed.
    """
    user_id = _text(claims, "sub")
    org = _text(claims, "org")
    org_alias = _text(claims, "organization_id")
    if org is not None and org_alias is not None and org != org_alias:
        raise KbAuthenticationError("the claims org and organization_id disagree")
    organization_id = org if org is not None else org_alias
    if not user_id:
        raise KbAuthenticationError("the token names no user (claim sub)")
    if not organization_id:
        raise KbAuthenticationError("the token names no organization (claim org)")
    email = _text(claims, "email")
    if email is not None and len(email) > _MAX_EMAIL:
        raise KbAuthenticationError("the email claim is longer than 320 characters")
    return Actor(
        user_id=user_id,
        organization_id=organization_id,
        email=email or None,
        is_superadmin=claims.get("platform_role") == "superadmin",
        org_role=OrgRole.parse(claims.get("org_role")),
    )
