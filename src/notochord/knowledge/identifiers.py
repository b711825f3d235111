"""Entity identifiers: the types, their normalisation and the matching order (OD-K26, OD-K57)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit, urlunsplit

from notochord.errors import KnowledgeValidationError
from notochord.knowledge.arguments import shown
from notochord.knowledge.quotas import check_length

__all__ = [
    "IDENTIFIER_TYPES",
    "MATCH_ORDER",
    "check_kind",
    "folded",
    "identifier_forms",
    "name_key",
    "normalize_identifier",
]

IDENTIFIER_TYPES: tuple[str, ...] = ("email", "phone", "domain", "url", "handle", "name")
"""In the order the source lists them (K-ENT-06)."""

MATCH_ORDER: tuple[str, ...] = ("email", "phone", "handle", "url", "domain", "name")
"""With several identifiers, the first type that finds an entity wins (OD-K26)."""

_KIND = re.compile(r"^[a-z][a-z0-9_]*$")
_HANDLE = re.compile(r"^[^\s:]+:[^\s]+$")


def check_kind(kind: str) -> str:
    """An entity kind is ``[a-z][a-z0-9_]*`` and never ``self`` (OD-K57)."""
    if not isinstance(kind, str) or not _KIND.match(kind) or kind == "self":
        raise KnowledgeValidationError(
            f"entity kind {shown(kind)} is malformed: use lowercase letters, digits and _ (e.g. person, org, place)"
        )
    check_length("entity kind", kind, 100)
    return kind


def folded(text: str) -> str:
    """``text`` as case-insensitive matching compares it: case-folded, in one Unicode form (NFC), so
    that ``é`` typed as one character or as ``e`` plus an accent is the same letter."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def name_key(text: str) -> str:
    """A name as it is matched: whitespace collapsed, then :func:`folded` (OD-K26)."""
    return folded(" ".join(text.split()))


def normalize_identifier(kind: str, value: str) -> str:
    """The form identifiers are matched on. Raises on values that cannot be an identifier of ``kind``.

    Every form is in NFC first: an address or name typed with decomposed accents (as some systems
    send them) is the same identifier as the composed one.
    """
    return unicodedata.normalize("NFC", _normalized(kind, value, composed=True))


def identifier_forms(kind: str, value: str) -> list[str]:
    """The stored forms that match ``value``: :func:`normalize_identifier`'s, and the one an older
    store recorded without composing accents first (the same text when ``value`` has none)."""
    forms = [normalize_identifier(kind, value)]
    legacy = _normalized(kind, value, composed=False)
    return forms if legacy in forms else [*forms, legacy]


def _normalized(kind: str, value: str, *, composed: bool) -> str:
    if not isinstance(kind, str) or kind not in IDENTIFIER_TYPES:
        raise KnowledgeValidationError(
            f"unknown identifier type {shown(kind)}: use one of {', '.join(IDENTIFIER_TYPES)}"
        )
    if not isinstance(value, str) or not value.strip():
        raise KnowledgeValidationError(f"{kind} identifier must be a non-empty string")
    check_length(f"{kind} identifier", value)
    text = unicodedata.normalize("NFC", value.strip()) if composed else value.strip()
    if kind == "email":
        local, _, host = text.rpartition("@")
        if not local or not host or any(c.isspace() for c in text):
            raise KnowledgeValidationError(
                f"email identifier {shown(value)} is not an email address (name@host, no spaces)"
            )
        return text.lower()
    if kind == "phone":
        digits = re.sub(r"\D", "", text)
        if not digits:
            raise KnowledgeValidationError(f"phone identifier {shown(value)} has no digits")
        return ("+" if text.startswith("+") else "") + digits
    if kind == "domain":
        domain = text.lower().rstrip(".")
        domain = domain.removeprefix("www.")
        if not domain or "/" in domain or " " in domain:
            raise KnowledgeValidationError(f"domain identifier {shown(value)} is not a domain name")
        return domain
    if kind == "url":
        parts = urlsplit(text)
        if not parts.scheme or not parts.netloc:
            raise KnowledgeValidationError(f"url identifier {shown(value)} needs a scheme and a host")
        rebuilt = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment))
        return rebuilt.rstrip("/")
    if kind == "handle":
        if not _HANDLE.match(text):
            raise KnowledgeValidationError(
                f"handle identifier {shown(value)} must be written platform:account, e.g. github:zhangsan"
            )
        return text.lower()
    return name_key(text) if composed else " ".join(text.split()).casefold()
