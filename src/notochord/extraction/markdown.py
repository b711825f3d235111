"""The title and body text of a Markdown file.

- Front matter (a block between ``---`` lines at the very start whose first line is a ``key:``
  entry, as Jekyll, Hugo and Obsidian write it) is metadata, not body text: it is left out of the
  text, and its ``title:`` is the document's title. A ``---`` rule above a paragraph is no front
  matter and stays.
- Without a front-matter title, the title is the first level-one ATX heading (``# Title``, closing
  ``#`` marks dropped) outside fenced code blocks, where ``# `` starts a shell comment.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["read_markdown"]

_FRONT_MATTER_LINES: Final = 500
_KEY: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ -]*:(\s|$)")
_TITLE: Final = re.compile(r"^title:\s*(.*?)\s*$", re.IGNORECASE)
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING: Final = re.compile(r"^ {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


def read_markdown(text: str) -> tuple[str | None, str]:
    """The title of the Markdown ``text`` (None without one) and its body without front matter."""
    front_title, body = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    return front_title or _first_heading(body), body


def _front_matter(text: str) -> tuple[str | None, str]:
    lines = text.split("\n", _FRONT_MATTER_LINES + 1)
    if lines[0].rstrip() != "---" or len(lines) < 3 or _KEY.match(lines[1]) is None:
        return None, text
    for end in range(2, min(len(lines), _FRONT_MATTER_LINES + 1)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return None, text
    title = None
    for line in lines[1:end]:
        found = _TITLE.match(line)
        if found is not None:
            title = _unquoted(found.group(1)) or None
            break
    return title, "\n".join(lines[end + 1 :])


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _first_heading(text: str) -> str | None:
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened is not None and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened is not None:
            fence = opened.group(1)
            continue
        heading = _HEADING.match(line)
        if heading is not None and heading.group(1).strip():
            return heading.group(1).strip()
    return None
