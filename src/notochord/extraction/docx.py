"""The text of a DOCX, read as a stream with hard bounds, for :mod:`notochord.extraction.text`.

A DOCX is a ZIP of XML parts; a small upload can hold a huge, highly compressible XML part. So:

- Only the parts that carry text or its structure are read: the main document, its styles and the
  core properties (title). Media and every other part are never unpacked.
- Before anything is unpacked, the declared sizes of those parts are checked against
  :data:`MAX_DOCX_UNPACKED` and each part's compression ratio against :data:`MAX_DOCX_RATIO`;
  while unpacking, the bytes actually produced are counted against the same bound (declared sizes
  can lie).
- The XML is parsed incrementally by expat's callbacks, without building a tree, so memory stays
  flat whatever the part holds; the text found so far is checked against the caller's limit while
  parsing. A document type declaration (which Word never writes) is refused, so no entity is ever
  expanded.
- A damaged compressed stream is refused as a damaged DOCX; an OLE compound file (what Word writes
  for a password-protected DOCX and for a .doc) is refused saying which of the two it is.

The output matches what python-docx reports for the same package: body paragraphs and tables in
document order (paragraphs inside revision marks or content controls, and nested tables, are
skipped as python-docx skips them); a paragraph's text is its runs' and hyperlinks' ``w:t``,
``w:tab``/``w:ptab`` (tab), ``w:br`` (newline for a text-wrapping break), ``w:cr`` (newline) and
``w:noBreakHyphen`` (``-``); a paragraph's style name is looked up in the styles part, with the
default paragraph style for a missing or unknown id; a table row lists its cells' text, a
vertically merged cell repeating the text of the cell above.
"""

from __future__ import annotations

import lzma
import posixpath
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, ClassVar, Final
from xml.parsers import expat

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError

__all__ = ["MAX_DOCX_RATIO", "MAX_DOCX_UNPACKED", "DocxText", "read_docx"]

MAX_DOCX_UNPACKED: Final = 24 * 1024 * 1024
"""Bytes of XML read from one DOCX at most (the parts that carry text, together)."""
MAX_DOCX_RATIO: Final = 100
"""Largest ratio of unpacked to packed size of a part over 1 MiB; ordinary Word XML packs 5–30 times."""

# expat names a namespaced element or attribute "<uri>}<local>" with this separator
_W: Final = "http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_R_OFFICE_DOCUMENT: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
_R_STYLES: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles"
_R_CORE: Final = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
_RELATIONSHIP: Final = "http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_DC_TITLE: Final = "http://purl.org/dc/elements/1.1/}title"
_CHUNK: Final = 64 * 1024
_RATIO_FLOOR: Final = 1024 * 1024
# python-docx shows these built-in styles by their UI names
_UI_NAMES: Final = {f"heading {n}": f"Heading {n}" for n in range(1, 10)} | {
    "caption": "Caption",
    "footer": "Footer",
    "header": "Header",
}
_BODY, _TBL, _TR, _TC, _P, _R, _T = (f"{_W}{name}" for name in ("body", "tbl", "tr", "tc", "p", "r", "t"))
_PPR, _PSTYLE, _TCPR, _HYPERLINK, _BR = (f"{_W}{name}" for name in ("pPr", "pStyle", "tcPr", "hyperlink", "br"))
_VAL, _TYPE = f"{_W}val", f"{_W}type"
_RUN_TEXT: Final = {f"{_W}tab": "\t", f"{_W}ptab": "\t", f"{_W}cr": "\n", f"{_W}noBreakHyphen": "-"}
_TRUE: Final = frozenset({"1", "true", "on"})
# Word writes a password-protected DOCX, like its binary .doc files, as an OLE compound file, not a
# ZIP; the encrypted package is a stream of it named "EncryptedPackage".
_OLE_SIGNATURE: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE: Final = "EncryptedPackage".encode("utf-16-le")

Attributes = dict[str, str]


@dataclass(frozen=True)
class DocxText:
    """The blocks of a DOCX as ``(style name, text)`` in document order, and its core title."""

    blocks: list[tuple[str, str]]
    title: str | None


@dataclass
class _Budget:
    """The unpacked bytes left to read from the package, and the text characters left to produce."""

    max_bytes: int
    max_chars: int
    bytes_left: int = 0
    chars_left: int = 0

    def __post_init__(self) -> None:
        self.bytes_left, self.chars_left = self.max_bytes, self.max_chars

    def spend_text(self, n: int) -> None:
        self.chars_left -= n
        if self.chars_left < 0:
            raise DocumentTooLargeError(f"its text is over the limit of {self.max_chars} characters")


