"""Plain arguments of the knowledge store's callers: checked for their type, and quoted back safely.

The host API (``space.user``, ``space.changes``) is called from Python with any value, and a gem's
``ctx.knowledge`` with any JSON. What cannot be an argument is refused here with a
:class:`~notochord.errors.KnowledgeValidationError` naming the argument, before anything is read or
written:

- a whole number is an ``int`` (never a ``bool``) within its bounds, and never beyond the stores'
  64-bit integers (PostgreSQL compares ``bigint`` and refuses a larger number as out of range);
- a text or flag is a ``str`` or ``bool``;
- an id of the wrong type, or beyond 64 bits, names no object: the look-up that asks :func:`as_id`
  reads it as not found, as it reads an id that names nothing (OD-K08).

:func:`shown` quotes a caller's value in a message: cut short, never recursing into deep nesting, and
never failing on what ``repr`` cannot render (an integer of thousands of digits). :func:`counted`
says a count with its noun in the singular or the plural.
"""

from __future__ import annotations

import reprlib

from notochord.errors import KnowledgeValidationError

__all__ = [
    "LARGEST_STORED",
    "as_id",
    "counted",
    "flag",
    "kind_of",
    "listed",
    "shown",
    "text_or_none",
    "whole_number",
]

LARGEST_STORED = 2**63 - 1
"""The largest integer either store holds or compares (SQLite ``INTEGER``, PostgreSQL ``bigint``)."""

_QUOTE = reprlib.Repr()
_QUOTE.maxlevel = 2
_QUOTE.maxstring = 60
_QUOTE.maxother = 60
_QUOTE.maxlong = 40


def shown(value: object) -> str:
    """``value`` as a message quotes it: its ``repr``, at most a short line, whatever ``value`` is."""
    try:
        return _QUOTE.repr(value)
    except Exception:  # a value whose repr fails is still named by its type
        return f"a value of type {type(value).__name__}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun`` as English says them: ``1 file``, ``0 files``, ``3 files``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def kind_of(value: object) -> str:
    """What kind of JSON value ``value`` is, in words for a refusal: ``true``, ``a number``, ``text``…"""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a value of type {type(value).__name__}"


def whole_number(what: str, value: object, *, minimum: int = 0, maximum: int = LARGEST_STORED) -> int:
    """``value`` when it is a whole number from ``minimum`` to ``maximum`` (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise KnowledgeValidationError(f"{what} must be a whole number, not {shown(value)}")
    if value < minimum or value > maximum:
        raise KnowledgeValidationError(f"{what} must be a whole number from {minimum} to {maximum}, not {shown(value)}")
    return value


def text_or_none(what: str, value: object) -> str | None:
    """``value`` when it is text or ``None``."""
    if value is not None and not isinstance(value, str):
        raise KnowledgeValidationError(f"{what} must be text, not {shown(value)}")
    return value


def flag(what: str, value: object) -> bool:
    """``value`` when it is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise KnowledgeValidationError(f"{what} must be true or false, not {shown(value)}")
    return value


def listed(what: str, value: object, *, of: str) -> list[object]:
    """``value`` when it is a list (or tuple) of ``of``."""
    if not isinstance(value, list | tuple):
        raise KnowledgeValidationError(f"{what} must be a list of {of}, not {shown(value)}")
    return list(value)


def as_id(value: object) -> int | None:
    """``value`` as an object id, or ``None`` when it cannot be one (which then names nothing)."""
    if isinstance(value, bool) or not isinstance(value, int) or not -LARGEST_STORED <= value <= LARGEST_STORED:
        return None
    return value
