"""Markdown-aware chunking: the unit of retrieval (DESIGN §5, OD-K36, OD-K40).

A document's text is cut into :class:`Chunk` objects numbered from 0. The rules:

1. The text is read as *blocks*: an ATX heading line (``# …`` to ``###### …``), a fenced code block
   (````` ``` ````` or ``~~~`` up to its closing fence, or to the end of the text), or a paragraph (lines
   up to a blank line, a heading or a fence).
2. Consecutive blocks are packed into one chunk while the chunk's span stays within ``max_chars``
   (1,000 characters by default, about 200–300 model tokens of English prose).
3. A heading always starts a new chunk, so it stays attached to the text that follows it; consecutive
   headings stay together.
4. A block longer than ``max_chars`` is hard-split. Its first piece fills the current chunk when at
   least a quarter of ``max_chars`` is left there (so a heading or short lead-in is never stranded),
   and every piece ends at the last sentence end inside the allowed window,
   else at the last whitespace, else at exactly ``max_chars``. A code fence is split only when it is
   itself longer than ``max_chars``, and then preferably at a line break.

Invariants (tested): chunks are in text order and do not overlap; ``end - start <= max_chars``;
``text[start:end]`` equals ``chunk.text``, starts and ends with a non-whitespace character; every
non-whitespace character of the text lies in exactly one chunk. Only whitespace between chunks is
dropped. Offsets count Python ``str`` characters (code points), ``end`` exclusive: the ``from``/``to``
of a search hit's ``locator``.

A document is indexed as :func:`document_chunks`: the same chunks, except that a text holding only
whitespace (or nothing) is one empty passage, ``[0, 0)``, instead of none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from notochord.errors import KnowledgeValidationError

__all__ = ["DEFAULT_MAX_CHARS", "Chunk", "chunk_markdown", "document_chunks"]

DEFAULT_MAX_CHARS = 1000
# Below this a chunk would be too small to be a useful passage; a bound, not a tuning knob.
_MIN_MAX_CHARS = 40

_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# A sentence ends with terminal punctuation (optionally closed by quotes or brackets) followed by
# whitespace; CJK full stops end a sentence without any whitespace after them.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)|[。！？][\"'”’」』）]*")

BlockKind = Literal["heading", "fence", "paragraph"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One passage of a document: ``text == document_text[start:end]``."""

    index: int
    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Block:
    kind: BlockKind
    start: int
    end: int


