"""What a reader sees in one story part of a DOCX (the body, a header or footer, the notes), as
``(style name, text)`` blocks, for :mod:`notochord.extraction.docx`.

- Every paragraph counts, wherever it stands: in content controls (``w:sdt``), custom XML, tracked
  insertions and moves (``w:ins``, ``w:moveTo``), text boxes and shapes (``w:txbxContent``) and
  tables at any depth. Deleted and moved-away text (``w:del``, ``w:moveFrom``) is not the document
  as its author sees it and is skipped; so is a field's instruction (``w:instrText``), while the
  result Word shows is read. Word stores a shape twice in ``mc:AlternateContent`` (the drawing and
  a VML fallback): only its first choice is read.
- A paragraph's text is its runs' ``w:t``, ``w:tab``/``w:ptab`` (tab), ``w:br`` (newline for a
  text-wrapping break), ``w:cr`` (newline) and ``w:noBreakHyphen`` (``-``); its style name is looked
  up in the styles part (python-docx's lookup). Blank paragraphs are dropped.
- A text box's paragraphs come right after the paragraph it is anchored in.
- A table row is one block listing its cells' text; a vertically merged cell repeats the text of
  the cell above (counted again against the text limit, as it is produced again). A table inside a
  cell (nested, or in a text box in the cell) is read as part of that cell's text.
- Footnote and endnote references, and the relationship ids of headers and footers, are noted in
  reading order for the caller, which reads those parts after the body.

The walk keeps its own stacks: nesting depth costs no recursion, and an element's text is counted
against the text limit as it is produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from notochord.extraction.docx_xml import Attributes, Budget, PartReader, W

__all__ = ["NoteReader", "StoryReader", "Styles"]

_MC: Final = "http://schemas.openxmlformats.org/markup-compatibility/2006}"
_R_ID: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
# python-docx shows these built-in styles by their UI names
_UI_NAMES: Final = {f"heading {n}": f"Heading {n}" for n in range(1, 10)} | {
    "caption": "Caption",
    "footer": "Footer",
    "header": "Header",
}
_TBL, _TR, _TC, _P, _R, _T = (f"{W}{name}" for name in ("tbl", "tr", "tc", "p", "r", "t"))
_PPR, _PSTYLE, _TCPR, _BR = (f"{W}{name}" for name in ("pPr", "pStyle", "tcPr", "br"))
_VAL, _TYPE, _ID = f"{W}val", f"{W}type", f"{W}id"
_ALTERNATE: Final = f"{_MC}AlternateContent"
_SKIPPED: Final = frozenset({f"{W}del", f"{W}moveFrom"})
_NOTE_REFERENCES: Final = {f"{W}footnoteReference": "footnote", f"{W}endnoteReference": "endnote"}
_PART_REFERENCES: Final = frozenset({f"{W}headerReference", f"{W}footerReference"})
_RUN_TEXT: Final = {f"{W}tab": "\t", f"{W}ptab": "\t", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}
_TRUE: Final = frozenset({"1", "true", "on"})


class Styles(PartReader):
    """Paragraph style names by id, and the default paragraph style's name (python-docx's lookup)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, str | None] = {}
        self.default: str | None = None
        self._name: str | None = None

    def start(self, tag: str, attrs: Attributes) -> None:  # noqa: ARG002  # a style's own attributes are read at its end
        if tag == f"{W}style":
            self._name = None

    def end(self, tag: str, attrs: Attributes, text: str) -> None:  # noqa: ARG002  # names are attributes
        if tag == f"{W}name" and self.path[-1:] == [f"{W}style"]:
            self._name = attrs.get(_VAL)
        elif tag == f"{W}style" and attrs.get(_TYPE) == "paragraph":
            shown = _UI_NAMES.get(self._name, self._name) if self._name is not None else None
            style_id = attrs.get(f"{W}styleId")
            if style_id is not None and style_id not in self.names:
                self.names[style_id] = shown
            if attrs.get(f"{W}default") in _TRUE:
                self.default = shown  # the last default wins, as the format says

    def name(self, style_id: str | None) -> str:
        if style_id is not None and style_id in self.names:
            return self.names[style_id] or ""
        return self.default or ""


