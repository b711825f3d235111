"""Files real people and hostile clients hand to text extraction (P-GEN-02, P-NET-10, K-DOC-06,
KB-GEN-01): what a reader shows is what is extracted, and what cannot be read is said in words that
name the problem and what to do.

Covered: PDFs protected by a certificate or another non-password security handler, PDFs whose
cross-reference table or trailer is missing (a truncated download), PDFs with a content stream too
large to unpack, PDFs whose only "text" is control codes; HTML titles outside ``<head>``, SVG
titles, hidden text inside headings, fallback content browsers never show and elements whose words
a browser keeps apart; UTF-16 and UTF-32 text with and without a byte order mark; Markdown front
matter; DOCX text in text boxes, content controls, tracked insertions, headers, footers and notes.
"""

from __future__ import annotations

import io
import re
import zlib

import pytest
from pypdf import PdfWriter

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError
from notochord.extraction.isolated import extract_isolated
from notochord.extraction.text import extract_text
from pdf_files import pdf_file

_HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _one_page(content: bytes, *, trailer: bytes = b"", extra: list[bytes] | None = None) -> bytes:
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            _HELVETICA,
            *(extra or []),
        ],
        trailer=trailer,
    )


_HELLO = _one_page(b"BT /F1 12 Tf 10 10 Td (Hello world) Tj ET")
_FILE_ID = b"/ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]"


def _protected_by(handler: bytes) -> bytes:
    """A PDF encrypted by the security handler ``handler`` (``/Adobe.PubSec``: a certificate)."""
    encrypt = b"<< /Filter %s /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 /Length 128 /Recipients [<3082>] >>" % handler
    return _one_page(b"BT /F1 12 Tf 10 10 Td (secret) Tj ET", trailer=b"/Encrypt 6 0 R " + _FILE_ID, extra=[encrypt])


def _password_protected() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    writer.encrypt(user_password="open sesame", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- protected PDFs ---------------------------------------------------------------------------------


def test_a_certificate_protected_pdf_is_said_to_be_protected_not_damaged() -> None:
    """A PDF encrypted for a certificate (public-key security) is refused like a password-protected
    one: the user can open it and save a copy without protection."""
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(_protected_by(b"/Adobe.PubSec"), filename="contract.pdf")
    message = refused.value.message
    assert message.startswith("cannot extract text from contract.pdf: the PDF is protected with a certificate")
    assert "damaged" not in message
    assert "save a copy without" in message
    assert type(refused.value) is KnowledgeValidationError


def test_a_pdf_protected_by_another_security_handler_is_said_to_be_protected() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(_protected_by(b"/FOPN_foweb"), filename="drm.pdf")
    message = refused.value.message
    assert message.startswith("cannot extract text from drm.pdf: the PDF is protected")
    assert "damaged" not in message
    assert "save a copy without" in message


def test_a_password_protected_pdf_is_still_said_to_need_its_password_removed() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(_password_protected(), filename="locked.pdf")
    assert refused.value.message == (
        "cannot extract text from locked.pdf: the PDF is password-protected; remove the password and try again"
    )


def test_the_isolated_extractor_words_a_certificate_protected_pdf_the_same() -> None:
    data = _protected_by(b"/Adobe.PubSec")
    with pytest.raises(KnowledgeValidationError) as in_process:
        extract_text(data, filename="contract.pdf")
    with pytest.raises(KnowledgeValidationError) as isolated:
        extract_isolated(data, filename="contract.pdf")
    assert isolated.value.message == in_process.value.message


# --- damaged PDFs a viewer still opens --------------------------------------------------------------


def test_a_pdf_cut_off_before_its_cross_reference_table_is_read_as_a_viewer_reads_it() -> None:
    """A truncated download keeps its objects; the table that indexes them is rebuilt."""
    truncated = _HELLO[: _HELLO.index(b"xref\n")]
    assert extract_text(truncated, filename="download.pdf").text == "Hello world"


def test_a_pdf_without_cross_reference_table_but_with_a_trailer_is_read() -> None:
    no_table = _HELLO[: _HELLO.index(b"xref\n")] + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
    assert extract_text(no_table, filename="handmade.pdf").text == "Hello world"


def test_a_pdf_whose_cross_reference_offsets_are_wrong_is_read() -> None:
    shifted = re.sub(rb"(\d{10}) 00000 n", lambda m: b"%010d 00000 n" % (int(m.group(1)) + 7), _HELLO)
    assert extract_text(shifted, filename="shifted.pdf").text == "Hello world"


def test_a_pdf_truncated_inside_its_pages_is_still_refused_as_damaged() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(_HELLO[:60], filename="stub.pdf")
    assert refused.value.message.startswith("cannot extract text from stub.pdf: the PDF is damaged or not a PDF")


# --- PDFs too large to unpack, PDFs without text ----------------------------------------------------


def test_a_pdf_whose_content_stream_unpacks_past_the_parsers_limit_is_refused_as_too_large() -> None:
    """A 200 KB page that unpacks to 96 MB of drawing operators is too large, not damaged."""
    content = zlib.compress(b"BT /F1 12 Tf 10 10 Td (a) Tj ET\n" * 3_000_000, 9)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream"
    pdf = pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            stream,
            _HELVETICA,
        ]
    )
    with pytest.raises(DocumentTooLargeError) as refused:
        extract_text(pdf, filename="bomb.pdf")
    message = refused.value.message
    assert message.startswith("cannot extract text from bomb.pdf: ")
    assert "damaged" not in message
    assert "too large" in message


