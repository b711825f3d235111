"""Document text extraction: plain text, Markdown, HTML, PDF and DOCX to Markdown-flavoured text.

Rules (P-GEN-02, P-NET-10):

- Pure functions over bytes, with no network, store or permission: gems reach them through
  ``ctx.extract`` (:mod:`notochord.gems.api.extract`), the REST service through the extractor the
  server injects, and ``notochord docs import`` through :func:`extract_file`.
- Supported: plain text (and other ``text/*``), Markdown, HTML, PDF and DOCX. The kind is taken from
  the content type; a missing or generic one (``application/octet-stream``) falls back to the file
  name's extension and then to the content itself (``%PDF-``, a ZIP holding ``word/document.xml``,
  ``<html``). Anything else, a corrupt file, an encrypted PDF (:mod:`notochord.extraction.pdf` says
  by password or by certificate) or DOCX, an empty file, a file without
  any text or a declared charset that is no character set text is written in raises
  :class:`~notochord.errors.KnowledgeValidationError` with a message saying what to do.
- Output is Markdown-flavoured plain text: HTML and DOCX headings become ``#`` headings, list items
  ``- `` lines; HTML ``script``, ``style``, ``nav``, ``noscript``, ``template``, ``iframe``, ``svg``,
  ``title``, ``video``, ``audio``, ``canvas`` and ``datalist`` elements are dropped (an HTML
  title is the title wherever it stands, never body text), and so is what the page's own
  ``hidden`` and ``popover`` attributes, closed ``dialog`` elements, inline styles and ``<style>``
  sheets hide (``display: none``, ``content-visibility: hidden``, ``visibility: hidden``,
  ``opacity: 0``, ``font-size: 0``), as a browser applies them, in the page's mode
  (:mod:`notochord.extraction.html_shown`); linked sheets are never fetched. Ruby annotations
  (``rt``) are read beside their base; CDATA sections, which HTML reads as comments, are not.
  An image stands for its
  alternative text where it says something, as for a DOCX picture
  (:mod:`notochord.extraction.alt_text`). Paragraphs, and elements a browser shows apart, are
  separated by a blank line. Markdown front matter and HTML comments are left out
  of the text, and front matter gives the title (:mod:`notochord.extraction.markdown`). Plain text
  is read by its byte order mark (UTF-8, UTF-16, UTF-32), recognised as unmarked UTF-16, or decoded as UTF-8 with
  a Windows-1252 fallback (:mod:`notochord.extraction.encoding`).
  Text and title hold no NUL and no lone surrogate (it becomes U+FFFD), so any store can take them;
  a title is one line without control characters.
- Bounds: at most :data:`MAX_INPUT_BYTES` of input, :data:`MAX_PDF_PAGES` PDF pages,
  :data:`MAX_DOCX_UNPACKED` bytes of XML read from a DOCX (declared sizes and compression ratio
  checked before unpacking, bytes counted while streaming, against ZIP bombs) and
  :data:`MAX_TEXT_CHARS` characters of output.
- :func:`extract_file` reads a host path: it is for the host only (import). A gem never gets a way
  to name a host path: its files reach extraction as bytes it already holds.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from notochord.charsets import text_codec
from notochord.errors import DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.alt_text import meaningful_alt_text
from notochord.extraction.document_mode import quirks_mode
from notochord.extraction.docx import MAX_DOCX_UNPACKED, read_docx
from notochord.extraction.encoding import byte_order_mark, unmarked_utf16
from notochord.extraction.html_shown import drop_unshown, page_style_sheets, shown_string_types, take_out
from notochord.extraction.markdown import read_markdown
from notochord.extraction.pdf import read_pdf

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from bs4.element import PageElement, Tag

__all__ = [
    "MAX_DOCX_UNPACKED",
    "MAX_INPUT_BYTES",
    "MAX_PDF_PAGES",
    "MAX_TEXT_CHARS",
    "ExtractedDocument",
    "cannot_extract",
    "detect_kind",
    "extract_file",
    "extract_text",
    "file_extension",
    "read_document",
    "url_filename",
]

MAX_INPUT_BYTES: Final = 64 * 1024 * 1024
MAX_PDF_PAGES: Final = 5000
MAX_TEXT_CHARS: Final = 20_000_000

Kind = Literal["text", "markdown", "html", "pdf", "docx"]

# The HTML parser's charset detection logs what it could not decode ("Some characters could not be
# decoded"); with no handler anywhere, Python's last-resort handler would print that to a CLI user's
# terminal beside our own message. A NullHandler stops only that fallback: an application that
# configures logging still receives the records.
logging.getLogger("bs4").addHandler(logging.NullHandler())

CONTENT_TYPES: Final[dict[Kind, str]] = {
    "text": "text/plain",
    "markdown": "text/markdown",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
_TYPE_KINDS: Final[dict[str, Kind]] = {
    **{content_type: kind for kind, content_type in CONTENT_TYPES.items()},
    "text/x-markdown": "markdown",
    "application/xhtml+xml": "html",
    "application/json": "text",
}
_GENERIC_TYPES: Final = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/x-download", "application/download"}
)
_EXTENSION_KINDS: Final[dict[str, Kind]] = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".csv": "text",
    ".tsv": "text",
    ".json": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
_SUPPORTED: Final = "plain text, Markdown, HTML, PDF and DOCX"
# what a browser never shows as the page's text: ``title`` is the title wherever it stands (with or
# without ``head``), and media elements show their content only where they are not supported
_DROPPED_TAGS: Final = (
    "script", "style", "nav", "noscript", "template", "iframe", "svg", "head", "title", "video", "audio",
    "canvas", "datalist",
)  # fmt: skip
_HEADINGS: Final = {f"h{level}": level for level in range(1, 7)}
_BLOCK_TAGS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "dialog", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "main",
        "ol", "p", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul", "br",
        "caption", "center", "legend", "select", "optgroup", "option", "menu", "hgroup", "search", "xmp",
        "listing", "plaintext", "frameset", "noframes", "dir",
    }
)  # fmt: skip
_BLANK_RUNS: Final = re.compile(r"\n{3,}")
_SURROGATES: Final = re.compile("[\ud800-\udfff]")
# control characters str.split() does not count as whitespace: no title shows them
_TITLE_CONTROLS: Final = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
# A central directory entry of a ZIP naming the main part of a DOCX: the signature, 24 bytes of
# versions, flags, method, times, CRC and sizes, the name's length (17), 16 bytes of other lengths,
# attributes and offset, then the name. Found by a scan, the archive's listing is never built: a
# small upload can list millions of entries, and the sniff runs in the caller's process.
_DOCX_ENTRY: Final = re.compile(rb"PK\x01\x02.{24}\x11\x00.{16}word/document\.xml", re.DOTALL)
_REAL_CHARSET: Final = "; send the file with the charset it is written in (such as utf-8), or with none"
_DOCX_HEADING: Final = re.compile(r"^Heading ([1-6])$")


class ExtractedDocument(BaseModel):
    """The text of one document. ``model_dump(by_alias=True)`` gives ``contentType`` for JavaScript.

    ``content_type`` is the kind that was extracted (``application/pdf``, ``text/html``, …);
    ``url`` is the final URL of a downloaded document, None for bytes handed in directly.
    """

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    title: str | None
    text: str
    content_type: str
    url: str | None = None

    def __getitem__(self, key: str) -> Any:
        """Also readable like a plain object: ``doc["text"]``, ``doc["contentType"]``."""
        for name, field in type(self).model_fields.items():
            if key in (name, field.alias):
                return getattr(self, name)
        raise KeyError(key)


def cannot_extract(
    what: str, problem: str, kind: type[KnowledgeValidationError] = KnowledgeValidationError
) -> KnowledgeValidationError:
    """The refusal of ``what`` in the extractor's words: ``cannot extract text from <what>: <problem>``."""
    return kind(f"cannot extract text from {what}: {problem}")


