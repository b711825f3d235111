"""Streaming reads of the XML parts of a DOCX, for :mod:`notochord.extraction.docx`.

A part is unpacked in chunks and fed to expat, whose callbacks tell a :class:`PartReader` about
every element; no tree is built, so memory stays flat whatever the part holds, and the walk is
iterative, so nesting depth costs no stack. The bytes actually unpacked and the characters of text
produced are counted in one :class:`Budget` for the whole package (declared sizes can lie). A
document type declaration (which Word never writes) is refused, so no entity is ever expanded.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Final
from xml.parsers import expat

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError

__all__ = ["Attributes", "Budget", "PartReader", "W", "parse_part"]

# expat names a namespaced element or attribute "<uri>}<local>" with this separator
W: Final = "http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CHUNK: Final = 64 * 1024

Attributes = dict[str, str]


@dataclass
class Budget:
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


class PartReader:
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


def _chunks(archive: zipfile.ZipFile, part: str, budget: Budget) -> Iterator[bytes]:
    with archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            budget.bytes_left -= len(chunk)
            if budget.bytes_left < 0:
                raise DocumentTooLargeError(
                    f"the DOCX unpacks to more than {budget.max_bytes} bytes of text parts, over the limit"
                )
            yield chunk


def parse_part(archive: zipfile.ZipFile, part: str, budget: Budget, handler: PartReader) -> None:
    """Feed ``part`` to expat in chunks and tell ``handler`` about every element."""
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