def chunk_markdown(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> list[Chunk]:
    """Cut ``text`` into Markdown-aware chunks of at most ``max_chars`` characters.

    Returns an empty list when the text holds only whitespace.

    Raises:
        KnowledgeValidationError: ``max_chars`` is below 40.
    """
    if max_chars < _MIN_MAX_CHARS:
        raise KnowledgeValidationError(f"max_chars must be at least {_MIN_MAX_CHARS}, got {max_chars}")
    spans = _pack(text, _blocks(text), max_chars)
    return [Chunk(index=i, text=text[s:e], start=s, end=e) for i, (s, e) in enumerate(spans)]


def document_chunks(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> list[Chunk]:
    """The passages a document with ``text`` is indexed as: at least one.

    Search reaches a document only through its passages: its title is indexed with each of them,
    and an empty query lists each document's first one (OD-K39). A document without text still
    has a title, a date and a place in its collection, so it gets one empty passage (chunk 0, from
    0 to 0) rather than none, which would hide it from every search, even by its own title.

    Raises:
        KnowledgeValidationError: ``max_chars`` is below 40.
    """
    return chunk_markdown(text, max_chars=max_chars) or [Chunk(index=0, text="", start=0, end=0)]


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    lines = text.splitlines(keepends=True)
    para_start: int | None = None
    para_end = 0
    pos = 0
    i = 0

    def close_paragraph() -> None:
        nonlocal para_start
        if para_start is not None:
            blocks.append(_Block("paragraph", para_start, para_end))
            para_start = None

    while i < len(lines):
        line = lines[i]
        line_start = pos
        pos += len(line)
        i += 1
        stripped = line.strip()
        if not stripped:
            close_paragraph()
            continue
        content_start = line_start + (len(line) - len(line.lstrip()))
        fence = _FENCE.match(line)
        if fence:
            close_paragraph()
            marker = fence.group(1)
            closing = re.compile(r" {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$")
            while i < len(lines):
                inner = lines[i]
                pos += len(inner)
                i += 1
                if closing.match(inner):
                    break
            blocks.append(_Block("fence", content_start, _rstrip_end(text, line_start, pos)))
            continue
        content_end = _rstrip_end(text, line_start, pos)
        if _HEADING.match(line):
            close_paragraph()
            blocks.append(_Block("heading", content_start, content_end))
            continue
        if para_start is None:
            para_start = content_start
        para_end = content_end
    close_paragraph()
    return blocks


def _rstrip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _lstrip_start(text: str, start: int, end: int) -> int:
    while start < end and text[start].isspace():
        start += 1
    return start


def _pack(text: str, blocks: list[_Block], max_chars: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_end = 0
    cur_only_headings = False

    def flush() -> None:
        nonlocal cur_start
        if cur_start is not None:
            spans.append((cur_start, cur_end))
            cur_start = None

    for block in blocks:
        # A heading line longer than a chunk is cut like prose.
        kind = block.kind
        if kind == "heading" and block.end - block.start > max_chars:
            kind = "paragraph"
        if kind == "heading":
            if cur_start is not None and not cur_only_headings:
                flush()
            if cur_start is not None and block.end - cur_start <= max_chars:
                cur_end = block.end
            else:
                flush()
                cur_start, cur_end, cur_only_headings = block.start, block.end, True
            continue
        if cur_start is not None and block.end - cur_start <= max_chars:
            cur_end = block.end
            cur_only_headings = False
            continue
        if block.end - block.start <= max_chars:
            flush()
            cur_start, cur_end, cur_only_headings = block.start, block.end, False
            continue
        # The block must be hard-split. Its first piece fills the current chunk (which keeps a
        # heading with its text) when at least a quarter of a chunk is left, so no chunk is a stub.
        start = block.start
        if cur_start is not None:
            room = max_chars - (block.start - cur_start)
            if room >= max_chars // 4:
                cut = _cut(text, start, block.end, room, prefer_lines=kind == "fence")
                spans.append((cur_start, _rstrip_end(text, start, cut)))
                cur_start = None
                start = _lstrip_start(text, cut, block.end)
        flush()
        while block.end - start > max_chars:
            cut = _cut(text, start, block.end, max_chars, prefer_lines=kind == "fence")
            spans.append((start, _rstrip_end(text, start, cut)))
            start = _lstrip_start(text, cut, block.end)
        if start < block.end:
            cur_start, cur_end, cur_only_headings = start, block.end, False
    flush()
    return spans


def _cut(text: str, start: int, end: int, budget: int, *, prefer_lines: bool) -> int:
    """Return the offset at which to end a piece that starts at ``start`` (within ``budget``).

    The piece ends at a natural boundary found in the second half of the window, so pieces never
    shrink below half the budget; with no boundary there, it ends exactly at the budget.
    """
    limit = min(end, start + budget)
    floor = start + budget // 2
    window = text[floor:limit]
    best: int | None = None
    if prefer_lines:
        nl = window.rfind("\n")
        if nl >= 0:
            best = floor + nl + 1
    if best is None:
        for match in _SENTENCE_END.finditer(window):
            best = floor + match.end()
    if best is None:
        for idx in range(len(window) - 1, -1, -1):
            if window[idx].isspace():
                best = floor + idx + 1
                break
    cut = best if best is not None else limit
    # A piece must hold something besides whitespace, or the caller would not advance.
    if _rstrip_end(text, start, cut) == start:
        cut = limit
    return cut
