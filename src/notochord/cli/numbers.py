"""Numbers on the command line, read in plain words.

The argument parser would read an ``int`` or ``float`` parameter with a data-validation library and
show its report ("Input should be a valid integer, unable to parse string as an integer"), and
would take any Unicode digits (``١٢`` as 12). These parsers read ASCII numbers only, check a range,
and refuse anything else as bad usage (exit code 2) naming the value and what is expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import typer

from notochord.knowledge.arguments import LARGEST_STORED, shown

__all__ = ["ID", "LIFETIME", "LIMIT", "LONGEST_TOKEN_LIFETIME", "PORT", "seconds", "whole_number"]

_WHOLE: Final = re.compile(r"[+-]?[0-9]+")


_MOST_DIGITS: Final = len(str(LARGEST_STORED))


def _too_large(number: str) -> str:
    return f"a number is too large: ids and whole numbers here are at most {LARGEST_STORED}, not {number}"


def whole_number(*, at_least: int | None = None, at_most: int | None = None) -> Callable[[str | int], int]:
    """A parser of an integer in ASCII digits, within ``[at_least, at_most]`` where given, and never
    beyond the 64-bit integers the stores hold."""

    def parse(value: str | int) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value  # a default, already a number
        elif isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
            sign = "-" if value.strip().startswith("-") else ""
            digits = value.strip().lstrip("+-").lstrip("0") or "0"
            if len(digits) > _MOST_DIGITS:
                # int() refuses thousands of digits with advice meant for programmers; none fits anyway
                raise typer.BadParameter(_too_large(sign + shown(digits).strip("'")))
            number = int(sign + digits)
        else:
            raise typer.BadParameter(f"{shown(value)} is not a whole number")
        if at_least is not None and number < at_least:
            raise typer.BadParameter(f"must be at least {at_least}, not {number}")
        if at_most is not None and number > at_most:
            raise typer.BadParameter(f"must be at most {at_most}, not {number}")
        if not -LARGEST_STORED <= number <= LARGEST_STORED:
            raise typer.BadParameter(_too_large(shown(number)))
        return number

    return parse


ID: Final = whole_number()
"""An id: any whole number (one that names nothing is "not found", exit code 3)."""
LIMIT: Final = whole_number(at_least=1)
"""How many at most: 0 or fewer would list nothing, and was once read as "all"."""
PORT: Final = whole_number(at_least=1, at_most=65535)
LONGEST_TOKEN_LIFETIME: Final = 365 * 24 * 3600
"""A year: a development token meant to outlive that is a credential nobody will remember to revoke."""
_ANY_LIFETIME: Final = whole_number(at_least=1)


def LIFETIME(value: str | int) -> int:  # noqa: N802 - a parser, named like the other parsers here
    """A lifetime in seconds, from 1 (0 or less would be over before it began) to a year."""
    too_long = f"a lifetime is at most {LONGEST_TOKEN_LIFETIME} seconds (a year), not {{}}"
    try:
        lifetime = _ANY_LIFETIME(value)
    except typer.BadParameter:
        if isinstance(value, str) and _WHOLE.fullmatch(value.strip()) and not value.strip().startswith("-"):
            # beyond the stores' integers is beyond a year too: the year is the limit worth naming
            raise typer.BadParameter(too_long.format(shown(value.strip()))) from None
        raise
    if lifetime > LONGEST_TOKEN_LIFETIME:
        raise typer.BadParameter(too_long.format(lifetime))
    return lifetime


def seconds(value: str | float) -> float:
    """A number of seconds in ASCII (``90``, ``2.5``). Its range, NaN and infinity included, is the
    command's to check, so that the refusal can say what the range is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.isascii():
        try:
            return float(value)
        except ValueError:
            pass
    raise typer.BadParameter(f"{shown(value)} is not a number of seconds (such as 90 or 2.5)")