def read_docx(data: IO[bytes], *, max_text_chars: int, max_unpacked: int = MAX_DOCX_UNPACKED) -> DocxText:
    """The blocks and title of the DOCX in ``data``.

    Raises:
        KnowledgeValidationError: the package is damaged or not a DOCX (the message says so), it
            unpacks past the bounds ("unpacks"), or its text is over ``max_text_chars`` ("over the
            limit").
    """
    _refuse_compound_file(data)
    try:
        with zipfile.ZipFile(data) as archive:
            return _read(archive, _Budget(max_unpacked, max_text_chars))
    except KnowledgeValidationError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        expat.ExpatError,
        OSError,  # also a damaged bzip2 stream
        EOFError,
        ValueError,
        zlib.error,  # a damaged deflate stream
        lzma.LZMAError,
    ) as exc:
        # a corrupt package fails in many ways; all mean "damaged"
        said = " ".join(str(exc).split())[:200]
        raise KnowledgeValidationError("the DOCX is damaged or not a DOCX" + (f" ({said})" if said else "")) from exc
    except (RuntimeError, NotImplementedError) as exc:  # an encrypted member, an unknown compression
        raise KnowledgeValidationError(f"the DOCX is damaged or cannot be unpacked ({exc})") from exc


def _refuse_compound_file(data: IO[bytes]) -> None:
    """Say what a Word file that is no ZIP is, instead of calling it damaged."""
    start = data.tell()
    if data.read(len(_OLE_SIGNATURE)) != _OLE_SIGNATURE:
        data.seek(start)
        return
    if _ENCRYPTED_PACKAGE in data.read():
        raise KnowledgeValidationError(
            "the DOCX is password-protected; remove the password (in Word: File, Info, Protect Document) and try again"
        )
    raise UnsupportedDocumentError(
        "it is a Word 97-2003 document (.doc) or another older Office file, not a DOCX; save it as .docx and try again"
    )


def _read(archive: zipfile.ZipFile, budget: _Budget) -> DocxText:
    names = archive.NameToInfo
    package = _relationships(archive, "_rels/.rels", "", budget)
    main = package.get(_R_OFFICE_DOCUMENT, "word/document.xml")
    if main not in names:
        raise KnowledgeValidationError(f"the DOCX is damaged or not a DOCX (no main document part {main!r})")
    directory, name = posixpath.split(main)
    related = _relationships(archive, posixpath.join(directory, "_rels", f"{name}.rels"), directory, budget)
    styles_part, core_part = related.get(_R_STYLES), package.get(_R_CORE)
    _check_declared(archive, [p for p in (main, styles_part, core_part) if p is not None and p in names], budget)
    styles = _Styles()
    if styles_part is not None and styles_part in names:
        _parse(archive, styles_part, budget, styles)
    title = _CoreTitle()
    if core_part is not None and core_part in names:
        _parse(archive, core_part, budget, title)
    body = _Body(styles, budget)
    _parse(archive, main, budget, body)
    return DocxText(blocks=body.blocks, title=title.text)


def _check_declared(archive: zipfile.ZipFile, parts: list[str], budget: _Budget) -> None:
    declared = 0
    for part in parts:
        info = archive.getinfo(part)
        declared += info.file_size
        packed = max(info.compress_size, 1)
        if info.file_size > _RATIO_FLOOR and info.file_size > MAX_DOCX_RATIO * packed:
            raise DocumentTooLargeError(
                f"the DOCX part {part} unpacks to {info.file_size // packed} times its packed size, "
                f"over the limit of {MAX_DOCX_RATIO} times (a ZIP bomb?)"
            )
    if declared > budget.bytes_left:
        raise DocumentTooLargeError(
            f"the DOCX unpacks to {declared} bytes of text parts, over the limit of {budget.bytes_left}"
        )


def _chunks(archive: zipfile.ZipFile, part: str, budget: _Budget) -> Iterator[bytes]:
    # the declared size was checked; the bytes actually produced are counted, as it can lie
    with archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            budget.bytes_left -= len(chunk)
            if budget.bytes_left < 0:
                raise DocumentTooLargeError(
                    f"the DOCX unpacks to more than {budget.max_bytes} bytes of text parts, over the limit"
                )
            yield chunk


