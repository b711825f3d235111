"""Hostile and careless files met by text extraction: what comes out is text a store can hold, and
what cannot be read is refused in words (the problem and what to do), never with a parser's own
exception.

Covered: lone surrogates and NUL characters a PDF or HTML file smuggles into the text or the title,
a declared charset that is no character set (one that cannot decode, one that decodes in quadratic
time, one that reads escapes), DOCX packages whose compressed text is corrupt, a nameless ZIP
recognised without reading its listing in the calling process, HTML that leaves thousands of
paragraphs or list items unclosed (valid HTML), a Word file that is password-protected or in the
old binary format, the HTML parser's log lines, and empty files.
"""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zipfile

import pytest

from notochord.errors import KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.isolated import extract_isolated
from notochord.extraction.text import detect_kind, extract_text
from pdf_files import pdf_file

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_FOREIGN = ("LZMAError", "zlib", "BadZipFile", "Traceback")


def _pdf_drawing(content: bytes, *, to_unicode: bytes | None = None, info: bytes | None = None) -> bytes:
    """A one-page PDF drawing ``content`` in a font whose glyphs map to text through ``to_unicode``."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica"
    font += b" /ToUnicode 6 0 R >>" if to_unicode is not None else b" >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        font,
        b"<< /Length %d >>\nstream\n" % len(to_unicode or b"") + (to_unicode or b"") + b"\nendstream",
    ]
    if info is not None:
        objects.append(info)
    return pdf_file(objects, info=len(objects) if info is not None else None)


def _cmap(*pairs: tuple[bytes, bytes]) -> bytes:
    chars = b" ".join(b"<%s> <%s>" % pair for pair in pairs)
    return (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Hostile def"
        b" 1 begincodespacerange <00> <FF> endcodespacerange"
        b" %d beginbfchar " % len(pairs) + chars + b" endbfchar endcmap"
        b" CMapName currentdict /CMap defineresource pop end end"
    )


def _storable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (what every store and JSON encoder needs)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _docx(body: str, *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}"><w:body>{body}</w:body></w:document>'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        archive.writestr("word/document.xml", document)
    return out.getvalue()


def _paragraphs(count: int) -> str:
    return "".join(f"<w:p><w:r><w:t>Paragraph number {n} of the report.</w:t></w:r></w:p>" for n in range(count))


def _corrupt_first_member(package: bytes) -> bytes:
    """``package`` with bytes in the middle of its first member's compressed data inverted."""
    name_length, extra_length = struct.unpack_from("<HH", package, 26)
    start = 30 + name_length + extra_length + 16
    damaged = bytearray(package)
    for index in range(start, start + 24):
        damaged[index] ^= 0xFF
    return bytes(damaged)


# --- text a store can hold --------------------------------------------------------------------------


def test_lone_surrogates_a_pdf_maps_its_glyphs_to_become_replacement_characters() -> None:
    pdf = _pdf_drawing(
        b"BT /F1 12 Tf 10 10 Td (xAy) Tj ET", to_unicode=_cmap((b"78", b"0078"), (b"41", b"D800"), (b"79", b"0079"))
    )
    document = extract_text(pdf, filename="mapped.pdf")
    assert _storable(document.text)
    assert document.text == "x\ufffdy"


def test_a_pdf_title_holding_nul_and_control_characters_is_read_without_them() -> None:
    pdf = _pdf_drawing(b"BT /F1 12 Tf 10 10 Td (Body) Tj ET", info=b"<< /Title (Q3\\000 \\001report) >>")
    document = extract_text(pdf, filename="titled.pdf")
    assert document.title == "Q3 report"


def test_a_pdf_title_with_a_lone_surrogate_is_storable() -> None:
    pdf = _pdf_drawing(b"BT /F1 12 Tf 10 10 Td (Body) Tj ET", info=b"<< /Title <FEFF0041D8000042> >>")
    document = extract_text(pdf, filename="titled.pdf")
    assert document.title is None or _storable(document.title)


