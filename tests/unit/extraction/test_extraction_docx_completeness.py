"""DOCX text is what a reader of the document sees (P-GEN-02, K-DOC-06, KB-GEN-01): text in nested
tables, tracked insertions, content controls, text boxes, footnotes, endnotes, headers and footers
is extracted, so search finds it; deleted text and field codes are not. Each kind is built as a real
.docx (python-docx plus raw XML), and a hostile package cannot use the new parts to pass the bounds.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import docx
import pytest
from docx.enum.section import WD_SECTION
from docx.oxml import parse_xml

from notochord.errors import DocumentTooLargeError, KnowledgeValidationError
from notochord.extraction.docx import read_docx
from notochord.extraction.text import extract_text

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_NAMESPACES = (
    f'xmlns:w="{_W}" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NOTE_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.{}+xml"


def _xml(fragment: str) -> Any:
    """One element from a WordprocessingML fragment, with the namespaces Word declares."""
    wrapped = parse_xml(f"<root {_NAMESPACES}>{fragment}</root>")
    return wrapped[0]


def _saved(document: Any) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _with_parts(
    base: bytes, parts: dict[str, bytes], relationships: list[tuple[str, str, str]], *, stored: bool = False
) -> bytes:
    """``base`` with ``parts`` added or replaced and ``(id, kind, target)`` relationships added to the
    main document, registered in the content types as Word registers them. ``stored`` keeps the
    parts uncompressed, so repetitive XML is not refused as a ZIP bomb before it is read."""
    source = zipfile.ZipFile(io.BytesIO(base))
    rels = "".join(
        f'<Relationship Id="{i}" Type="{_REL}/{kind}" Target="{target}"/>' for i, kind, target in relationships
    )
    overrides = "".join(
        f'<Override PartName="/word/{target}" ContentType="{_NOTE_TYPE.format(kind)}"/>'
        for _, kind, target in relationships
    )
    out = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for info in source.infolist():
            content = parts.pop(info.filename, None) or source.read(info.filename)
            if info.filename == "word/_rels/document.xml.rels":
                content = content.replace(b"</Relationships>", rels.encode() + b"</Relationships>")
            elif info.filename == "[Content_Types].xml":
                content = content.replace(b"</Types>", overrides.encode() + b"</Types>")
            archive.writestr(info.filename, content)
        for name, content in parts.items():
            archive.writestr(name, content)
    return out.getvalue()


def _text(data: bytes) -> str:
    return extract_text(data, filename="report.docx").text


def _notes(kind: str, notes: dict[str, str], *, separators: bool = True) -> bytes:
    """A footnotes or endnotes part holding ``notes`` (id → text), after Word's separator notes."""
    body = ""
    if separators:
        body += (
            f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
            f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r>'
            f"</w:p></w:{kind}>"
        )
    for note_id, text in notes.items():
        body += (
            f'<w:{kind} w:id="{note_id}"><w:p><w:pPr><w:pStyle w:val="FootnoteText"/></w:pPr>'
            f'<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:{kind}Ref/></w:r>'
            f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        )
    return f'<?xml version="1.0" encoding="UTF-8"?><w:{kind}s {_NAMESPACES}>{body}</w:{kind}s>'.encode()


def _reference(paragraph: Any, kind: str, note_id: str) -> None:
    paragraph._p.append(_xml(f'<w:r><w:{kind}Reference w:id="{note_id}"/></w:r>'))


# --- each kind of text a reader sees ------------------------------------------------------------


def test_text_in_a_table_nested_in_a_table_cell_is_extracted_in_its_cell() -> None:
    """A table inside a cell (a layout table holding a form, say) is read with the cell it sits in."""
    document = docx.Document()
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Address"
    inner = table.cell(0, 1).add_table(rows=2, cols=1)
    inner.cell(0, 0).text = "12 Quay Street"
    inner.cell(1, 0).text = "Auckland"
    deeper = inner.cell(1, 0).add_table(rows=1, cols=1)
    deeper.cell(0, 0).text = "Aotearoa"
    assert _text(_saved(document)) == "Address | 12 Quay Street Auckland Aotearoa"


def test_tracked_insertions_are_extracted_as_the_author_sees_the_document() -> None:
    """Word shows inserted text (``w:ins``, ``w:moveTo``) in the document; it is part of the text."""
    document = docx.Document()
    paragraph = document.add_paragraph("Payment is due ")
    paragraph._p.append(_xml('<w:ins w:id="1" w:author="A"><w:r><w:t>within thirty days</w:t></w:r></w:ins>'))
    paragraph._p.append(
        _xml('<w:moveTo w:id="2" w:author="A"><w:r><w:t xml:space="preserve"> of invoice</w:t></w:r></w:moveTo>')
    )
    assert _text(_saved(document)) == "Payment is due within thirty days of invoice"


