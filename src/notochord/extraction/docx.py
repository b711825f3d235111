"""The text of a DOCX, read as a stream with hard bounds, for :mod:`notochord.extraction.text`.

A DOCX is a ZIP of XML parts; a small upload can hold a huge, highly compressible XML part. So:

- Only the parts that carry text or its structure are read: the main document, the footnotes and
  endnotes, the headers and footers, the styles and the core properties (title). Media and every
  other part are never unpacked. Comments (``word/comments.xml``) are not read: they are
  reviewers' notes beside the text, not the document's text, and Word leaves them out of a printed
  copy unless asked; a search finds the commented text, not what a reviewer said of it.
- Before anything is unpacked, the declared sizes of those parts are checked against
  :data:`MAX_DOCX_UNPACKED` and each part's compression ratio against :data:`MAX_DOCX_RATIO`;
  while unpacking, the bytes actually produced are counted against the same bound (declared sizes
  can lie), and the text found so far against the caller's limit
  (:mod:`notochord.extraction.docx_xml`).
- A damaged compressed stream is refused as a damaged DOCX; an OLE compound file (what Word writes
  for a password-protected DOCX and for a .doc) is refused saying which of the two it is.

The output is what a reader of the document sees, in reading order
(:mod:`notochord.extraction.docx_blocks` says what counts): the body; then the footnotes and the
endnotes, each in the order the body first cites it (a note read at its reference would split the
sentence that cites it); then the headers and footers the sections use, each distinct paragraph
once. Headers and footers are page furniture repeated on every page and often in every section
(a company name, "Confidential"): read once per document they are found by search without
outweighing the body.
"""

from __future__ import annotations

import lzma
import posixpath
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO, Final
from xml.parsers import expat

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.docx_blocks import NoteReader, StoryReader
from notochord.extraction.docx_styles import Styles
from notochord.extraction.docx_xml import Attributes, Budget, PartReader, parse_part

__all__ = ["MAX_DOCX_RATIO", "MAX_DOCX_UNPACKED", "DocxText", "read_docx"]

MAX_DOCX_UNPACKED: Final = 24 * 1024 * 1024
"""Bytes of XML read from one DOCX at most (the parts that carry text, together)."""
MAX_DOCX_RATIO: Final = 100
"""Largest ratio of unpacked to packed size of a part over 1 MiB; ordinary Word XML packs 5–30 times."""

_RELATIONSHIPS: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
_R_OFFICE_DOCUMENT, _R_STYLES, _R_FOOTNOTES, _R_ENDNOTES, _R_HEADER, _R_FOOTER = (
    _RELATIONSHIPS + kind for kind in ("officeDocument", "styles", "footnotes", "endnotes", "header", "footer")
)
_R_CORE: Final = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
_RELATIONSHIP: Final = "http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_DC_TITLE: Final = "http://purl.org/dc/elements/1.1/}title"
_RATIO_FLOOR: Final = 1024 * 1024
# Word writes a password-protected DOCX, like its binary .doc files, as an OLE compound file, not a
# ZIP; the encrypted package is a stream of it named "EncryptedPackage".
_OLE_SIGNATURE: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE: Final = "EncryptedPackage".encode("utf-16-le")


@dataclass(frozen=True)
class DocxText:
    """The blocks of a DOCX as ``(style name, text)`` in reading order, and its core title."""

    blocks: list[tuple[str, str]]
    title: str | None


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
            return _read(archive, Budget(max_unpacked, max_text_chars))
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


