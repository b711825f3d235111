"""Document text extraction: plain text, Markdown, HTML, PDF and DOCX to Markdown-flavoured text.

Rules (P-GEN-02, P-NET-10):

- Pure functions over bytes, with no network, store or permission: gems reach them through
  ``ctx.extract`` (:mod:`notochord.gems.api.extract`), the REST service through the extractor the
  server injects, and ``notochord docs import`` through :func:`extract_file`.
- Supported: plain text (and other ``text/*``), Markdown, HTML, PDF and DOCX. The kind is taken from
  the content type; a missing or generic one (``application/octet-stream``) falls back to the file
  name's extension and then to the content itself (``%PDF-``, a ZIP holding ``word/document.xml``,
  ``<html``). Anything else, a corrupt file, an encrypted PDF or a file without any text raises
  :class:`~notochord.errors.KnowledgeValidationError` with a message saying what to do.
- Output is Markdown-flavoured plain text: HTML and DOCX headings become ``#`` headings, list items
  ``- `` lines; HTML ``script``, ``style``, ``nav``, ``noscript``, ``template``, ``iframe`` and
  ``svg`` elements and ``hidden`` elements are dropped. Paragraphs are separated by a blank line.
- Bounds: at most :data:`MAX_INPUT_BYTES` of input, :data:`MAX_PDF_PAGES` PDF pages,
  :data:`MAX_DOCX_UNPACKED` bytes of XML read from a DOCX (declared sizes and compression ratio
  checked before unpacking, bytes counted while streaming, against ZIP bombs) and
  :data:`MAX_TEXT_CHARS` characters of output.
- :func:`extract_file` reads a host path: it is for the host only (import). A gem never gets a way
  to name a host path: its files reach extraction as bytes it already holds.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.docx import MAX_DOCX_UNPACKED, read_docx

if TYPE_CHECKING:
    from bs4.element import Tag

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

# pypdf logs what it repairs in a damaged file ("invalid pdf header", "EOF marker not found"); with no
# handler anywhere, Python's last-resort handler would print that to a CLI user's terminal beside our
# own message. A NullHandler stops only that fallback: an application that configures logging still
# receives the records.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

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
_DROPPED_TAGS: Final = ("script", "style", "nav", "noscript", "template", "iframe", "svg", "head")
_HEADINGS: Final = {f"h{level}": level for level in range(1, 7)}
_BLOCK_TAGS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "dialog", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "main",
        "ol", "p", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul", "br",
    }
)  # fmt: skip
_BLANK_RUNS: Final = re.compile(r"\n{3,}")
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
    if not data.startswith(b"PK\x03\x04"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _sniff(data: bytes) -> Kind | None:
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if _is_docx_zip(data):
        return "docx"
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    sample = data[:8192]
    if b"\x00" in sample and not sample.startswith((b"\xff\xfe", b"\xfe\xff")):
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


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines).replace("\x00", "")).strip()


def _decode_text(data: bytes, content_type: str | None, what: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    declared = _charset(content_type)
    if declared is not None:
        try:
            return data.decode(declared, errors="replace")
        except LookupError as exc:
            raise cannot_extract(what, f"the declared charset {declared!r} is unknown") from exc
    if b"\x00" in data:
        raise cannot_extract(what, "it is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Legacy single-byte text is far more common than anything else that is not UTF-8.
        return data.decode("cp1252", errors="replace")


def _markdown_title(text: str) -> str | None:
    for line in text.split("\n"):
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


class _HtmlText:
    """Walks parsed HTML into Markdown-flavoured paragraphs."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self._inline: list[str] = []
        self._prefix = ""

    def flush(self) -> None:
        text = " ".join("".join(self._inline).split())
        self._inline = []
        if text:
            self.blocks.append(self._prefix + text)
            self._prefix = ""

    def walk(self, node: Tag) -> None:
        from bs4.element import NavigableString, Tag

        for child in node.children:
            if isinstance(child, NavigableString):
                # Comments, doctypes, CDATA and processing instructions are subclasses; only text counts.
                if type(child) is NavigableString:
                    self._inline.append(str(child))
                continue
            if not isinstance(child, Tag) or child.has_attr("hidden"):
                continue
            name = child.name.lower()
            level = _HEADINGS.get(name)
            if level is not None:
                self.flush()
                heading = " ".join(child.get_text(" ").split())
                if heading:
                    self.blocks.append(f"{'#' * level} {heading}")
                continue
            if name == "pre":
                self.flush()
                preformatted = child.get_text().strip("\n")
                if preformatted.strip():
                    self.blocks.append(preformatted)
                continue
            if name == "li":
                self.flush()
                self._prefix = "- "
                self.walk(child)
                self.flush()
                continue
            if name in ("td", "th"):
                self._inline.append(" ")
                self.walk(child)
                self._inline.append(" ")
                continue
            block = name in _BLOCK_TAGS
            if block:
                self.flush()
            self.walk(child)
            if block:
                self.flush()