def test_an_html_title_holding_a_nul_is_read_without_it() -> None:
    page = b"<html><head><title>Minutes\x00 of the\x01 meeting</title></head><body><p>Text</p></body></html>"
    document = extract_text(page, filename="minutes.html")
    assert document.title == "Minutes of the meeting"
    assert document.text == "Text"


def test_a_title_that_is_only_control_characters_is_no_title() -> None:
    page = b"<html><head><title>\x00\x01\x02</title></head><body><p>Text</p></body></html>"
    assert extract_text(page, filename="blank.html").title is None


# --- declared charsets ------------------------------------------------------------------------------


@pytest.mark.parametrize("charset", ["undefined", "idna", "punycode", "unicode_escape", "raw-unicode-escape"])
def test_text_declared_in_a_codec_that_is_no_character_set_is_refused_in_words(charset: str) -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(b"-" + b"a" * 50_000, filename="notes.txt", content_type=f"text/plain; charset={charset}")
    message = refused.value.message
    assert message.startswith(f"cannot extract text from notes.txt: the declared charset {charset!r}")
    assert "utf-8" in message  # what to send instead
    assert type(refused.value) is KnowledgeValidationError


def test_the_isolated_extractor_refuses_a_pseudo_charset_in_the_same_words() -> None:
    data, content_type = b"hello", "text/plain; charset=undefined"
    with pytest.raises(KnowledgeValidationError) as in_process:
        extract_text(data, filename="a.txt", content_type=content_type)
    with pytest.raises(KnowledgeValidationError) as isolated:
        extract_isolated(data, filename="a.txt", content_type=content_type)
    assert isolated.value.message == in_process.value.message


def test_an_unknown_charset_is_refused_saying_what_to_send_instead() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(b"hello", filename="a.txt", content_type="text/plain; charset=klingon")
    assert "'klingon' is unknown" in refused.value.message
    assert "utf-8" in refused.value.message


def test_a_charset_name_holding_a_nul_is_refused_as_unknown() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(b"hello", filename="a.txt", content_type="text/plain; charset=utf\x00-8")
    assert "is unknown" in refused.value.message


def test_html_declared_in_a_pseudo_charset_is_read_as_if_none_were_declared() -> None:
    page = b"<html><body><p>escape \\ud800 stays as written</p></body></html>"
    document = extract_text(page, filename="page.html", content_type="text/html; charset=unicode_escape")
    assert document.text == "escape \\ud800 stays as written"


def test_utf7_text_that_spells_a_lone_surrogate_is_storable() -> None:
    document = extract_text(b"before +2AA- after", filename="a.txt", content_type="text/plain; charset=utf-7")
    assert _storable(document.text)
    assert document.text == "before \ufffd after"


# --- DOCX packages ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2], ids=["deflate", "lzma", "bzip2"]
)
def test_a_docx_whose_compressed_text_is_corrupt_is_refused_as_damaged(method: int) -> None:
    package = _corrupt_first_member(_docx(_paragraphs(300), method=method))
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(package, filename="report.docx")
    message = refused.value.message
    assert message.startswith("cannot extract text from report.docx: the DOCX is damaged")
    assert not [word for word in _FOREIGN if word in message]


def test_the_isolated_extractor_words_a_corrupt_docx_as_the_extractor_does() -> None:
    package = _corrupt_first_member(_docx(_paragraphs(300)))
    with pytest.raises(KnowledgeValidationError) as in_process:
        extract_text(package, filename="report.docx")
    with pytest.raises(KnowledgeValidationError) as isolated:
        extract_isolated(package, filename="report.docx")
    assert isolated.value.message == in_process.value.message


def test_a_nameless_docx_is_recognised_without_opening_the_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    package = _docx(_paragraphs(2))

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the archive's listing was read in the calling process")

    monkeypatch.setattr(zipfile.ZipFile, "__init__", refuse)
    assert detect_kind(package, filename=None, content_type="application/octet-stream") == "docx"