def test_a_pdf_whose_only_text_is_control_codes_is_said_to_have_no_text_layer() -> None:
    """Glyphs without a text mapping come out as control codes, which are no text to import."""
    pdf = _one_page(b"BT /F1 12 Tf 10 10 Td (\\001\\002\\003\\004) Tj ET")
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(pdf, filename="glyphs.pdf")
    assert refused.value.message.startswith("cannot extract text from glyphs.pdf: the PDF has no text layer")


def test_a_scanned_pdf_is_said_to_have_no_text_layer() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(_one_page(b"q 612 0 0 792 0 0 cm Q"), filename="scan.pdf")
    assert "no text layer" in refused.value.message
    assert "OCR" in refused.value.message


# --- HTML titles, hidden and fallback content, words kept apart -------------------------------------

_TITLED_PAGES = [
    pytest.param(b"<title>Notes</title><p>Body</p>", id="no-head"),
    pytest.param(b"<html><head><title>Notes</title></head><body><p>Body</p></body></html>", id="in-head"),
    pytest.param(b"<html><body><title>Notes</title><p>Body</p></body></html>", id="in-body"),
    pytest.param(b"<!doctype html><p>Body</p><title>Notes</title>", id="after-the-text"),
]


@pytest.mark.parametrize("page", _TITLED_PAGES)
def test_an_html_title_is_the_title_wherever_it_stands_and_never_body_text(page: bytes) -> None:
    document = extract_text(page, filename="notes.html")
    assert document.title == "Notes"
    assert document.text == "Body"


def test_an_svg_icons_title_is_neither_the_pages_title_nor_its_text() -> None:
    page = b"<html><body><svg><title>Close icon</title></svg><h1>Report</h1><p>Body</p></body></html>"
    document = extract_text(page, filename="report.html")
    assert document.title == "Report"
    assert document.text == "# Report\n\nBody"


def test_hidden_text_inside_a_heading_or_preformatted_block_is_not_extracted() -> None:
    page = b"<h2>Minutes<span hidden>buy cheap pills</span></h2><pre>code<b hidden>spam</b></pre>"
    assert extract_text(page, filename="minutes.html").text == "## Minutes\n\ncode"


def test_fallback_text_browsers_show_only_without_media_support_is_not_extracted() -> None:
    page = (
        b"<p>Clip<video>Your browser does not support video.</video></p>"
        b"<p>Song<audio>No audio support.</audio></p><p>Chart<canvas>Canvas unsupported</canvas></p>"
    )
    assert extract_text(page, filename="media.html").text == "Clip\n\nSong\n\nChart"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        pytest.param(b"<p>foo</p><p>bar</p>", "foo\n\nbar", id="paragraphs"),
        pytest.param(b"foo<br>bar", "foo\n\nbar", id="br"),
        pytest.param(b"<center>Welcome</center>Read on", "Welcome\n\nRead on", id="center"),
        pytest.param(b"<fieldset><legend>Address</legend>Street</fieldset>", "Address\n\nStreet", id="legend"),
        pytest.param(b"<select><option>Red<option>Green</select>", "Red\n\nGreen", id="options"),
        pytest.param(b"<p>Run<xmp>make all</xmp>then</p>", "Run\n\nmake all\n\nthen", id="xmp"),
        pytest.param(b"<menu><li>Open</li></menu>Close", "- Open\n\nClose", id="menu"),
        pytest.param(b"<hgroup><p>Sub</p></hgroup>Text", "Sub\n\nText", id="hgroup"),
    ],
)
def test_html_elements_a_browser_shows_apart_do_not_join_their_words(page: bytes, text: str) -> None:
    assert extract_text(page, filename="page.html").text == text