Block = tuple[str, str]


@dataclass
class _Paragraph:
    level: int  # how many ancestors the w:p element has
    outer: _Sink  # where its text goes when it ends
    style_id: str | None = None
    parts: list[str] = field(default_factory=list)
    # what is anchored in it (text boxes and their tables), read right after it
    after: list[_Paragraph | Block] = field(default_factory=list)


@dataclass
class _Table:
    level: int
    above: dict[int, str] = field(default_factory=dict)  # the previous row's cell texts by grid column


@dataclass
class _Row:
    level: int
    table: _Table
    cells: list[str] = field(default_factory=list)
    offset: int = 0
    texts: dict[int, str] = field(default_factory=dict)


@dataclass
class _Cell:
    level: int
    outer: _Sink
    paragraphs: list[str] = field(default_factory=list)
    span: int = 1
    merge: str | None = None


_Sink = _Paragraph | _Cell | None  # None: the part's own list of blocks
_Frame = _Paragraph | _Table | _Row | _Cell


class StoryReader(PartReader):
    """Turns the elements of a story part into ``(style name, text)`` blocks in reading order."""

    text_tags = frozenset({_T})

    def __init__(self, styles: Styles, budget: Budget) -> None:
        super().__init__()
        self.blocks: list[Block] = []
        self.note_references: dict[str, dict[str, None]] = {"footnote": {}, "endnote": {}}
        self.part_references: dict[str, None] = {}  # relationship ids of headers and footers
        self._styles = styles
        self._budget = budget
        self._frames: list[_Frame] = []
        self._sink: _Sink = None
        self._in_cell = False  # a table in a cell is read as the cell's text, not as rows
        self._skip: int | None = None  # the level of the skipped element being passed over
        self._chosen: set[int] = set()  # levels of open mc:AlternateContent whose choice is taken

    def start(self, tag: str, attrs: Attributes) -> None:
        if self._skip is not None:
            return
        path = self.path
        level = len(path)
        if path and path[-1] == _ALTERNATE:
            if level - 1 in self._chosen:
                self._skip = level
                return
            self._chosen.add(level - 1)
        if tag in _SKIPPED:
            self._skip = level
            return
        frames = self._frames
        top = frames[-1] if frames else None
        if tag == _P:
            paragraph = _Paragraph(level, self._sink)
            frames.append(paragraph)
            self._sink = paragraph
        elif tag == _TBL:
            if not self._in_cell:
                frames.append(_Table(level))
        elif tag == _TR:
            # rows and cells may sit in content controls of their own, so any depth below counts
            if isinstance(top, _Table):
                frames.append(_Row(level, top))
        elif tag == _TC:
            if isinstance(top, _Row):
                cell = _Cell(level, self._sink)
                frames.append(cell)
                self._sink, self._in_cell = cell, True
        elif tag in _NOTE_REFERENCES:
            note = attrs.get(_ID)
            if note is not None:
                self.note_references[_NOTE_REFERENCES[tag]].setdefault(note)
        elif tag in _PART_REFERENCES:
            reference = attrs.get(_R_ID)
            if reference is not None:
                self.part_references.setdefault(reference)

    def end(self, tag: str, attrs: Attributes, text: str) -> None:
        path = self.path
        level = len(path)
        if self._skip is not None:
            if level == self._skip:
                self._skip = None
            return
        if tag == _ALTERNATE:
            self._chosen.discard(level)
            return
        frames = self._frames
        top = frames[-1] if frames else None
        if top is not None and top.level == level:  # frames nest as elements do: this one ends
            frames.pop()
            if isinstance(top, _Paragraph):
                self._sink = top.outer
                self._end_paragraph(top)
            elif isinstance(top, _Cell):
                self._sink, self._in_cell = top.outer, False
                self._end_cell(top)
            elif isinstance(top, _Row):
                self._end_row(top)
        elif isinstance(top, _Paragraph):
            self._run_content(top, tag, attrs, text)
        elif isinstance(top, _Cell) and level == top.level + 2 and path[-1] == _TCPR:
            self._cell_property(top, tag, attrs)

    def _run_content(self, paragraph: _Paragraph, tag: str, attrs: Attributes, text: str) -> None:
        path = self.path
        if tag == _PSTYLE and len(path) == paragraph.level + 2 and path[-1] == _PPR:
            paragraph.style_id = attrs.get(_VAL)
            return
        if path[-1] != _R:  # a w:tab outside a run is a tab stop, not text
            return
        if tag == _BR:
            text = "\n" if attrs.get(_TYPE, "textWrapping") == "textWrapping" else ""
        elif tag != _T:
            text = _RUN_TEXT.get(tag, "")
        if text:
            self._budget.spend_text(len(text))
            paragraph.parts.append(text)

    def _end_paragraph(self, paragraph: _Paragraph) -> None:
        if paragraph.after:
            self._emit(paragraph)
        elif paragraph.parts:
            text = "".join(paragraph.parts)
            if not text.isspace():
                self._emit((self._styles.name(paragraph.style_id), text))

    def _emit(self, item: _Paragraph | Block) -> None:
        sink = self._sink
        if isinstance(sink, _Paragraph):
            sink.after.append(item)
            return
        for style, text in self._flatten(item):
            if not text or text.isspace():
                continue
            if sink is None:
                self.blocks.append((style, text))
            else:
                sink.paragraphs.append(text)

    def _flatten(self, item: _Paragraph | Block) -> Iterator[Block]:
        stack = [item]
        while stack:
            top = stack.pop()
            if isinstance(top, tuple):
                yield top
            else:
                yield self._styles.name(top.style_id), "".join(top.parts)
                stack.extend(reversed(top.after))

    @staticmethod
    def _cell_property(cell: _Cell, tag: str, attrs: Attributes) -> None:
        if tag == f"{W}gridSpan":
            value = attrs.get(_VAL, "1")
            cell.span = int(value) if value.isascii() and value.isdigit() else 1
        elif tag == f"{W}vMerge":
            cell.merge = attrs.get(_VAL, "continue")

    def _end_cell(self, cell: _Cell) -> None:
        row = self._frames[-1]
        assert isinstance(row, _Row)  # a cell frame is only opened on a row frame
        if cell.merge == "continue":
            # a cell continuing a vertical merge shows the text of the cell above it (python-docx);
            # produced again, it counts again
            text = row.table.above.get(row.offset, "")
            self._budget.spend_text(len(text))
        else:
            text = " ".join("\n".join(cell.paragraphs).split())
        row.texts[row.offset] = text
        # a cell spanning several grid columns is reported once per column, and repeats are dropped
        if text and (not row.cells or row.cells[-1] != text):
            row.cells.append(text)
        row.offset += max(cell.span, 1)

    def _end_row(self, row: _Row) -> None:
        row.table.above = row.texts
        if row.cells:
            self._emit(("", " | ".join(row.cells)))


class NoteReader(StoryReader):
    """The footnotes or endnotes part: the blocks of each note the body cites, by id. Word's
    separator notes, notes nothing cites and a second note of the same id are not shown."""

    def __init__(self, styles: Styles, budget: Budget, kind: str, cited: dict[str, None]) -> None:
        super().__init__(styles, budget)
        self.notes: dict[str, list[Block]] = {}
        self._note = f"{W}{kind}"
        self._cited = cited

    def start(self, tag: str, attrs: Attributes) -> None:
        if self._skip is None and len(self.path) == 1:
            note = attrs.get(_ID)
            if (
                tag != self._note
                or note is None
                or note not in self._cited
                or note in self.notes
                or attrs.get(_TYPE, "normal") != "normal"
            ):
                self._skip = 1
                return
            self.blocks = self.notes[note] = []
        super().start(tag, attrs)
