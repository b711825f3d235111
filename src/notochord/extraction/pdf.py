"""The text of a PDF, page by page with hard bounds, for :mod:`notochord.extraction.text`.

Refusals carry only the problem (``the PDF is …``); :mod:`notochord.extraction.text` names the file.

- A file a viewer opens is read too: when the cross-reference table or the trailer is missing (a
  download cut short, a hand-made file), a trailer is appended that sends the parser to rebuild the
  table from the objects themselves, as viewers do. A file that is damaged beyond that is refused
  as damaged, with what the parser found.
- Protection is said for what it is: a password (remove it), or a certificate or another security
  handler (open it where it can be opened and save a copy without protection). Neither is "damaged".
- The parser's own safety limits (a stream that unpacks to tens of megabytes, a page tree thousands
  deep) are refused as too large, not as damage.
- Glyphs without a text mapping come out as control codes or U+FFFD; a PDF with nothing else is
  said to have no text layer, as a scanned one is.
- A simple font (most often a Type3 font: the bitmap fonts of older TeX output, some report
  generators) may name its glyphs privately (``/g12``) and have no ToUnicode map: nothing then says
  which characters its glyphs are, and the parser gives the glyph names. Those names are no text a
  reader sees and would only make searches match nonsense, so they are left out, and one note at
  the end of the text names the pages that lost text (searching can then find why a word is
  missing). Names from the standard glyph list (``/e``, ``/uni00E9``) and fonts with a ToUnicode
  map are read as usual. A PDF with no other text is refused, saying so. The standard list is the
  parser's own (:func:`standard_glyph_names`); without it, glyph names are left in the text.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError

if TYPE_CHECKING:
    from pypdf import PageObject, PdfReader

__all__ = ["read_pdf", "standard_glyph_names"]

# pypdf logs what it repairs in a damaged file ("invalid pdf header", "EOF marker not found"); with no
# handler anywhere, Python's last-resort handler would print that to a CLI user's terminal beside our
# own message. A NullHandler stops only that fallback: an application that configures logging still
# receives the records.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

_SPACE: Final = rb"[ \t\r\n\f\x00]"
# "12 0 obj": the start of an indirect object, found by a scan when the table indexing them is gone
_OBJECT: Final = re.compile(rb"(?<![0-9])([0-9]{1,10})" + _SPACE + rb"+[0-9]{1,5}" + _SPACE + rb"+obj(?![A-Za-z0-9])")
_ROOT: Final = re.compile(rb"/Root" + _SPACE + rb"*([0-9]{1,10})" + _SPACE + rb"+([0-9]{1,5})" + _SPACE + rb"+R")
_ENCRYPT_REFERENCE: Final = re.compile(
    rb"/Encrypt" + _SPACE + rb"*([0-9]{1,10})" + _SPACE + rb"+([0-9]{1,5})" + _SPACE + rb"+R"
)
_ENCRYPT_INLINE: Final = re.compile(rb"/Encrypt" + _SPACE + rb"*<<(.{0,4096}?)>>", re.DOTALL)
_FILTER: Final = re.compile(rb"/Filter" + _SPACE + rb"*/([A-Za-z0-9_.#+-]{1,127})")
# what pypdf makes of a glyph it cannot map to a character; no reader sees these as text
_UNMAPPED: Final = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")
# a glyph name that says its character without the standard list: uniXXXX or uXXXX to uXXXXXX
_UNICODE_NAME: Final = re.compile(r"/(?:uni[0-9A-Fa-f]{4}|u[0-9A-Fa-f]{4,6})")
_UNREAD_FONT: Final = "its font does not say which characters its glyphs stand for"
_PASSWORD: Final = "the PDF is password-protected; remove the password and try again"
_CERTIFICATE: Final = (
    "the PDF is protected with a certificate (public-key security), not a password; open it with the"
    " certificate it was protected for, save a copy without protection and try again"
)


def read_pdf(data: bytes, *, max_pages: int, max_text_chars: int) -> tuple[str | None, list[str]]:
    """The title and the non-empty page texts of the PDF in ``data``.

    Raises:
        KnowledgeValidationError: damaged, protected or without a text layer.
        DocumentTooLargeError: over ``max_pages`` pages or ``max_text_chars`` characters, or a part
            of it is too large to unpack.
    """
    from pypdf.errors import LimitReachedError

    try:
        reader = _open(data)
        count = len(reader.pages)
        if count > max_pages:
            raise DocumentTooLargeError(f"the PDF has {count} pages, over the limit of {max_pages}")
        pages: list[str] = []
        unread: list[int] = []  # the numbers of the pages that lost text to glyph names
        characters = 0
        for number, page in enumerate(reader.pages, start=1):
            page_text, lost = _page_text(page)
            if lost:
                unread.append(number)
            characters += len(page_text)
            if characters > max_text_chars:  # said now, not after reading every other page too
                raise DocumentTooLargeError(f"its text is over the limit of {max_text_chars} characters")
            if page_text.strip():
                pages.append(page_text.strip())
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except (KnowledgeValidationError, MemoryError):
        raise
    except LimitReachedError as exc:  # the parser's guard against bombs: the file is large, not broken
        raise DocumentTooLargeError(
            f"a part of the PDF is too large to unpack safely{_detail(exc)}; a PDF this large inside is"
            " usually built to be slow: save or export it again, or split it, and retry"
        ) from exc
    except Exception as exc:  # a corrupt PDF makes the parser fail in many ways; all mean "corrupt"
        raise KnowledgeValidationError(f"the PDF is damaged or not a PDF{_detail(exc)}") from exc
    if not pages and unread:
        raise KnowledgeValidationError(
            "the PDF's text is drawn in fonts that do not say which characters their glyphs stand for, so it"
            " cannot be read (as with scanned pages, that needs OCR, which is not supported)"
        )
    if not pages:
        raise KnowledgeValidationError("the PDF has no text layer (scanned pages need OCR, which is not supported)")
    if unread:
        pages.append(f"[Text on {_page_list(unread)} could not be read and was left out: {_UNREAD_FONT}.]")
    return (title.strip() or None) if isinstance(title, str) else None, pages


def _page_text(page: PageObject) -> tuple[str, bool]:
    """The text of ``page`` without unmapped glyphs, and whether glyph names were left out of it."""
    names: set[str] = set()
    # by id, holding the font so that its id is not reused while the page is read
    fonts: dict[int, tuple[Any, frozenset[str]]] = {}

    def visit(text: str, _cm: Any, _tm: Any, font: Any, _size: Any) -> None:
        # the parser says which font drew each piece of text: only a font's own private names count
        if "/" in text and font is not None:
            if id(font) not in fonts:
                fonts[id(font)] = (font, _private_glyph_names(font))
            names.update(name for name in fonts[id(font)][1] if name in text)

    text = page.extract_text(visitor_text=visit) or ""
    if names:
        # longest first, so /g12 is not read as /g1 and a 2
        alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
        text = re.sub(alternatives, "", text)
    return _UNMAPPED.sub("", text), bool(names)


def standard_glyph_names() -> Mapping[str, str] | None:
    """The standard glyph list the parser maps glyph names with, or None if it cannot be found.

    It is the parser's private module, read on purpose: which names are private is exactly which
    names the parser could not map, and only its own list says that (a public copy of the list
    would differ from it where the parser's differs). If another version moves it, no name is
    taken for private, so text is never lost to a wrong guess: the glyph names are then left in.
    """
    try:
        from pypdf._codecs import adobe_glyphs
    except ImportError:
        return None
    return adobe_glyphs if isinstance(adobe_glyphs, Mapping) and adobe_glyphs else None


def _private_glyph_names(font: Any) -> frozenset[str]:
    """The glyph names of a simple font without a ToUnicode map that say no character, which the
    parser gives as text."""
    adobe_glyphs = standard_glyph_names()
    if adobe_glyphs is None:
        return frozenset()
    try:
        if "/ToUnicode" in font or font.get("/Subtype") == "/Type0":
            return frozenset()
        from pypdf.generic import ArrayObject, DictionaryObject

        encoding = font.get("/Encoding")
        encoding = encoding.get_object() if encoding is not None else None
        if not isinstance(encoding, DictionaryObject) or "/Differences" not in encoding:
            return frozenset()  # a named encoding (WinAnsiEncoding, ...) maps every code
        differences = encoding["/Differences"].get_object()
        if not isinstance(differences, ArrayObject):
            return frozenset()
        return frozenset(
            str(name)
            for name in differences
            if isinstance(name, str) and name not in adobe_glyphs and _UNICODE_NAME.fullmatch(name) is None
        )
    except MemoryError:
        raise
    except Exception:  # a malformed encoding fails in many ways; the parser read it as well as it could
        return frozenset()


def _page_list(numbers: list[int]) -> str:
    """``page 3`` or ``pages 1-3, 7 and 9``."""
    ranges: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    if len(ranges) == 1:
        return f"page {ranges[0]}" if "-" not in ranges[0] else f"pages {ranges[0]}"
    return f"pages {', '.join(ranges[:-1])} and {ranges[-1]}"


def _open(data: bytes) -> PdfReader:
    """A reader of ``data`` whose page tree is reachable, rebuilding a lost table as viewers do."""
    try:
        return _opened(data)
    except (KnowledgeValidationError, MemoryError):
        raise
    except Exception as first:
        # the parser refuses a handler it does not implement as it refuses damage: say which it is
        _refuse_protection(_security_handler(data))
        repaired = _with_trailer(data)
        if repaired is None:
            raise
        try:
            return _opened(repaired)
        except (KnowledgeValidationError, MemoryError):
            raise
        except Exception:
            raise first from None  # the first failure says more about the file than the repair's


def _opened(data: bytes) -> PdfReader:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        _decrypt(reader)
    _ = reader.root_object["/Pages"]  # a missing catalog is found now, while a repair can still help
    return reader


def _decrypt(reader: PdfReader) -> None:
    """Open a PDF protected without a user password, or say what protects it."""
    encryption = reader.trailer["/Encrypt"].get_object()
    handler = encryption.get("/Filter") if isinstance(encryption, dict) else None
    _refuse_protection(str(handler).lstrip("/") if isinstance(handler, str) else None)
    if not reader.decrypt(""):
        raise KnowledgeValidationError(_PASSWORD)


def _refuse_protection(handler: str | None) -> None:
    """Refuse a PDF protected by ``handler`` unless it is the password handler (or there is none)."""
    if handler is None or handler == "Standard":
        return
    if handler == "Adobe.PubSec":
        raise KnowledgeValidationError(_CERTIFICATE)
    raise KnowledgeValidationError(
        f"the PDF is protected by a security handler other than a password ({handler[:60]}); open it in the"
        " program that protected it, save a copy without protection and try again"
    )


def _security_handler(data: bytes) -> str | None:
    """The name of the security handler the trailer's ``/Encrypt`` names, read from the bytes.

    The encryption dictionary is never inside an object stream, so a scan finds it even where the
    parser stopped before reading it.
    """
    reference = _ENCRYPT_REFERENCE.search(data)
    if reference is not None:
        number, generation = reference.groups()
        found = re.search(
            rb"(?<![0-9])" + number + _SPACE + rb"+" + generation + _SPACE + rb"+obj(.{0,4096}?)endobj", data, re.DOTALL
        )
        body = found.group(1) if found is not None else b""
    else:
        inline = _ENCRYPT_INLINE.search(data)
        body = inline.group(1) if inline is not None else b""
    handler = _FILTER.search(body)
    return handler.group(1).decode("latin-1") if handler is not None else None


def _with_trailer(data: bytes) -> bytes | None:
    """``data`` with a trailer that makes the parser rebuild its table from the objects, or None
    when there are no objects to rebuild it from."""
    highest = max((int(found.group(1)) for found in _OBJECT.finditer(data)), default=None)
    if highest is None:
        return None
    roots = _ROOT.findall(data)
    root = b" /Root %s %s R" % roots[-1] if roots else b""
    # startxref 0 points at no table, which is what makes the parser scan for the objects
    return data + b"\ntrailer\n<< /Size %d%s >>\nstartxref\n0\n%%%%EOF\n" % (highest + 1, root)


def _detail(exc: BaseException) -> str:
    """What the parser said about a damaged file, without its class names: `` (what it said)``."""
    said = " ".join(str(exc).split())
    return f" ({said[:200]})" if said else ""
