"""PDF text drawn in a font that does not say which characters its glyphs stand for (P-GEN-02,
K-DOC-06, KB-GEN-01): a Type3 font (bitmap fonts of older TeX output, some report generators)
whose glyphs have private names (``/g12``) and no ToUnicode map. The parser can only give the
glyph names, which no reader sees and no search should match: they are left out, and a note at the
end of the text says on which pages text could not be read.
"""

from __future__ import annotations

import sys

import pytest

from notochord.errors import KnowledgeValidationError
from notochord.extraction.isolated import extract_isolated
from notochord.extraction.pdf import standard_glyph_names
from notochord.extraction.text import extract_text
from pdf_files import pdf_file

_GLYPH = b"0 0 0 0 10 10 d1 0 0 10 10 re f"


def _type3_font(names: bytes, *, to_unicode: int | None = None) -> bytes:
    """A Type3 font drawing codes 65 (``A``) onwards with the glyphs ``names``, all one square."""
    count = len(names.split())
    procs = b" ".join(b"%s 3 0 R" % name for name in names.split())
    font = (
        b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 10 10] /FontMatrix [0.1 0 0 0.1 0 0]"
        b" /CharProcs << " + procs + b" >> /Encoding << /Type /Encoding /Differences [65 " + names + b"] >>"
        b" /FirstChar 65 /LastChar %d /Widths [%s]" % (64 + count, b" ".join([b"10"] * count))
    )
    return font + (b" /ToUnicode %d 0 R >>" % to_unicode if to_unicode is not None else b" >>")


def _pdf(pages: list[bytes], font: bytes, *, extra: list[bytes] | None = None) -> bytes:
    """A PDF of ``pages`` content streams, with ``/F1`` Helvetica and ``/T3`` the font ``font``."""
    first_page = 6 + len(extra or [])
    kids = b" ".join(b"%d 0 R" % (first_page + 2 * n) for n in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages),
        b"<< /Length %d >>\nstream\n" % len(_GLYPH) + _GLYPH + b"\nendstream",
        font,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *(extra or []),
    ]
    for number, content in enumerate(pages):
        objects += [
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /Font << /T3 4 0 R /F1 5 0 R >> >> >>" % (first_page + 2 * number + 1),
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        ]
    return pdf_file(objects)


def _line(font: bytes, text: bytes, y: int = 700) -> bytes:
    return b"BT /%s 12 Tf 72 %d Td (%s) Tj ET\n" % (font, y, text)


_PRIVATE_NAMES = b"/g1 /g2 /g3 /g4 /g5"


def test_glyph_names_of_a_font_without_a_character_map_are_left_out_with_a_note() -> None:
    pdf = _pdf(
        [_line(b"F1", b"Minutes of the meeting", 720) + _line(b"T3", b"ABCDE"), _line(b"F1", b"Second page")],
        _type3_font(_PRIVATE_NAMES),
    )
    text = extract_text(pdf, filename="minutes.pdf").text
    assert "/g" not in text
    assert text == (
        "Minutes of the meeting\n\nSecond page\n\n"
        "[Text on page 1 could not be read and was left out: its font does not say which characters"
        " its glyphs stand for.]"
    )


def test_the_note_names_every_page_that_lost_text_in_ranges() -> None:
    lost = _line(b"F1", b"Body") + _line(b"T3", b"ABC", 680)
    pdf = _pdf([lost, lost, lost, _line(b"F1", b"Clean"), lost], _type3_font(_PRIVATE_NAMES))
    assert extract_text(pdf, filename="report.pdf").text.endswith(
        "[Text on pages 1-3 and 5 could not be read and was left out: its font does not say which characters"
        " its glyphs stand for.]"
    )


def test_a_type3_font_whose_glyphs_have_standard_names_is_read_as_text() -> None:
    """Glyph names from the standard list (``/H``, ``/e``, ``/uni00E9``) say their characters."""
    pdf = _pdf([_line(b"T3", b"ABCCDE")], _type3_font(b"/H /e /l /o /uni00E9"))
    assert extract_text(pdf, filename="hello.pdf").text == "Helloé"


def test_a_type3_font_with_a_character_map_is_read_through_it() -> None:
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Private def"
        b" 1 begincodespacerange <00> <FF> endcodespacerange 3 beginbfchar <41> <0048> <42> <0069>"
        b" <43> <0021> endbfchar endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    stream = b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream"
    pdf = _pdf([_line(b"T3", b"ABC")], _type3_font(b"/g1 /g2 /g3", to_unicode=6), extra=[stream])
    assert extract_text(pdf, filename="mapped.pdf").text == "Hi!"


def test_a_pdf_whose_only_text_is_in_such_fonts_is_refused_saying_why() -> None:
    pdf = _pdf([_line(b"T3", b"ABCDE"), _line(b"T3", b"EDCBA")], _type3_font(_PRIVATE_NAMES))
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(pdf, filename="tex.pdf")
    assert refused.value.message == (
        "cannot extract text from tex.pdf: the PDF's text is drawn in fonts that do not say which characters"
        " their glyphs stand for, so it cannot be read (as with scanned pages, that needs OCR, which is not"
        " supported)"
    )
    with pytest.raises(KnowledgeValidationError) as isolated:
        extract_isolated(pdf, filename="tex.pdf")
    assert isolated.value.message == refused.value.message


def test_the_parsers_standard_glyph_list_is_found_where_the_check_reads_it() -> None:
    """The check reads the parser's own glyph list from the parser's private module: a version of
    the parser that moves it fails here, not silently in users' text."""
    glyphs = standard_glyph_names()
    assert glyphs is not None, "pypdf no longer has pypdf._codecs.adobe_glyphs: find where it moved"
    assert (glyphs["/e"], glyphs["/slash"], glyphs["/Eacute"]) == ("e", "/", "É")
    assert "/g1" not in glyphs


def test_without_the_standard_glyph_list_no_text_is_taken_for_glyph_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the list gone, names it holds would pass for private ones and real text that spells
    them (``H/e``) would be cut out with a false note; the names are left in instead."""
    pdf = _pdf([_line(b"T3", b"ABC")], _type3_font(b"/H /slash /e"))
    assert extract_text(pdf, filename="slash.pdf").text == "H/e"
    monkeypatch.setitem(sys.modules, "pypdf._codecs", None)  # importing it now fails
    assert standard_glyph_names() is None
    assert extract_text(pdf, filename="slash.pdf").text == "H/e"