def test_html_entities_and_non_breaking_spaces_are_read_as_characters() -> None:
    page = b"<p>Fish &amp; chips&nbsp;for &lt;two&gt; &#8212; &eacute;t&eacute;</p>"
    assert extract_text(page, filename="menu.html").text == "Fish & chips for <two> \u2014 \u00e9t\u00e9"


def test_script_style_noscript_and_template_content_is_not_extracted() -> None:
    page = (
        b"<html><head><style>p { color: red }</style></head><body><script>var secret = 1;</script>"
        b"<noscript>Enable JavaScript</noscript><template><p>Row template</p></template><p>Shown</p></body></html>"
    )
    assert extract_text(page, filename="app.html").text == "Shown"


# --- text encodings ---------------------------------------------------------------------------------

_GREETING = "Grüße aus Köln\nZweite Zeile"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_text_without_a_byte_order_mark_is_read_not_refused_as_binary(codec: str) -> None:
    """What Windows tools write as "Unicode" text; the zero bytes sit in every other position."""
    assert extract_text(_GREETING.encode(codec), filename="notes.txt").text == _GREETING


@pytest.mark.parametrize("codec", ["utf-16", "utf-32"])
def test_text_with_a_utf16_or_utf32_byte_order_mark_is_read_even_without_a_name(codec: str) -> None:
    document = extract_text(_GREETING.encode(codec), content_type="application/octet-stream")
    assert document.text == _GREETING
    assert document.content_type == "text/plain"


@pytest.mark.parametrize(
    ("mark", "codec"), [(b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be")], ids=["le", "be"]
)
def test_utf32_text_with_a_byte_order_mark_is_read_in_either_byte_order(mark: bytes, codec: str) -> None:
    assert extract_text(mark + _GREETING.encode(codec), filename="notes.txt").text == _GREETING


def test_utf16_html_with_a_byte_order_mark_and_no_name_is_read_as_html() -> None:
    page = "<html><head><title>Seite</title></head><body><p>Grüße</p></body></html>".encode("utf-16")
    document = extract_text(page)
    assert (document.content_type, document.title, document.text) == ("text/html", "Seite", "Grüße")


def test_a_binary_file_named_txt_is_still_refused_as_binary() -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00" + bytes(range(256)) * 4, filename="notes.txt")
    assert refused.value.message == "cannot extract text from notes.txt: it is a binary file, not text"


def test_a_text_file_of_one_very_long_line_is_read_whole() -> None:
    line = "word " * 400_000
    assert extract_text(line.encode(), filename="long.txt").text == line.strip()


# --- Markdown ---------------------------------------------------------------------------------------


def test_markdown_front_matter_gives_the_title_and_is_not_body_text() -> None:
    note = b'---\ntitle: "Trip to Rome"\ntags: [travel, italy]\n---\n\n# Day one\n\nWe saw the Forum.\n'
    document = extract_text(note, filename="rome.md")
    assert document.title == "Trip to Rome"
    assert document.text == "# Day one\n\nWe saw the Forum."


def test_markdown_front_matter_without_a_title_leaves_the_first_heading_as_title() -> None:
    note = b"---\ndate: 2026-09-29\n---\n# Diary\n\nRain.\n"
    document = extract_text(note, filename="diary.md")
    assert document.title == "Diary"
    assert document.text == "# Diary\n\nRain."


def test_a_markdown_thematic_break_at_the_start_is_not_front_matter() -> None:
    note = b"---\n\nJust a rule above this paragraph.\n\n---\n\nAnd below.\n"
    assert (
        extract_text(note, filename="rule.md").text == "---\n\nJust a rule above this paragraph.\n\n---\n\nAnd below."
    )


def test_a_comment_in_a_fenced_code_block_is_not_the_markdown_title() -> None:
    note = b"Setup notes\n\n```bash\n# install the tools\nmake\n```\n\n# Real heading #\n"
    assert extract_text(note, filename="setup.md").title == "Real heading"