def _html(data: bytes, content_type: str | None, what: str) -> tuple[str | None, str]:
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(data, "html.parser", from_encoding=_charset(content_type))
    except MemoryError:  # not the file's fault as such: the caller says which ceiling it met
        raise
    except Exception as exc:  # the parser meets untrusted input and may fail in any way
        raise cannot_extract(what, f"the HTML could not be parsed ({exc})") from exc
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text(" ").split()) if title_tag is not None else ""
    for element in soup.find_all(_DROPPED_TAGS):
        element.decompose()
    walker = _HtmlText()
    try:
        walker.walk(soup)
    except RecursionError as exc:
        raise cannot_extract(what, "the HTML is nested too deeply") from exc
    walker.flush()
    text = "\n\n".join(walker.blocks)
    if not title:
        title = next((b.lstrip("#").strip() for b in walker.blocks if b.startswith("# ")), "")
    return title or None, text


def _detail(exc: BaseException) -> str:
    """What the parser said about a damaged file, without its class names: `` (what it said)``."""
    said = " ".join(str(exc).split())
    return f" ({said[:200]})" if said else ""


def _pdf(data: bytes, what: str) -> tuple[str | None, str]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise cannot_extract(what, "the PDF is password-protected; remove the password and try again")
        count = len(reader.pages)
        if count > MAX_PDF_PAGES:
            raise _too_large(what, f"the PDF has {count} pages, over the limit of {MAX_PDF_PAGES}")
        pages: list[str] = []
        characters = 0
        for page in reader.pages:
            page_text = page.extract_text() or ""
            characters += len(page_text)
            if characters > MAX_TEXT_CHARS:  # said now, not after reading every other page too
                raise _too_large(what, f"its text is over the limit of {MAX_TEXT_CHARS} characters")
            pages.append(page_text)
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except (KnowledgeValidationError, MemoryError):
        raise
    except Exception as exc:  # a corrupt PDF makes the parser fail in many ways; all mean "corrupt"
        raise cannot_extract(what, f"the PDF is damaged or not a PDF{_detail(exc)}") from exc
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    if not text:
        raise cannot_extract(what, "the PDF has no text layer (scanned pages need OCR, which is not supported)")
    return (title.strip() or None) if isinstance(title, str) else None, text


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
    title: str | None
    if kind == "pdf":
        title, text = _pdf(data, what)
    elif kind == "docx":
        title, text = _docx(data, what)
    elif kind == "html":
        title, text = _html(data, content_type, what)
    else:
        text = _decode_text(data, content_type, what)
        title = _markdown_title(text) if kind == "markdown" else None
    text = _tidy(text)
    if not text:
        raise cannot_extract(what, "it contains no text")
    if len(text) > MAX_TEXT_CHARS:
        raise _too_large(what, f"its text is {len(text)} characters, over the limit of {MAX_TEXT_CHARS}")
    return ExtractedDocument(title=title, text=text, content_type=CONTENT_TYPES[kind])


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