def test_deleted_text_and_field_codes_are_not_extracted() -> None:
    """Deleted text (``w:del``/``w:delText``, ``w:moveFrom``) and a field's instructions
    (``w:instrText``) are not what a reader sees; a field's shown result is."""
    document = docx.Document()
    paragraph = document.add_paragraph("Due ")
    paragraph._p.append(_xml('<w:del w:id="1" w:author="A"><w:r><w:delText>tomorrow</w:delText></w:r></w:del>'))
    paragraph._p.append(_xml('<w:del w:id="2" w:author="A"><w:r><w:t>yesterday</w:t></w:r></w:del>'))
    paragraph._p.append(_xml('<w:moveFrom w:id="3" w:author="A"><w:r><w:t>moved away</w:t></w:r></w:moveFrom>'))
    paragraph._p.append(_xml('<w:r><w:t xml:space="preserve">on page </w:t></w:r>'))
    paragraph._p.append(_xml('<w:r><w:fldChar w:fldCharType="begin"/></w:r>'))
    paragraph._p.append(_xml('<w:r><w:instrText xml:space="preserve"> PAGEREF _Ref123 \\h </w:instrText></w:r>'))
    paragraph._p.append(_xml('<w:r><w:fldChar w:fldCharType="separate"/></w:r>'))
    paragraph._p.append(_xml("<w:r><w:t>7</w:t></w:r>"))
    paragraph._p.append(_xml('<w:r><w:fldChar w:fldCharType="end"/></w:r>'))
    text = _text(_saved(document))
    assert text == "Due on page 7"


def test_body_level_and_inline_content_controls_are_extracted() -> None:
    """Content controls (``w:sdt``) hold the fields of templates and forms, around paragraphs,
    tables and runs; their content is what a reader sees."""
    document = docx.Document()
    document.add_paragraph("Before the form")
    body = document.element.body
    body.insert(
        len(body) - 1,
        _xml(
            '<w:sdt><w:sdtPr><w:alias w:val="Client"/><w:tag w:val="client"/></w:sdtPr><w:sdtContent>'
            '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Client details</w:t></w:r></w:p>'
            "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Name</w:t></w:r></w:p></w:tc>"
            "<w:tc><w:p><w:r><w:t>Hemi Walker</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
            "</w:sdtContent></w:sdt>"
        ),
    )
    paragraph = document.add_paragraph("Signed by ")
    paragraph._p.append(_xml("<w:sdt><w:sdtPr/><w:sdtContent><w:r><w:t>Aroha Ngata</w:t></w:r></w:sdtContent></w:sdt>"))
    assert (
        _text(_saved(document)) == "Before the form\n\n# Client details\n\nName | Hemi Walker\n\nSigned by Aroha Ngata"
    )


def test_table_rows_and_cells_inside_content_controls_are_extracted_as_rows() -> None:
    """A form's repeating section wraps table rows (or single cells) in content controls; they
    are rows like any other."""
    document = docx.Document()
    body = document.element.body
    cell = "<w:tc><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>"
    body.insert(
        len(body) - 1,
        _xml(
            "<w:tbl><w:tr>" + cell.format("Item") + cell.format("Qty") + "</w:tr>"
            "<w:sdt><w:sdtPr/><w:sdtContent><w:tr>" + cell.format("Flour") + cell.format("2") + "</w:tr>"
            "<w:tr>" + cell.format("Salt") + "<w:sdt><w:sdtContent>" + cell.format("1") + "</w:sdtContent></w:sdt>"
            "</w:tr></w:sdtContent></w:sdt></w:tbl>"
        ),
    )
    assert _text(_saved(document)) == "Item | Qty\n\nFlour | 2\n\nSalt | 1"


_TEXT_BOX = (
    "<w:r><mc:AlternateContent>"
    '<mc:Choice Requires="wps"><w:drawing><wp:anchor><a:graphic><a:graphicData>'
    "<wps:wsp><wps:txbx><w:txbxContent>{content}</w:txbxContent></wps:txbx></wps:wsp>"
    "</a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>"
    "<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>{content}</w:txbxContent>"
    "</v:textbox></v:shape></w:pict></mc:Fallback>"
    "</mc:AlternateContent></w:r>"
)


