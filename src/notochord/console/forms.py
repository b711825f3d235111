"""The one check every state-changing request passes: its CSRF token (form field or htmx header).

The app installs :func:`verified_form` as a dependency of every route, so no route can forget it:
a ``POST`` without the session's token is refused (403) before the route runs, and changes nothing.
The sign-in form alone (:data:`SIGN_IN_PATH`), posted before any session exists, carries the
one-time sign-in token instead, which its route spends. A route refuses a malformed field the same
way, with a :class:`ConsoleRefusal` (400).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request

from notochord.console.auth import ConsoleKeys, Session
from notochord.console.i18n import text
from notochord.errors import KnowledgeValidationError

__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "SIGN_IN_PATH",
    "ConsoleRefusal",
    "FieldValueError",
    "session_of",
    "shown",
    "verified_form",
    "whole_number",
]

CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "x-csrf-token"
SIGN_IN_PATH: Final = "/login"
_MAX_FIELDS: Final = 200
_MAX_PART: Final = 1024 * 1024
_MAX_SHOWN: Final = 40
_MAX_DIGITS: Final = 19
"""Digits of the largest id the store holds (2**63 - 1); a longer number names nothing."""


class ConsoleRefusal(HTTPException):
    """A request the console refuses; ``detail`` is the key of the sentence shown to the user, and
    ``values`` fill its ``{name}`` placeholders."""

    def __init__(self, status_code: int, detail: str, **values: object) -> None:
        super().__init__(status_code, detail)
        self.values = values


class FieldValueError(KnowledgeValidationError):
    """A value in one of the console's own forms or addresses it cannot use: ``key`` is the sentence
    of :mod:`notochord.console.i18n` to show in the reader's language, ``values`` fill it; the
    message is the English sentence."""

    def __init__(self, key: str, **values: object) -> None:
        super().__init__(text(key, "en", **values), values={name: str(value) for name, value in values.items()})
        self.key = key


def whole_number(value: str) -> int | None:
    """``value`` (spaces around it aside) as a whole number, when it is at most 19 ASCII digits; else ``None``.

    ``str.isdigit`` alone also holds for "²" (which ``int()`` refuses) and "١" (which it reads as 1),
    and ``int()`` refuses text of more than 4300 digits.
    """
    digits = value.strip()
    if not digits.isascii() or not digits.isdigit() or len(digits) > _MAX_DIGITS:
        return None
    return int(digits)


def shown(value: str) -> str:
    """``value`` as a refusal quotes it: what the client sent, cut short, since it may be a megabyte."""
    return value if len(value) <= _MAX_SHOWN else value[:_MAX_SHOWN] + "…"


def session_of(request: Request) -> Session:
    session: Session | None = getattr(request.state, "console_session", None)
    if session is None:
        raise ConsoleRefusal(401, "signin_needed")
    return session


async def verified_form(request: Request) -> AsyncIterator[FormData]:
    """The request's form after its CSRF token was checked; empty for ``GET`` and ``HEAD``.

    Uploaded files in the form are closed once the route has answered.
    """
    if request.method in ("GET", "HEAD"):
        yield FormData()
        return
    if request.url.path == SIGN_IN_PATH:
        # The sign-in form has no session yet to bind a CSRF token to. The one-time token it
        # carries is its proof (the route spends it), and the guard has refused a post from
        # another site by its Origin and Sec-Fetch-Site, as it does for every form.
        try:
            form = await request.form(max_files=0, max_fields=_MAX_FIELDS, max_part_size=_MAX_PART)
        except HTTPException as exc:
            raise ConsoleRefusal(400, "refused_form") from exc
        try:
            yield form
        finally:
            await form.close()
        return
    keys: ConsoleKeys = request.app.state.console_keys
    session = session_of(request)
    try:
        form = await request.form(max_files=1, max_fields=_MAX_FIELDS, max_part_size=_MAX_PART)
    except HTTPException as exc:
        raise ConsoleRefusal(400, "refused_form") from exc
    try:
        given = request.headers.get(CSRF_HEADER)
        field = form.get(CSRF_FIELD)
        token = given if given is not None else (field if isinstance(field, str) else None)
        if not keys.csrf_ok(session, token):
            raise ConsoleRefusal(403, "refused_csrf")
        yield form
    finally:
        await form.close()
