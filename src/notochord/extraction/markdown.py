"""The title and body text of a Markdown file.

- Front matter (a block between ``---`` lines at the very start whose first line is a ``key:``
  entry, as Jekyll, Hugo and Obsidian write it) is metadata, not body text: it is left out of the
  text, and its ``title:`` is the document's title. A ``---`` rule above a paragraph is no front
  matter and stays.
- HTML comments (``<!-- … -->``, on lines of their own or within a line) are notes to the file's
  editors that a Markdown viewer never shows: they are left out of the text, to the extent
  CommonMark gives them. A ``<!--`` that opens a line (after at most three spaces) starts an HTML
  block that ends on the first line holding ``-->``, blank lines and all; what follows the ``-->``
  on that line is shown. A ``<!--`` anywhere else is a comment only when ``-->`` closes it within
  its paragraph: a blank line, or a line that may start another block (a heading, a list item, a
  quote marker where the opener's line has none, a fence, a rule or setext underline, an HTML
  block's tag), before the ``-->`` makes the ``<!--`` text, shown with what follows (a line that
  only may start a block, such as one indented too deeply, counts: the text is kept). ``<!-->``
  and ``<!--->`` are whole comments. In fenced code blocks and code spans comments are shown as
  written, and so kept; a ``<!--`` that nothing closes is text. (Indented code blocks are not told
  apart: a comment in one is left out too.) As in CommonMark,
  blocks come first: a fence opens a code block wherever it stands (a backtick fence whose info
  string holds a backtick is no fence), and a run of backticks opens a code span only when a run
  of the same length closes it later in the same paragraph, before a blank line or a fence; a run
  that nothing closes is text, and the words after it are read as any others.
- Without a front-matter title, the title is the first level-one ATX heading (``# Title``, closing
  ``#`` marks dropped) outside fenced code blocks, where ``# `` starts a shell comment, and outside
  comments.
- The file is read in the calling process, without a reader's deadline
  (:mod:`notochord.extraction.isolated`), so every step is linear in its length, whatever its lines
  hold: no pattern here may backtrack over a run it has already matched (a heading line of a
  million spaces once cost hours), the comment scan visits each token once, and the searches for the
  runs that close code spans, for the ``-->`` that closes a comment and for the line that ends a
  comment's paragraph go only forward, each once over the file at most.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Final

__all__ = ["read_markdown"]

_FRONT_MATTER_LINES: Final = 500
_KEY: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ -]*:(\s|$)")
# the lines the title is looked for on: a fence's opening or closing line, or a level-one heading's
_TITLE_LINE: Final = re.compile(r"^ {0,3}(?:(`{3,}|~{3,})|#[ \t])", re.MULTILINE)
# what decides whether a comment opener is one: a fence at a line's start, a run of backticks (a
# code span's delimiter), a comment opener, and a blank line (which ends any code span)
_TOKEN: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})|(`+)|(<!--)|\n[ \t]*\n", re.MULTILINE)
# what decides whether a run of backticks opens a code span: a later run of the same length before
# the paragraph ends, at a blank line or a fence
_AHEAD: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})|(`+)|\n[ \t]*\n", re.MULTILINE)
_COMMENT_CLOSE: Final = re.compile("-->")
_QUOTED_LINE: Final = re.compile(r"[ \t]*+>")
# what a line may be that ends a paragraph: blank, or the start of another block (any indentation
# is taken: a line indented too deeply to start one only keeps a comment's text)
_HTML_BLOCK_NAMES: Final = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
    "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|"
    "html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|pre|script|"
    "search|section|style|summary|table|tbody|td|textarea|tfoot|th|thead|title|tr|track|ul"
)
_STARTS_BLOCK: Final = (
    r"(?:$|\#{1,6}+(?:[ \t]|$)|`{3}|~{3}|[-+*](?:[ \t]|$)|\d{1,9}+[.)](?:[ \t]|$)|=++[ \t]*+$|-++[ \t]*+$"
    rf"|(?:[-*_][ \t]*+){{3,}}+$|<(?:[!?]|/?(?:{_HTML_BLOCK_NAMES})(?:[ \t>]|/>|$)))"
)
# the newline before a line that ends the paragraph of a comment opened on a line without a quote
# marker (where a quote marker starts a block), and of one opened in a quote (where markers only
# continue it, and what follows them counts)
_PARAGRAPH_BREAK: Final = re.compile(rf"\n[ \t]*+(?:>|{_STARTS_BLOCK})", re.MULTILINE | re.IGNORECASE)
_QUOTED_PARAGRAPH_BREAK: Final = re.compile(rf"\n(?:[ \t]*+>)*+[ \t]*+{_STARTS_BLOCK}", re.MULTILINE | re.IGNORECASE)


def read_markdown(text: str) -> tuple[str | None, str]:
    """The title of the Markdown ``text`` (None without one) and its body without front matter."""
    front_title, body = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    body = _without_comments(body)
    return front_title or _first_heading(body), body


def _opens_fence(mark: str, text: str, after: int) -> bool:
    """Whether ``mark``, at a line's start with ``after`` just past it, opens a fenced code block:
    a backtick fence's info string holds no backtick (else the line is text with backtick runs)."""
    if mark[0] != "`":
        return True
    line_end = text.find("\n", after)
    return text.find("`", after, len(text) if line_end < 0 else line_end) < 0