def test_text_in_text_boxes_and_shapes_is_extracted_once_after_the_paragraph_holding_it() -> None:
    """Word stores a text box twice (the drawing and its older VML fallback); it is read once, after
    the paragraph it is anchored in, with its own paragraphs and tables."""
    document = docx.Document()
    paragraph = document.add_paragraph("Quarterly results")
    paragraph._p.append(
        _xml(
            _TEXT_BOX.format(
                content="<w:p><w:r><w:t>Revenue rose 12%</w:t></w:r></w:p>"
                "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Q1</w:t></w:r></w:p></w:tc>"
                "<w:tc><w:p><w:r><w:t>Q2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
            )
        )
    )
    document.add_paragraph("Outlook")
    legacy = document.add_paragraph("Old shape:")
    legacy._p.append(
        _xml("<w:r><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>VML only</w:t></w:r></w:p>"
             "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>")
    )  # fmt: skip
    text = _text(_saved(document))
    assert text == "Quarterly results\n\nRevenue rose 12%\n\nQ1 | Q2\n\nOutlook\n\nOld shape:\n\nVML only"


def test_a_text_box_in_a_table_cell_is_read_with_its_cell() -> None:
    document = docx.Document()
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Logo"
    table.cell(0, 1).paragraphs[0]._p.append(_xml(_TEXT_BOX.format(content="<w:p><w:r><w:t>ACME</w:t></w:r></w:p>")))
    assert _text(_saved(document)) == "Logo | ACME"


def test_footnotes_and_endnotes_follow_the_body_in_the_order_they_are_referenced() -> None:
    """Notes are read after the body (a note's text would split the sentence that cites it):
    footnotes, then endnotes, each in the order the body first cites it and once; Word's separator
    notes and notes nothing cites are not shown, so not read."""
    document = docx.Document()
    first = document.add_paragraph("The river floods in spring.")
    _reference(first, "footnote", "2")
    second = document.add_paragraph("It did so in 1998.")
    _reference(second, "endnote", "1")
    _reference(second, "footnote", "1")
    _reference(second, "footnote", "2")
    data = _with_parts(
        _saved(document),
        {
            "word/footnotes.xml": _notes(
                "footnote", {"1": "Council records.", "2": "Hydrology survey.", "3": "Orphan."}
            ),
            "word/endnotes.xml": _notes("endnote", {"1": "See the appendix."}),
        },
        [("rIdF", "footnotes", "footnotes.xml"), ("rIdE", "endnotes", "endnotes.xml")],
    )
    assert _text(data).split("\n\n") == [
        "The river floods in spring.",
        "It did so in 1998.",
        "Hydrology survey.",
        "Council records.",
        "See the appendix.",
    ]


def test_headers_and_footers_are_read_once_per_document_after_the_body() -> None:
    """Headers and footers are page furniture repeated on every page and often in every section
    ("Confidential"): their text is read once per document, after the body and its notes, so it is
    found by search without outweighing the body."""
    document = docx.Document()
    document.add_paragraph("Body of section one")
    section = document.sections[0]
    section.header.paragraphs[0].text = "ACME Ltd — Confidential"
    section.footer.paragraphs[0].text = "Internal use only"
    second = document.add_section(WD_SECTION.NEW_PAGE)
    document.add_paragraph("Body of section two")
    second.header.is_linked_to_previous = False
    second.header.paragraphs[0].text = "ACME Ltd — Confidential"
    second.header.add_paragraph("Appendix")
    second.different_first_page_header_footer = True
    second.first_page_footer.paragraphs[0].text = "Internal use only"
    assert _text(_saved(document)) == (
        "Body of section one\n\nBody of section two\n\nACME Ltd — Confidential\n\nInternal use only\n\nAppendix"
    )


# --- bounds the new parts must keep ------------------------------------------------------------


