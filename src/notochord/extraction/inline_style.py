"""The value an inline ``style`` attribute gives one property, for a DOCX's VML shapes
(:mod:`notochord.extraction.docx_drawing`). HTML pages are read by the fuller
:mod:`notochord.extraction.css_syntax`, which also knows strings, comments and escapes.

The declarations are read as a browser reads them: property names in any case, the last
declaration of a property winning, and one marked ``!important`` winning over those that are not.
"""

from __future__ import annotations

__all__ = ["declared_style"]


def declared_style(style: str, name: str) -> str | None:
    """The value the inline ``style`` gives the property ``name`` (lowercase, without
    ``!important``), or None when it gives none."""
    value: str | None = None
    important = False
    for declaration in style.split(";"):
        key, colon, given = declaration.partition(":")
        if not colon or key.strip().lower() != name:
            continue
        given = given.strip().lower()
        marked = False
        if given.endswith("important"):
            head = given[: -len("important")].rstrip()
            if head.endswith("!"):
                given, marked = head[:-1].rstrip(), True
        if marked or not important:
            value, important = given, marked
    return value