class _Reader:
    """What a part's reader is told: each element's start and end. ``path`` holds the names of the
    open ancestors of the element at hand; ``text_tags`` names the elements whose text it wants."""

    text_tags: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.path: list[str] = []

    def start(self, tag: str, attrs: Attributes) -> None:
        """Nothing by default."""

    def end(self, tag: str, attrs: Attributes, text: str) -> None:
        """Nothing by default."""


def _refuse_dtd(*_args: object) -> None:
    raise KnowledgeValidationError("the DOCX is damaged or not a DOCX (its XML declares a document type)")


def _parse(archive: zipfile.ZipFile, part: str, budget: _Budget, handler: _Reader) -> None:
    """Feed ``part`` to expat in chunks and tell ``handler`` about every element; no tree is built."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    path = handler.path
    open_attrs: list[Attributes] = []
    text: list[str] = []
    collecting = False
    text_tags = handler.text_tags

    def start(tag: str, attrs: Attributes) -> None:
        nonlocal collecting
        handler.start(tag, attrs)
        path.append(tag)
        open_attrs.append(attrs)
        if tag in text_tags:
            collecting = True
            text.clear()

    def end(_name: str) -> None:
        nonlocal collecting
        tag = path.pop()
        attrs = open_attrs.pop()
        content = ""
        if collecting and tag in text_tags:
            content, collecting = "".join(text), False
        handler.end(tag, attrs, content)

    def characters(data: str) -> None:
        if collecting:
            text.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    for chunk in _chunks(archive, part, budget):
        parser.Parse(chunk, False)
    parser.Parse(b"", True)


def _relationships(archive: zipfile.ZipFile, part: str, base: str, budget: _Budget) -> dict[str, str]:
    """Relationship type → target part name, for the internal relationships of ``part``."""
    found = _Relationships(base)
    if part in archive.NameToInfo:
        _parse(archive, part, budget, found)
    return found.targets


class _Relationships(_Reader):
    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.targets: dict[str, str] = {}

    def start(self, tag: str, attrs: Attributes) -> None:
        if tag == _RELATIONSHIP and attrs.get("TargetMode") != "External":
            target = attrs.get("Target", "")
            resolved = target.lstrip("/") if target.startswith("/") else posixpath.join(self.base, target)
            self.targets.setdefault(attrs.get("Type", ""), posixpath.normpath(resolved))


class _CoreTitle(_Reader):
    text_tags = frozenset({_DC_TITLE})

    def __init__(self) -> None:
        super().__init__()
        self.text: str | None = None

    def end(self, tag: str, attrs: Attributes, text: str) -> None:  # noqa: ARG002  # the title has none
        if tag == _DC_TITLE and self.text is None:
            self.text = text or None


class _Styles(_Reader):
    """Paragraph style names by id, and the default paragraph style's name (python-docx's lookup)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, str | None] = {}
        self.default: str | None = None
        self._name: str | None = None

    def start(self, tag: str, attrs: Attributes) -> None:  # noqa: ARG002  # a style's own attributes are read at its end
        if tag == f"{_W}style":
            self._name = None

    def end(self, tag: str, attrs: Attributes, text: str) -> None:  # noqa: ARG002  # names are attributes
        if tag == f"{_W}name" and self.path[-1:] == [f"{_W}style"]:
            self._name = attrs.get(_VAL)
        elif tag == f"{_W}style" and attrs.get(_TYPE) == "paragraph":
            shown = _UI_NAMES.get(self._name, self._name) if self._name is not None else None
            style_id = attrs.get(f"{_W}styleId")
            if style_id is not None and style_id not in self.names:
                self.names[style_id] = shown
            if attrs.get(f"{_W}default") in _TRUE:
                self.default = shown  # the last default wins, as the format says

    def name(self, style_id: str | None) -> str:
        if style_id is not None and style_id in self.names:
            return self.names[style_id] or ""
        return self.default or ""


@dataclass
class _Paragraph:
    level: int  # how many ancestors the w:p element has
    style_id: str | None = None
    parts: list[str] = field(default_factory=list)


@dataclass
class _Cell:
    level: int
    paragraphs: list[str] = field(default_factory=list)
    span: int = 1
    merge: str | None = None


@dataclass
class _Row:
    level: int
    cells: list[str] = field(default_factory=list)
    offset: int = 0
    texts: dict[int, str] = field(default_factory=dict)


