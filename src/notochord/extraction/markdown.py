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
- The file is read in the calling process, without a reader's deadline
  (:mod:`notochord.extraction.isolated`), so every step is linear in its length, whatever its lines
  hold: no pattern here may backtrack over a run it has already matched (a heading line of a
  million spaces once cost hours), and the comment scan visits each token once.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["read_markdown"]

_FRONT_MATTER_LINES: Final = 500
_KEY: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ -]*:(\s|$)")
# the lines the title is looked for on: a fence's opening or closing line, or a level-one heading's
_TITLE_LINE: Final = re.compile(r"^ {0,3}(?:(`{3,}|~{3,})|#[ \t])", re.MULTILINE)
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
    stop = last + 4  # nothing after the last opener matters
    kept: list[str] = []
    fence: str | None = None
    span = 0  # the length of the open code span's backtick run; 0 outside one
    copied = 0  # where the text not yet copied to ``kept`` starts
    tokens = _TOKEN.finditer(text, 0, stop)
    while (token := next(tokens, None)) is not None:
        kind = token.lastindex  # 1: a fence mark, 2: a backtick run, 3: an opener, None: a blank line
        if fence is not None:
            if kind == 1 and _closes(fence, token.group(1), text, token.end()):
                fence = None
        elif kind == 1 and not span:
            fence = token.group(1)
        elif kind is None:  # a paragraph, and any code span in it, ends
            span = 0
        elif kind != 3:
            run = token.end() - token.start()
            span = run if not span else (0 if run == span else span)
        elif not span:
            end = text.find("-->", token.end())
            if end < 0:  # nothing closes it, nor any opener after it
                break
            kept.append(text[copied : token.start()])
            copied = end + 3
            tokens = _TOKEN.finditer(text, copied, stop)
    kept.append(text[copied:])
    return "".join(kept)


def _closes(fence: str, mark: str, text: str, after: int) -> bool:
    """Whether ``mark``, at a line's start with ``after`` just past it, closes the fence ``fence``:
    the same character, at least as many, and nothing but blanks after it on its line."""
    if mark[0] != fence[0] or len(mark) < len(fence):
        return False
    line_end = text.find("\n", after)
    return not (text[after:] if line_end < 0 else text[after:line_end]).strip()


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
        if line[:6].lower() == "title:":
            title = _unquoted(line[6:].strip()) or None
            break
    return title, "\n".join(lines[end + 1 :])


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _first_heading(text: str) -> str | None:
    """The text of the first level-one heading outside fenced code blocks, or None.

    Only the lines that can open or close a fence or be such a heading are visited.
    """
    fence: str | None = None
    for line in _TITLE_LINE.finditer(text):
        mark = line.group(1)
        if fence is not None:
            if mark is not None and _closes(fence, mark, text, line.end()):
                fence = None
        elif mark is not None:
            fence = mark
        else:
            line_end = text.find("\n", line.end())
            heading = _heading_text(text[line.end() : None if line_end < 0 else line_end])
            if heading:
                return heading
    return None


def _heading_text(rest: str) -> str:
    """The text of an ATX heading whose line goes on with ``rest`` after ``#`` and a blank: without
    its closing ``#`` marks, which count only after a blank (``# C#`` is about C#)."""
    content = rest.strip(" \t")
    unmarked = content.rstrip("#")
    if unmarked != content and (not unmarked or unmarked[-1] in " \t"):
        content = unmarked
    return content.strip()
