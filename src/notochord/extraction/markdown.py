"""The title and body text of a Markdown file.

- Front matter (a block between ``---`` lines at the very start whose first line is a ``key:``
  entry, as Jekyll, Hugo and Obsidian write it) is metadata, not body text: it is left out of the
  text, and its ``title:`` is the document's title. A ``---`` rule above a paragraph is no front
  matter and stays.
- HTML comments (``<!-- … -->``, on lines of their own or within a line) are notes to the file's
  editors that a Markdown viewer never shows: they are left out of the text. In fenced code blocks
  and code spans they are shown as written, and so kept; a ``<!--`` that nothing closes is text.
  (Indented code blocks are not told apart: a comment in one is left out too.)
- Without a front-matter title, the title is the first level-one ATX heading (``# Title``, closing
  ``#`` marks dropped) outside fenced code blocks, where ``# `` starts a shell comment, and outside
  comments.
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
# what decides whether a comment opener is one: a fence at a line's start, a run of backticks (a
# code span's delimiter), a comment opener, and a blank line (which ends any code span)
_TOKEN: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})|(`+)|(<!--)|\n[ \t]*\n", re.MULTILINE)


def read_markdown(text: str) -> tuple[str | None, str]:
    """The title of the Markdown ``text`` (None without one) and its body without front matter."""
    front_title, body = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    body = _without_comments(body)
    return front_title or _first_heading(body), body


def _without_comments(text: str) -> str:
    """``text`` without the HTML comments that stand outside code, in one pass over it."""
    last = text.rfind("<!--")
    if last < 0:
        return text
    kept: list[str] = []
    fence: str | None = None
    span = 0  # the length of the open code span's backtick run; 0 outside one
    copied = 0  # where the text not yet copied to ``kept`` starts
    at = 0
    while (token := _TOKEN.search(text, at, last + 4)) is not None:  # nothing after the last opener matters
        at = token.end()
        fence_mark, ticks, opener = token.group(1, 2, 3)
        if fence is not None:
            if fence_mark and fence_mark[0] == fence[0] and len(fence_mark) >= len(fence):
                line_end = text.find("\n", at)
                if not (text[at:] if line_end < 0 else text[at:line_end]).strip():  # a closing fence
                    fence = None
        elif fence_mark and not span:
            fence = fence_mark
        elif ticks or fence_mark:
            run = len(ticks or fence_mark)
            span = run if not span else (0 if run == span else span)
        elif opener is None:  # a blank line: a paragraph, and any code span in it, ends
            span = 0
        elif not span:
            end = text.find("-->", at)
            if end < 0:  # nothing closes it, nor any opener after it
                break
            kept.append(text[copied : token.start()])
            copied = at = end + 3
    kept.append(text[copied:])
    return "".join(kept)


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
