"""CSS syntax as a browser reads it, for the styles that decide what a page shows
(:mod:`notochord.extraction.css_rules`, :mod:`notochord.extraction.html_shown`).

Comments, strings (a quote left open ends at the line's end), escapes (``\\6c`` and ``\\l`` are both
``l``) and blocks nested in ``()``, ``[]`` and ``{}`` are skipped as CSS's own grammar skips them,
so a ``;`` or ``}`` inside a string or a bracket ends nothing. A declaration is ``name: value``
with an optional ``!important``; names are read in any case.

Every function makes one pass over the text it is given.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

__all__ = ["Declaration", "declaration_list", "scan", "strip_comments", "unescape"]

_CLOSER: Final = {"{": "}", "(": ")", "[": "]"}
_ESCAPE: Final = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|(.))", re.DOTALL)
_IMPORTANT: Final = re.compile(r"!\s*important\s*$", re.IGNORECASE)


class Declaration(NamedTuple):
    """One declaration: its name and value in lowercase, comments and escapes taken out."""

    name: str
    value: str
    important: bool


def _string_end(text: str, start: int, end: int) -> int:
    """The index just past the string opening at ``start``: its closing quote, or the line's end."""
    quote = text[start]
    i = start + 1
    while i < end:
        char = text[i]
        if char == quote:
            return i + 1
        if char == "\\":
            i += 2
            continue
        if char == "\n":
            return i
        i += 1
    return end


_SPECIAL: Final = "/\"'\\{}()[]"
_NEXT_SPECIAL: dict[str, re.Pattern[str]] = {}


def scan(text: str, start: int, end: int, stops: str) -> int:
    """The index of the first character of ``stops`` in ``text[start:end]`` that stands outside
    comments, strings and nested blocks, or ``end`` when there is none.

    A closing bracket of another kind than the open block's is an ordinary character, as in CSS.
    """
    jump = _NEXT_SPECIAL.get(stops)
    if jump is None:
        jump = _NEXT_SPECIAL[stops] = re.compile("[" + re.escape(_SPECIAL + stops) + "]")
    pending: list[str] = []
    i = start
    while i < end:
        found = jump.search(text, i, end)
        if found is None:
            return end
        i = found.start()
        char = text[i]
        if char == "/" and i + 1 < end and text[i + 1] == "*":
            close = text.find("*/", i + 2, end)
            i = end if close < 0 else close + 2
            continue
        if char in "\"'":
            i = _string_end(text, i, end)
            continue
        if char == "\\":
            i += 2
            continue
        if not pending and char in stops:
            return i
        if char in _CLOSER:
            pending.append(_CLOSER[char])
        elif pending and char == pending[-1]:
            pending.pop()
        i += 1
    return end


def strip_comments(text: str) -> str:
    """``text`` with each comment outside strings replaced by a space, which it is to CSS."""
    if "/*" not in text:
        return text
    parts: list[str] = []
    segment = i = 0
    end = len(text)
    while i < end:
        char = text[i]
        if char in "\"'":
            i = _string_end(text, i, end)
        elif char == "\\":
            i += 2
        elif char == "/" and i + 1 < end and text[i + 1] == "*":
            parts.append(text[segment:i])
            close = text.find("*/", i + 2)
            i = segment = end if close < 0 else close + 2
        else:
            i += 1
    parts.append(text[segment:])
    return " ".join(parts)


def _unescaped(match: re.Match[str]) -> str:
    digits, char = match.groups()
    if digits is None:
        return char
    code = int(digits, 16)
    return "\ufffd" if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)


def unescape(text: str) -> str:
    """``text`` with CSS escapes replaced by the characters they stand for."""
    return _ESCAPE.sub(_unescaped, text) if "\\" in text else text


def _declaration(text: str) -> Declaration | None:
    name, colon, value = strip_comments(text).partition(":")
    if not colon:
        return None
    value = unescape(value).strip().lower()
    important = _IMPORTANT.search(value)
    if important is not None:
        value = value[: important.start()].rstrip()
    return Declaration(unescape(name).strip().lower(), value, important is not None)


def declaration_list(
    text: str, start: int = 0, end: int | None = None
) -> tuple[list[Declaration], list[tuple[int, int, int]]]:
    """The declarations of ``text[start:end]`` in their order, and the rules nested among them (CSS
    nesting), each as the index of its selector, that just past its ``{`` and that of its ``}``."""
    stop = len(text) if end is None else end
    declarations: list[Declaration] = []
    nested: list[tuple[int, int, int]] = []
    i = start
    while i < stop:
        j = scan(text, i, stop, ";{")
        if j < stop and text[j] == "{":
            close = scan(text, j + 1, stop, "}")
            nested.append((i, j + 1, close))
            i = close + 1
            continue
        declaration = _declaration(text[i:j])
        if declaration is not None:
            declarations.append(declaration)
        i = j + 1
    return declarations, nested