def test_a_nameless_zip_naming_the_docx_part_only_inside_a_member_is_not_a_docx() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("notes.txt", "see word/document.xml for details")
    with pytest.raises(UnsupportedDocumentError):
        detect_kind(out.getvalue(), filename=None, content_type=None)


def test_a_nameless_zip_listing_many_entries_is_refused_as_unsupported() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for number in range(2000):
            archive.writestr(f"sheet/{number}.xml", "")
    with pytest.raises(UnsupportedDocumentError):
        detect_kind(out.getvalue(), filename=None, content_type=None)


_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _compound_file(*streams: str) -> bytes:
    """The start of an OLE compound file whose directory names ``streams`` (what Word writes)."""
    directory = b"".join(name.encode("utf-16-le").ljust(64, b"\x00") + b"\x00" * 64 for name in streams)
    return _CFB_MAGIC + b"\x00" * 504 + directory + b"\x00" * 1024


def test_a_password_protected_docx_is_refused_saying_to_remove_the_password() -> None:
    encrypted = _compound_file("EncryptionInfo", "EncryptedPackage")
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(encrypted, filename="secret.docx")
    message = refused.value.message
    assert message.startswith("cannot extract text from secret.docx: the DOCX is password-protected")
    assert "remove the password" in message


def test_an_old_binary_word_document_named_docx_is_refused_as_unsupported_saying_to_save_as_docx() -> None:
    legacy = _compound_file("WordDocument", "1Table")
    with pytest.raises(UnsupportedDocumentError) as refused:
        extract_text(legacy, filename="old.docx")
    message = refused.value.message
    assert message.startswith("cannot extract text from old.docx: it is")
    assert "save it as .docx" in message


# --- HTML structure ---------------------------------------------------------------------------------


def test_html_with_thousands_of_unclosed_paragraphs_is_read_whole() -> None:
    page = b"<html><body>" + b"".join(b"<p>Paragraph %d\n" % n for n in range(3000)) + b"</body></html>"
    blocks = extract_text(page, filename="old.html").text.split("\n\n")
    assert len(blocks) == 3000
    assert blocks[0] == "Paragraph 0"
    assert blocks[-1] == "Paragraph 2999"


def test_html_with_thousands_of_unclosed_list_items_keeps_each_item() -> None:
    page = b"<html><body><ul>" + b"".join(b"<li>Item %d\n" % n for n in range(2500)) + b"</ul></body></html>"
    items = extract_text(page, filename="list.html").text.split("\n\n")
    assert items[:2] == ["- Item 0", "- Item 1"]
    assert items[-1] == "- Item 2499"
    assert len(items) == 2500


def test_deeply_nested_inline_html_keeps_its_text_and_its_headings() -> None:
    page = (
        b"<html><body>" + b"<span>" * 5000 + b"<h2>Deep</h2>inner" + b"</span>" * 5000 + b"<p>after</p></body></html>"
    )
    assert extract_text(page, filename="deep.html").text == "## Deep\n\ninner\n\nafter"


def test_the_html_parsers_log_lines_do_not_reach_a_terminal() -> None:
    # what the parser logs when no charset decodes a page without replacement characters
    program = (
        "import logging\n"
        "from notochord.extraction.text import extract_text\n"
        "print(extract_text(b'<p>cafe</p>', filename='x.html').text)\n"
        "logging.getLogger('bs4.dammit').warning('Some characters could not be decoded')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "cafe"
    assert done.stderr == ""


# --- empty files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["empty.pdf", "empty.docx", "empty.html", "empty.txt", None])
def test_an_empty_file_is_refused_as_empty_whatever_its_name(name: str | None) -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(b"", filename=name)
    assert refused.value.message == f"cannot extract text from {name or 'the file'}: the file is empty (0 bytes)"
