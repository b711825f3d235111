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
- Hidden text is left out: a run formatted hidden (``w:vanish``, ``w:specVanish``), directly or
  through its character or paragraph style (:mod:`notochord.extraction.docx_styles` resolves it as
  Word does), with all it holds (drawings, text boxes). Word neither shows nor prints hidden text
  unless its user switches on the display of hidden formatting, so a search should not find a
  document by words its reader never sees (a note to self, an answer key, text left behind by a
  template). A hidden paragraph mark (``w:pPr/w:rPr``) hides only the mark: Word runs the paragraph
  into the next one, and its text, still shown, is kept.
- The prompt of an empty content control (``w:showingPlcHdr``: "Click or tap here to enter
  text.") is the template's, not the document's: its runs are left out.
- A drawing's alternative text, DrawingML or an older VML picture's, is read where a screen reader
  reads it: an inline image's in its line, a floating one's after its paragraph
  (:mod:`notochord.extraction.docx_drawing` says which text counts).
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

from notochord.extraction.docx_drawing import VML_SHAPES, Drawing, vml_drawing, vml_property
from notochord.extraction.docx_styles import Styles, on
from notochord.extraction.docx_xml import Attributes, Budget, PartReader, W

__all__ = ["NoteReader", "StoryReader"]

_MC: Final = "http://schemas.openxmlformats.org/markup-compatibility/2006}"
_R_ID: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_TBL, _TR, _TC, _P, _R, _T = (f"{W}{name}" for name in ("tbl", "tr", "tc", "p", "r", "t"))
_PPR, _PSTYLE, _TCPR, _BR = (f"{W}{name}" for name in ("pPr", "pStyle", "tcPr", "br"))
_VAL, _TYPE, _ID = f"{W}val", f"{W}type", f"{W}id"
_ALTERNATE: Final = f"{_MC}AlternateContent"
_SKIPPED: Final = frozenset({f"{W}del", f"{W}moveFrom"})
_NOTE_REFERENCES: Final = {f"{W}footnoteReference": "footnote", f"{W}endnoteReference": "endnote"}
_PART_REFERENCES: Final = frozenset({f"{W}headerReference", f"{W}footerReference"})
_RUN_TEXT: Final = {f"{W}tab": "\t", f"{W}ptab": "\t", f"{W}cr": "\n", f"{W}noBreakHyphen": "-"}
_RPR, _RSTYLE, _VANISH, _SPEC_VANISH = (f"{W}{name}" for name in ("rPr", "rStyle", "vanish", "specVanish"))
_SDT, _SDT_PR, _SDT_CONTENT = f"{W}sdt", f"{W}sdtPr", f"{W}sdtContent"
_PLACEHOLDER: Final = f"{W}showingPlcHdr"
_WP: Final = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_INLINE, _ANCHOR, _DOC_PR = f"{_WP}inline", f"{_WP}anchor", f"{_WP}docPr"
_PICTURE_PR: Final = "http://schemas.openxmlformats.org/drawingml/2006/picture}cNvPr"
_DECORATIVE: Final = "http://schemas.microsoft.com/office/drawing/2017/decorative}decorative"


Block = tuple[str, str]


@dataclass
class _Paragraph:
    level: int  # how many ancestors the w:p element has
    outer: _Sink  # where its text goes when it ends
    style_id: str | None = None
    parts: list[str] = field(default_factory=list)
    # what is anchored in it (text boxes and their tables), read right after it
    after: list[_Paragraph | Block] = field(default_factory=list)
    space_next: bool = False  # an image's text went before: the next text is set apart from it


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


@dataclass
class _Run:
    style_id: str | None = None
    vanish: bool | None = None
    spec_vanish: bool | None = None
    hidden: bool | None = None  # worked out at its first content, once its properties are read


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
        self._runs: dict[int, _Run] = {}  # the open run at each level
        self._placeholder_controls: set[int] = set()  # levels of open w:sdt showing their placeholder
        self._placeholders: list[int] = []  # levels of the open w:sdtContent that hold a placeholder
        self._drawings: list[Drawing] = []

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
        if path and path[-1] == _R and tag != _RPR and self._hidden(level - 1):
            self._skip = level - 1  # the rest of the run: its text, drawings and text boxes
            return
        if tag == _R:
            self._runs[level] = _Run()
        elif tag == _SDT_CONTENT and level - 1 in self._placeholder_controls:
            self._placeholders.append(level)
        elif tag in (_INLINE, _ANCHOR):
            self._drawings.append(Drawing(level, inline=tag == _INLINE))
        elif tag in VML_SHAPES and not (self._drawings and self._drawings[-1].vml):
            self._drawings.append(vml_drawing(level, attrs))
        elif self._drawings:
            drawing = self._drawings[-1]
            if drawing.vml:
                vml_property(drawing, tag, attrs)
            else:
                self._drawing_property(drawing, tag, attrs, level)
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
        if path[-2:] == [_R, _RPR]:
            self._run_property(self._runs.get(level - 2), tag, attrs)
            return
        if tag == _PLACEHOLDER and path[-2:] == [_SDT, _SDT_PR]:
            if on(attrs):
                self._placeholder_controls.add(level - 2)
            return
        if tag == _SDT:
            self._placeholder_controls.discard(level)
        elif self._placeholders and self._placeholders[-1] == level:  # its w:sdtContent ends
            self._placeholders.pop()
        elif self._drawings and self._drawings[-1].level == level:
            self._place_drawing(self._drawings.pop())
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
            if paragraph.space_next and not text[0].isspace():
                text = " " + text
            paragraph.space_next = False
            self._budget.spend_text(len(text))
            paragraph.parts.append(text)

    def _hidden(self, run_level: int) -> bool:
        """Whether the run at ``run_level`` is not shown: formatted hidden, or a placeholder."""
        if self._placeholders:
            return True
        run = self._runs.get(run_level)
        if run is None:
            return False
        if run.hidden is None:
            paragraph = self._sink.style_id if isinstance(self._sink, _Paragraph) else None
            run.hidden = self._styles.hidden(paragraph, run.style_id, run.vanish, run.spec_vanish)
        return run.hidden

    @staticmethod
    def _run_property(run: _Run | None, tag: str, attrs: Attributes) -> None:
        if run is None:
            return
        if tag == _RSTYLE:
            run.style_id = attrs.get(_VAL)
        elif tag == _VANISH:
            run.vanish = on(attrs)
        elif tag == _SPEC_VANISH:
            run.spec_vanish = on(attrs)

    @staticmethod
    def _drawing_property(drawing: Drawing, tag: str, attrs: Attributes, level: int) -> None:
        if tag == _DOC_PR and level == drawing.level + 1:
            drawing.title, drawing.description = attrs.get("title", ""), attrs.get("descr", "")
        elif tag == _PICTURE_PR and not drawing.picture_description:
            drawing.picture_description = attrs.get("descr", "")
        elif tag == _DECORATIVE and attrs.get("val", "1").strip().lower() not in ("0", "false", "off"):
            drawing.decorative = True

    def _place_drawing(self, drawing: Drawing) -> None:
        """Put a drawing's alternative text where a screen reader reads it: an inline image's in
        its line, a floating one's after the paragraph it is anchored in."""
        paragraph = self._sink
        text = drawing.alternative_text()
        if not text or not isinstance(paragraph, _Paragraph):
            return
        if not drawing.inline:
            self._budget.spend_text(len(text))
            paragraph.after.append(("", text))
            return
        if paragraph.parts and not paragraph.parts[-1][-1:].isspace():
            text = " " + text
        self._budget.spend_text(len(text))
        paragraph.parts.append(text)
        paragraph.space_next = True

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