class _Body(_Reader):
    """Turns the elements of the main document part into ``(style name, text)`` blocks.

    Only body-level paragraphs and tables count, and in a table only the paragraphs directly in
    its cells (python-docx's ``iter_inner_content``, ``rows``, ``cells`` and ``cell.text``).
    """

    text_tags = frozenset({_T})

    def __init__(self, styles: _Styles, budget: _Budget) -> None:
        super().__init__()
        self.blocks: list[tuple[str, str]] = []
        self._styles = styles
        self._budget = budget
        self._paragraph: _Paragraph | None = None
        self._table: int | None = None  # the level of the body-level table being read
        self._row: _Row | None = None
        self._cell: _Cell | None = None
        self._above: dict[int, str] = {}

    def start(self, tag: str, attrs: Attributes) -> None:  # noqa: ARG002  # structure is in the names
        path = self.path
        level = len(path)
        if tag == _P:
            if (self._table is None and path[-1:] == [_BODY]) or (
                self._cell is not None and level == self._cell.level + 1
            ):
                self._paragraph = _Paragraph(level)
        elif tag == _TBL:
            if self._table is None and path[-1:] == [_BODY]:
                self._table, self._above = level, {}
        elif tag == _TR:
            if self._table is not None and level == self._table + 1:
                self._row = _Row(level)
        elif tag == _TC and self._row is not None and level == self._row.level + 1:
            self._cell = _Cell(level)

    def end(self, tag: str, attrs: Attributes, text: str) -> None:
        path = self.path
        level = len(path)
        paragraph = self._paragraph
        if paragraph is not None:
            if tag == _P and level == paragraph.level:
                self._end_paragraph(paragraph)
            else:
                self._run_content(paragraph, tag, attrs, text, path)
            return
        cell = self._cell
        if cell is not None:
            if tag == _TC and level == cell.level:
                self._end_cell(cell)
            elif level == cell.level + 2 and path[-1] == _TCPR:
                self._cell_property(cell, tag, attrs)
            return
        row = self._row
        if row is not None and tag == _TR and level == row.level:
            self._row, self._above = None, row.texts
            if row.cells:
                self.blocks.append(("", " | ".join(row.cells)))
        elif tag == _TBL and level == self._table:
            self._table = None

    def _end_paragraph(self, paragraph: _Paragraph) -> None:
        self._paragraph = None
        text = "".join(paragraph.parts)
        if self._cell is None:
            self.blocks.append((self._styles.name(paragraph.style_id), text))
        else:
            self._cell.paragraphs.append(text)

    def _run_content(self, paragraph: _Paragraph, tag: str, attrs: Attributes, text: str, path: list[str]) -> None:
        level = len(path)
        if tag == _PSTYLE and level == paragraph.level + 2 and path[-1] == _PPR:
            paragraph.style_id = attrs.get(_VAL)
            return
        # run content counts in a run of the paragraph itself or of one of its hyperlinks
        in_run = level == paragraph.level + 2 and path[-1] == _R
        in_link = level == paragraph.level + 3 and path[-1] == _R and path[-2] == _HYPERLINK
        if not (in_run or in_link):
            return
        if tag == _BR:
            text = "\n" if attrs.get(_TYPE, "textWrapping") == "textWrapping" else ""
        elif tag != _T:
            text = _RUN_TEXT.get(tag, "")
        if text:
            self._budget.spend_text(len(text))
            paragraph.parts.append(text)

    @staticmethod
    def _cell_property(cell: _Cell, tag: str, attrs: Attributes) -> None:
        if tag == f"{_W}gridSpan":
            value = attrs.get(_VAL, "1")
            cell.span = int(value) if value.isascii() and value.isdigit() else 1
        elif tag == f"{_W}vMerge":
            cell.merge = attrs.get(_VAL, "continue")

    def _end_cell(self, cell: _Cell) -> None:
        row = self._row
        assert row is not None
        self._cell = None
        if cell.merge == "continue":
            # a cell continuing a vertical merge shows the text of the cell above it (python-docx)
            text = self._above.get(row.offset, "")
        else:
            text = " ".join("\n".join(cell.paragraphs).split())
        row.texts[row.offset] = text
        # a cell spanning several grid columns is reported once per column, and repeats are dropped
        if text and (not row.cells or row.cells[-1] != text):
            row.cells.append(text)
        row.offset += max(cell.span, 1)