class _Closers:
    """Where the run of backticks that closes a code span is, for each run that may open one.

    A run opens a code span only when a later run of exactly its length follows in the same
    paragraph; otherwise its backticks are text. The search for later runs only ever goes forward:
    each run it passes is kept, by length, for the runs after it, so the whole file is searched at
    most once, however many runs find no closer.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._reset(0)

    def _reset(self, position: int) -> None:
        self._searched = position  # where the search goes on
        self._end: int | None = None  # where the paragraph ends, once the search met it
        self._runs: dict[int, deque[int]] = {}  # the starts of runs searched past, by length

    def paragraph_from(self, position: int) -> None:
        """A paragraph starts at ``position`` (after a blank line, a fence or a comment)."""
        if (self._end is not None and self._end <= position) or self._searched < position:
            self._reset(position)

    def closer(self, start: int, length: int) -> int | None:
        """The start of the run that closes a code span opened by the run at ``start``, or None."""
        after = start + length
        self.paragraph_from(after)
        runs = self._runs.get(length)
        while runs and runs[0] < after:
            runs.popleft()
        if runs:
            return runs[0]
        if self._end is not None:
            return None
        for token in _AHEAD.finditer(self._text, self._searched):
            self._searched = token.end()
            mark = token.group(1)
            if token.lastindex is None or (mark is not None and _opens_fence(mark, self._text, token.end())):
                self._end = token.start()
                return None
            run = token.end() - token.start() if mark is None else len(mark)
            self._runs.setdefault(run, deque()).append(token.end() - run)
            if run == length:
                return token.end() - run
        self._searched = self._end = len(self._text)
        return None


class _Ahead:
    """Where ``pattern`` next matches in ``text`` at or after a position, asked for positions that
    never go back: an answer still ahead is given again, so each stretch is searched once."""

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self._pattern = pattern
        self._text = text
        self._from = -1  # where the last search started
        self._found = -1  # where it matched, or -1: nowhere after ``_from``

    def at_or_after(self, position: int) -> int:
        """The start of the first match at or after ``position``, or -1."""
        if self._from < 0 or position < self._from or 0 <= self._found < position:
            match = self._pattern.search(self._text, position)
            self._from, self._found = position, -1 if match is None else match.start()
        return self._found


class _Lines:
    """Where the line holding a position starts and whether it opens with a quote marker, asked for
    positions that never go back: each stretch is searched once."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._seen = 0  # the newlines before here are accounted for
        self.start = 0
        self._quoted_for = -1
        self._quoted = False

    def move_to(self, position: int) -> None:
        newline = self._text.rfind("\n", self._seen, position)
        if newline >= 0:
            self.start = newline + 1
        self._seen = max(self._seen, position)

    def opens_line(self, position: int) -> bool:
        """Whether at most three spaces stand before ``position`` on its line."""
        return position - self.start <= 3 and not self._text[self.start : position].strip(" ")

    def quoted(self) -> bool:
        if self._quoted_for != self.start:
            self._quoted_for, self._quoted = self.start, _QUOTED_LINE.match(self._text, self.start) is not None
        return self._quoted


def _without_comments(text: str) -> str:
    """``text`` without the HTML comments that stand outside code, in one pass over it.

    Blocks come first, as in CommonMark: a fence opens a code block wherever it stands, and a code
    span, which a run of backticks opens only when a run of the same length closes it later in the
    same paragraph, never runs past a blank line or a fence. A run that nothing closes is text. A
    comment opening a line runs to its ``-->``; one within a paragraph only where the paragraph
    holds its ``-->``.
    """
    last = text.rfind("<!--")
    if last < 0:
        return text
    stop = last + 4  # nothing after the last opener matters
    kept: list[str] = []
    fence: str | None = None
    closers = _Closers(text)
    closes = _Ahead(_COMMENT_CLOSE, text)
    breaks = _Ahead(_PARAGRAPH_BREAK, text)
    quoted_breaks = _Ahead(_QUOTED_PARAGRAPH_BREAK, text)
    lines = _Lines(text)
    closer: int | None = None  # where the open code span's closing run starts; None outside one
    copied = 0  # where the text not yet copied to ``kept`` starts
    tokens = _TOKEN.finditer(text, 0, stop)
    while (token := next(tokens, None)) is not None:
        kind = token.lastindex  # 1: a fence mark, 2: a backtick run, 3: an opener, None: a blank line
        if fence is not None:
            if kind == 1 and _closes(fence, token.group(1), text, token.end()):
                fence = None
                closers.paragraph_from(token.end())
        elif kind == 1 and _opens_fence(token.group(1), text, token.end()):
            fence, closer = token.group(1), None
        elif kind is None:  # a paragraph, and any code span in it, ends
            closer = None
            closers.paragraph_from(token.end())
        elif kind != 3:
            start = token.end() - len(token.group(kind))
            if closer is None:
                closer = closers.closer(start, token.end() - start)
            elif start == closer:
                closer = None
        elif closer is None:
            # ``<!-->`` and ``<!--->`` close themselves
            end = closes.at_or_after(token.start() + 2)
            if end < 0:  # nothing closes it, nor any opener after it
                break
            lines.move_to(token.start())
            if not lines.opens_line(token.start()):
                paragraph_end = (quoted_breaks if lines.quoted() else breaks).at_or_after(token.end())
                if 0 <= paragraph_end < end:
                    continue  # the paragraph ends first: the opener is text
            kept.append(text[copied : token.start()])
            copied = end + 3
            closers.paragraph_from(copied)
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