def _read(archive: zipfile.ZipFile, budget: Budget) -> DocxText:
    names = archive.NameToInfo
    package = _relationships(archive, "_rels/.rels", "", budget)
    main = package.first(_R_OFFICE_DOCUMENT) or "word/document.xml"
    if main not in names:
        raise KnowledgeValidationError(f"the DOCX is damaged or not a DOCX (no main document part {main!r})")
    directory, name = posixpath.split(main)
    related = _relationships(archive, posixpath.join(directory, "_rels", f"{name}.rels"), directory, budget)
    styles_part, core_part = related.first(_R_STYLES), package.first(_R_CORE)
    # each part is read once, in one role: a relationship naming the main part as a header reads nothing
    roles: dict[str, str] = {}
    for role, part in (
        ("main", main),
        ("styles", styles_part),
        ("core", core_part),
        ("footnote", related.first(_R_FOOTNOTES)),
        ("endnote", related.first(_R_ENDNOTES)),
        *(("furniture", target) for target in related.all(_R_HEADER, _R_FOOTER)),
    ):
        if part is not None and part in names:
            roles.setdefault(part, role)
    _check_declared(archive, list(roles), budget)
    read = {role: part for part, role in roles.items() if role != "furniture"}
    styles = Styles()
    if "styles" in read:
        parse_part(archive, read["styles"], budget, styles)
    title = _CoreTitle()
    if "core" in read:
        parse_part(archive, read["core"], budget, title)
    body = StoryReader(styles, budget)
    parse_part(archive, main, budget, body)
    blocks = body.blocks
    for kind in ("footnote", "endnote"):
        cited = body.note_references[kind]
        if kind in read and cited:
            notes = NoteReader(styles, budget, kind, cited)
            parse_part(archive, read[kind], budget, notes)
            blocks.extend(block for note in cited for block in notes.notes.get(note, ()))
    used = [related.by_id.get(reference) for reference in body.part_references]
    furniture = [part for part in used if part is not None and roles.get(part) == "furniture"]
    blocks.extend(_headers_and_footers(archive, furniture, styles, budget))
    return DocxText(blocks=blocks, title=title.text)


def _headers_and_footers(
    archive: zipfile.ZipFile, parts: list[str], styles: Styles, budget: Budget
) -> list[tuple[str, str]]:
    """The blocks of the headers and footers ``parts``, each part read once and each text kept once."""
    blocks: list[tuple[str, str]] = []
    seen: set[str] = set()
    for part in dict.fromkeys(parts):
        reader = StoryReader(styles, budget)
        parse_part(archive, part, budget, reader)
        for block in reader.blocks:
            if block[1] not in seen:
                seen.add(block[1])
                blocks.append(block)
    return blocks


def _check_declared(archive: zipfile.ZipFile, parts: list[str], budget: Budget) -> None:
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


def _relationships(archive: zipfile.ZipFile, part: str, base: str, budget: Budget) -> _Relationships:
    """The internal relationships of ``part``."""
    found = _Relationships(base)
    if part in archive.NameToInfo:
        parse_part(archive, part, budget, found)
    return found


class _Relationships(PartReader):
    """Target part names by relationship type (in the part's order) and by relationship id."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.by_type: dict[str, dict[str, None]] = {}
        self.by_id: dict[str, str] = {}

    def start(self, tag: str, attrs: Attributes) -> None:
        if tag == _RELATIONSHIP and attrs.get("TargetMode") != "External":
            target = attrs.get("Target", "")
            resolved = target.lstrip("/") if target.startswith("/") else posixpath.join(self.base, target)
            part = posixpath.normpath(resolved)
            self.by_type.setdefault(attrs.get("Type", ""), {}).setdefault(part)
            self.by_id.setdefault(attrs.get("Id", ""), part)

    def first(self, kind: str) -> str | None:
        return next(iter(self.by_type.get(kind, ())), None)

    def all(self, *kinds: str) -> list[str]:
        return [part for kind in kinds for part in self.by_type.get(kind, ())]


class _CoreTitle(PartReader):
    text_tags = frozenset({_DC_TITLE})

    def __init__(self) -> None:
        super().__init__()
        self.text: str | None = None

    def end(self, tag: str, attrs: Attributes, text: str) -> None:  # noqa: ARG002  # the title has none
        if tag == _DC_TITLE and self.text is None:
            self.text = text or None