def _too_large(what: str, problem: str) -> KnowledgeValidationError:
    return cannot_extract(what, problem, DocumentTooLargeError)


def _unsupported(what: str, problem: str) -> KnowledgeValidationError:
    return cannot_extract(what, problem, UnsupportedDocumentError)


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _charset(content_type: str | None) -> str | None:
    for parameter in (content_type or "").split(";")[1:]:
        key, _, value = parameter.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return None


def file_extension(filename: str | None) -> str:
    """The lowercased suffix of a file name (``".pdf"``), or ``""``; a dotfile has none."""
    return PurePosixPath(filename or "").suffix.lower()


def _is_docx_zip(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04") and _DOCX_ENTRY.search(data) is not None


def _sniff(data: bytes) -> Kind | None:
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if _is_docx_zip(data):
        return "docx"
    marked = byte_order_mark(data)
    codec, skip = marked if marked is not None else ("utf-8", 0)
    head = data[skip : skip + 2048].decode(codec, errors="replace").lstrip(" \t\r\n").lower()
    if head.startswith(("<!doctype html", "<html")):
        return "html"
    if marked is not None or unmarked_utf16(data) is not None:
        return "text"
    sample = data[:8192]
    if b"\x00" in sample:
        return None
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A sample may end inside a multi-byte character; only an error before its last bytes counts.
        if exc.start < len(sample) - 3:
            return None
    return "text"


def detect_kind(data: bytes, *, filename: str | None, content_type: str | None) -> Kind:
    """Which extractor reads ``data`` (see the module rules for the order).

    Raises:
        KnowledgeValidationError: the type is not supported.
    """
    media = _media_type(content_type)
    what = filename or media or "the file"
    extension = file_extension(filename)
    if media not in _GENERIC_TYPES:
        kind = _TYPE_KINDS.get(media)
        if kind is None and media.startswith("text/"):
            kind = "text"
        if kind is None:
            raise _unsupported(what, f"the type {media} is not supported (supported: {_SUPPORTED})")
        if kind == "text" and _EXTENSION_KINDS.get(extension) == "markdown":
            return "markdown"
        return kind
    by_name = _EXTENSION_KINDS.get(extension)
    if by_name is not None:
        return by_name
    sniffed = _sniff(data)
    if sniffed is None:
        named = f" ({extension} files)" if extension else ""
        raise _unsupported(what, f"it is not a supported document{named} (supported: {_SUPPORTED})")
    return sniffed


def _storable(text: str) -> str:
    """``text`` without lone surrogates, which no store or UTF-8 encoder takes.

    A PDF's character maps, a UTF-7 file or a title string can spell them. A pair that is split in
    two code points is joined into its character; a lone one becomes U+FFFD.
    """
    if _SURROGATES.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _storable(_BLANK_RUNS.sub("\n\n", "\n".join(lines).replace("\x00", "")).strip())


def _tidy_title(title: str | None) -> str | None:
    """A title on one line, without control characters (a NUL in a PDF's or a page's title)."""
    if title is None:
        return None
    return " ".join(_TITLE_CONTROLS.sub("", _storable(title)).split()) or None


def _charset_problem(declared: str) -> str | None:
    """Why the declared charset cannot decode a file's text, or None when it can."""
    if text_codec(declared) is not None:
        return None
    try:
        codecs.lookup(declared)
    except (LookupError, ValueError):  # ValueError: a name holding a NUL
        return f"the declared charset {declared!r} is unknown{_REAL_CHARSET}"
    return f"the declared charset {declared!r} is not a character set text is written in{_REAL_CHARSET}"


def _decode_text(data: bytes, content_type: str | None, what: str) -> str:
    marked = byte_order_mark(data)
    if marked is not None:
        codec, length = marked
        return data[length:].decode(codec, errors="replace")
    declared = _charset(content_type)
    if declared is not None:
        problem = _charset_problem(declared)
        if problem is not None:
            raise cannot_extract(what, problem)
        return data.decode(declared, errors="replace")
    if b"\x00" in data:
        utf16 = unmarked_utf16(data)
        if utf16 is None:
            raise cannot_extract(what, "it is a binary file, not text")
        return data.decode(utf16, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Legacy single-byte text is far more common than anything else that is not UTF-8.
        return data.decode("cp1252", errors="replace")


class _HtmlText:
    """Walks parsed HTML into Markdown-flavoured paragraphs."""

    def __init__(self) -> None:
        self._text_types = shown_string_types()
        self.blocks: list[str] = []
        self._inline: list[str] = []
        self._prefix = ""

    def flush(self) -> None:
        text = " ".join("".join(self._inline).split())
        self._inline = []
        if text:
            self.blocks.append(self._prefix + text)
            self._prefix = ""

    def walk(self, root: Tag) -> None:
        """Read ``root``'s descendants in document order.

        With a stack of its own, not recursion: HTML may leave ``</p>`` and ``</li>`` out, and the
        parser nests each such paragraph in the one before, so an ordinary long page can be
        thousands of elements deep.
        """
        from bs4.element import NavigableString, Tag

        # each level: the children still to read, and what to do once they are read
        stack: list[tuple[Iterator[PageElement], Callable[[], None] | None]] = [(iter(root.children), None)]
        while stack:
            children, after = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                if after is not None:
                    after()
                continue
            if isinstance(child, NavigableString):
                if type(child) in self._text_types:
                    self._inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            then = self._enter(child)
            if then is not False:
                stack.append((iter(child.children), then))

    def _enter(self, tag: Tag) -> Callable[[], None] | Literal[False] | None:
        """Begin ``tag``: False when it is read whole here, else what to do after its children."""
        name = tag.name.lower()
        level = _HEADINGS.get(name)
        if level is not None:
            self.flush()
            heading = " ".join(tag.get_text(" ", types=self._text_types).split())
            if heading:
                self.blocks.append(f"{'#' * level} {heading}")
            return False
        if name == "pre":
            self.flush()
            preformatted = tag.get_text(types=self._text_types).strip("\n")
            if preformatted.strip():
                self.blocks.append(preformatted)
            return False
        if name == "li":
            self.flush()
            self._prefix = "- "
            return self.flush
        if name in ("td", "th", "rt"):  # a ruby annotation is a word of its own beside its base
            self._inline.append(" ")
            return self._space
        if name == "img":
            self._inline.append(f" {_image_text(tag)} ")
            return False
        if name in _BLOCK_TAGS:
            self.flush()
            return self.flush
        return None

    def _space(self) -> None:
        self._inline.append(" ")


def _image_text(image: Tag) -> str:
    """What a screen reader reads for ``image``: its alternative text when it says something, and
    nothing for an image hidden from assistive technology (``role="presentation"``, ``aria-hidden``)."""
    alt = image.get("alt")
    role = str(image.get("role") or "").strip().lower()
    if not isinstance(alt, str) or role in ("presentation", "none") or image.get("aria-hidden") == "true":
        return ""
    return meaningful_alt_text(alt)


def _html(data: bytes, content_type: str | None, what: str) -> tuple[str | None, str]:
    from bs4 import BeautifulSoup

    declared = _charset(content_type)
    if declared is not None and _charset_problem(declared) is not None:
        declared = None  # as the parser does with a charset it does not know: the page's own or a guess
    try:
        soup = BeautifulSoup(data, "html.parser", from_encoding=declared)
    except MemoryError:  # not the file's fault as such: the caller says which ceiling it met
        raise
    except Exception as exc:  # the parser meets untrusted input and may fail in any way
        raise cannot_extract(what, f"the HTML could not be parsed ({exc})") from exc
    # read before head and svg go: their sheets style the whole page, and what stands before the
    # doctype decides the mode
    sheets = page_style_sheets(soup)
    quirks = quirks_mode(
        soup, may_be_xml=_media_type(content_type) == "application/xhtml+xml" or what.lower().endswith(".xhtml")
    )
    # an icon's <svg><title> is no page title; a browser takes the first title of the page itself
    take_out(soup.find_all("svg"))
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text(" ").split()) if title_tag is not None else ""
    take_out(soup.find_all(_DROPPED_TAGS))
    # hidden parts go before the walk: headings and preformatted blocks are read whole
    drop_unshown(soup, sheets, quirks=quirks)
    walker = _HtmlText()
    walker.walk(soup)
    walker.flush()
    text = "\n\n".join(walker.blocks)
    if not title:
        title = next((b.lstrip("#").strip() for b in walker.blocks if b.startswith("# ")), "")
    return title or None, text


def _pdf(data: bytes, what: str) -> tuple[str | None, str]:
    try:
        title, pages = read_pdf(data, max_pages=MAX_PDF_PAGES, max_text_chars=MAX_TEXT_CHARS)
    except KnowledgeValidationError as exc:
        raise cannot_extract(what, exc.message, type(exc)) from exc
    return title, "\n\n".join(pages)


def _docx(data: bytes, what: str) -> tuple[str | None, str]:
    try:
        # the text bound is checked while the XML is read, so a small upload of huge XML stops early
        package = read_docx(io.BytesIO(data), max_text_chars=MAX_TEXT_CHARS, max_unpacked=MAX_DOCX_UNPACKED)
    except KnowledgeValidationError as exc:
        raise cannot_extract(what, exc.message, type(exc)) from exc
    blocks, core_title = package.blocks, package.title
    lines: list[str] = []
    title = core_title.strip() if core_title else ""
    for style, raw in blocks:
        text = raw.strip()
        if not text:
            continue
        heading = _DOCX_HEADING.match(style)
        if style == "Title":
            title = title or text
            lines.append(f"# {text}")
        elif heading is not None:
            lines.append(f"{'#' * int(heading.group(1))} {text}")
        elif style.startswith("List Number"):
            lines.append(f"1. {text}")
        elif style.startswith("List"):
            lines.append(f"- {text}")
        else:
            lines.append(text)
    if not title:
        title = next((line[2:] for line in lines if line.startswith("# ")), "")
    return title or None, "\n\n".join(lines)


def extract_text(data: bytes, *, filename: str | None = None, content_type: str | None = None) -> ExtractedDocument:
    """Extract the text of one document held in memory.

    Args:
        data: the file's bytes.
        filename: its name, used for the kind when the content type is missing or generic.
        content_type: its declared media type, with an optional ``charset``.

    Raises:
        KnowledgeValidationError: unsupported, corrupt, encrypted, too large or without text.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise KnowledgeValidationError(f"extract needs bytes, not {type(data).__name__}")
    data = bytes(data)
    what = filename or "the file"
    if len(data) > MAX_INPUT_BYTES:
        raise _too_large(what, f"it is {len(data)} bytes, over the limit of {MAX_INPUT_BYTES} bytes")
    kind = detect_kind(data, filename=filename, content_type=content_type)
    if not data:  # said as it is, not as a PDF or a DOCX that is "damaged"
        raise cannot_extract(what, "the file is empty (0 bytes)")
    title: str | None
    if kind == "pdf":
        title, text = _pdf(data, what)
    elif kind == "docx":
        title, text = _docx(data, what)
    elif kind == "html":
        title, text = _html(data, content_type, what)
    else:
        text = _decode_text(data, content_type, what)
        title = None
        if kind == "markdown":
            title, text = read_markdown(text)
    text = _tidy(text)
    if not text:
        raise cannot_extract(what, "it contains no text")
    if len(text) > MAX_TEXT_CHARS:
        raise _too_large(what, f"its text is {len(text)} characters, over the limit of {MAX_TEXT_CHARS}")
    return ExtractedDocument(title=_tidy_title(title), text=text, content_type=CONTENT_TYPES[kind])


def extract_file(path: str | Path, *, content_type: str | None = None) -> ExtractedDocument:
    """Extract the text of a file on the host (uploads, imports); never offered to gems.

    Raises:
        KnowledgeValidationError: the file cannot be read, or see :func:`extract_text`.
    """
    source = Path(path)
    return extract_text(read_document(source), filename=source.name, content_type=content_type)


def read_document(source: Path) -> bytes:
    """The bytes of a file on the host that is to be extracted, refused in words when too large.

    Raises:
        KnowledgeValidationError: the file cannot be read or is over :data:`MAX_INPUT_BYTES`.
    """
    try:
        size = source.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise _too_large(source.name, f"it is {size} bytes, over the limit of {MAX_INPUT_BYTES} bytes")
        return source.read_bytes()
    except OSError as exc:
        raise KnowledgeValidationError(f"cannot read {source}: {exc.strerror or exc}") from exc


def url_filename(url: str) -> str | None:
    """The file name a URL's path ends in, percent-decoded, or ``None``."""
    try:
        name = PurePosixPath(unquote(urlsplit(url).path)).name
    except ValueError:
        return None
    return name or None