def test_a_footnotes_part_of_100_mib_is_refused_before_it_is_unpacked() -> None:
    """A note part is bounded as the main part is: its compression ratio is checked before any
    text part is unpacked."""
    document = docx.Document()
    _reference(document.add_paragraph("Cited."), "footnote", "1")
    note = _notes("footnote", {"1": "spam spam spam"}, separators=False)
    head, _, tail = note.partition(b"<w:footnote ")
    one, _, tail = (b"<w:footnote " + tail).rpartition(b"</w:footnotes>")
    huge = head + one * (100 * 1024 * 1024 // len(one) + 1) + b"</w:footnotes>"
    assert len(huge) > 100 * 1024 * 1024
    data = _with_parts(_saved(document), {"word/footnotes.xml": huge}, [("rIdF", "footnotes", "footnotes.xml")])
    with pytest.raises(DocumentTooLargeError, match=r"word/footnotes\.xml unpacks to \d+ times its packed size"):
        read_docx(io.BytesIO(data), max_text_chars=1_000_000)


def test_the_text_of_headers_notes_and_text_boxes_counts_against_the_text_limit() -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("x")
    for _ in range(50):
        paragraph._p.append(_xml(_TEXT_BOX.format(content="<w:p><w:r><w:t>" + "y" * 100 + "</w:t></w:r></w:p>")))
    data = _saved(document)
    assert len(read_docx(io.BytesIO(data), max_text_chars=5001).blocks) == 51  # the fallback copy is not read
    with pytest.raises(KnowledgeValidationError, match="over the limit of 5000 characters"):
        read_docx(io.BytesIO(data), max_text_chars=5000)
    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "h" * 100
    with pytest.raises(KnowledgeValidationError, match="over the limit of 99 characters"):
        read_docx(io.BytesIO(_saved(document)), max_text_chars=99)


def test_a_vertically_merged_cell_repeated_down_many_rows_counts_against_the_text_limit() -> None:
    """A merged cell's text is repeated in every row it spans (as a reader sees it in each row); each
    repeat counts, so a few bytes of XML cannot make gigabytes of text."""
    cell = "<w:tc><w:p><w:r><w:t>" + "z" * 1000 + "</w:t></w:r></w:p></w:tc>"
    merged_row = "<w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc></w:tr>"
    first_row = "<w:tr><w:tc><w:tcPr><w:vMerge w:val='restart'/></w:tcPr>" + cell[6:] + "</w:tr>"
    document = docx.Document()
    body = document.element.body
    body.insert(len(body) - 1, _xml("<w:tbl>" + first_row + merged_row * 30 + "</w:tbl>"))
    data = _saved(document)
    assert len(read_docx(io.BytesIO(data), max_text_chars=31_000).blocks) == 31
    with pytest.raises(KnowledgeValidationError, match="over the limit of 20000 characters"):
        read_docx(io.BytesIO(data), max_text_chars=20_000)


def test_tables_nested_a_hundred_thousand_deep_are_read_without_recursion() -> None:
    """The reader walks the XML iteratively: nesting depth costs no stack."""
    depth = 100_000
    nested = "<w:tbl><w:tr><w:tc>" * depth + "<w:p><w:r><w:t>core</w:t></w:r></w:p>" + "</w:tc></w:tr></w:tbl>" * depth
    boxes = (
        "<w:p><w:r><w:txbxContent>" * depth
        + "<w:p><w:r><w:t>box</w:t></w:r></w:p>"
        + ("</w:txbxContent></w:r></w:p>" * depth)
    )
    xml = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document {_NAMESPACES}><w:body>{nested}{boxes}</w:body></w:document>'
    )
    base = _saved(docx.Document())
    data = _with_parts(base, {"word/document.xml": xml.encode()}, [], stored=True)
    blocks = read_docx(io.BytesIO(data), max_text_chars=1000).blocks
    assert [text for _, text in blocks] == ["core", "box"]


def test_hundreds_of_thousands_of_empty_text_boxes_cost_no_blocks() -> None:
    """Blank paragraphs, in the body or in text boxes, are not kept: a package of as many empty
    shapes as the unpacked bound lets in yields only the text it has."""
    box = "<w:r><w:txbxContent><w:p/></w:txbxContent></w:r>"
    xml = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document {_NAMESPACES}><w:body>'
        f"<w:p><w:r><w:t>anchor</w:t></w:r>{box * 400_000}</w:p></w:body></w:document>"
    )
    data = _with_parts(_saved(docx.Document()), {"word/document.xml": xml.encode()}, [], stored=True)
    assert read_docx(io.BytesIO(data), max_text_chars=1000).blocks == [("Normal", "anchor")]


def test_a_header_relationship_pointing_at_the_main_part_does_not_read_the_body_twice() -> None:
    document = docx.Document()
    document.add_paragraph("Only once")
    document.sections[0].header.paragraphs[0].text = "Head"
    data = _saved(document)
    source = zipfile.ZipFile(io.BytesIO(data))
    rels = source.read("word/_rels/document.xml.rels").decode()
    rels = re.sub(r'(Type="[^"]*/header" Target=")[^"]*"', r'\1document.xml"', rels)
    data = _with_parts(data, {"word/_rels/document.xml.rels": rels.encode()}, [])
    assert _text(data) == "Only once"
