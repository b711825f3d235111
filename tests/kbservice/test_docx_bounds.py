"""DOCX text is read as a bounded stream: a small upload of huge XML is refused early (413), and
ordinary documents give the text python-docx reads from them, plus the text a reader sees that
python-docx skips (tracked insertions, nested tables)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import IO, Any

import docx
import pytest
from docx.enum.text import WD_BREAK
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from kb_harness import World

from notochord.errors import KnowledgeValidationError
from notochord.extraction import docx as docx_text
from notochord.extraction import text as extract
from notochord.extraction.docx import read_docx
from notochord.extraction.text import extract_text

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def python_docx_blocks(data: bytes) -> tuple[list[tuple[str, str]], str | None]:
    """What python-docx reads: the reference the streaming reader must match."""
    document = docx.Document(io.BytesIO(data))
    blocks: list[tuple[str, str]] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            blocks.append((item.style.name if item.style is not None else "", item.text))
        elif isinstance(item, Table):
            for row in item.rows:
                cells: list[str] = []
                for cell in row.cells:
                    value = " ".join(cell.text.split())
                    if value and (not cells or cells[-1] != value):
                        cells.append(value)
                if cells:
                    blocks.append(("", " | ".join(cells)))
    return blocks, document.core_properties.title or None


def _element(tag: str, text: str | None = None, **attrs: str) -> Any:
    element = OxmlElement(tag)
    if text is not None:
        element.text = text
    for key, value in attrs.items():
        element.set(qn(key), value)
    return element


def rich_document() -> bytes:
    """Every construct the reader handles: styles, runs, breaks, hyperlinks, revisions, tables with
    horizontal and vertical merges, a nested table, unknown style ids, non-ASCII text."""
    document = docx.Document()
    document.core_properties.title = "Minutes"
    document.add_paragraph("The Title", style="Title")
    document.add_heading("Chapter", level=1)
    document.add_heading("Section", level=3)
    paragraph = document.add_paragraph("Hello ")
    run = paragraph.add_run("world")
    run.add_tab()
    run.add_text("after a tab")
    run.add_break()
    run.add_text("second line")
    run.add_break(WD_BREAK.PAGE)
    run.add_text("next page")
    document.add_paragraph("beef", style="List Bullet")
    document.add_paragraph("first step", style="List Number")
    paragraph = document.add_paragraph("see ")
    link = _element("w:hyperlink", **{"r:id": "rId99"})
    link_run = _element("w:r")
    link_run.append(_element("w:t", "the link"))
    link.append(link_run)
    paragraph._p.append(link)
    run = paragraph.add_run()
    run._r.append(_element("w:noBreakHyphen"))
    run._r.append(_element("w:cr"))
    run._r.append(_element("w:t", "after a carriage return"))
    inserted = _element("w:ins")
    inserted_run = _element("w:r")
    inserted_run.append(_element("w:t", "INSERTED"))
    inserted.append(inserted_run)
    paragraph._p.append(inserted)
    table = document.add_table(rows=3, cols=3)
    for i in range(3):
        for j in range(3):
            table.cell(i, j).text = f"c{i}{j}"
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(1, 2).merge(table.cell(2, 2))
    table.cell(1, 0).add_paragraph("second paragraph")
    table.cell(2, 0).add_table(rows=1, cols=1).cell(0, 0).text = "NESTED"
    document.add_paragraph("a quote").style = document.styles["Quote"]
    unknown = document.add_paragraph("unknown style id")
    unknown._p.get_or_add_pPr().get_or_add_pStyle().set(qn("w:val"), "NoSuchStyle")
    document.add_paragraph("   ")
    document.add_paragraph("今天我和张伟在北京吃了烤鸭 — ü")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def with_document_xml(base: bytes, xml: bytes) -> bytes:
    """``base`` with its main document part replaced by ``xml`` (every other part kept)."""
    source = zipfile.ZipFile(io.BytesIO(base))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = xml if info.filename == "word/document.xml" else source.read(info.filename)
            archive.writestr(info.filename, content)
    return out.getvalue()


def repeated_paragraphs(total_bytes: int) -> bytes:
    paragraph = b"<w:p><w:r><w:t>spam spam spam</w:t></w:r></w:p>"
    head = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W_NS}"><w:body>'.encode()
    return head + paragraph * (total_bytes // len(paragraph)) + b"</w:body></w:document>"


def test_the_streaming_reader_gives_what_python_docx_reads_plus_the_text_it_misses() -> None:
    """For a normal document the blocks are python-docx's, without blank paragraphs, plus the text
    a reader sees that python-docx skips: here a tracked insertion and a table nested in a cell."""
    data = rich_document()
    blocks, title = python_docx_blocks(data)
    expected = [
        (style, text + "INSERTED" if text.startswith("see the link") else text.replace("c20 |", "c20 NESTED |"))
        for style, text in blocks
        if text.strip()
    ]
    read = read_docx(io.BytesIO(data), max_text_chars=1_000_000)
    assert read.blocks == expected
    assert read.title == title == "Minutes"
    assert ("", "c10 second paragraph | c11 | c12 c22") in read.blocks  # merges as python-docx reports them
    assert ("", "c20 NESTED | c21 | c12 c22") in read.blocks


def test_extracted_docx_markdown_is_unchanged_for_a_normal_document() -> None:
    """Headings, lists and tables become the same Markdown as before."""
    doc = extract_text(rich_document(), filename="minutes.docx", content_type=DOCX_TYPE)
    assert doc.title == "Minutes"
    assert doc.text.startswith("# The Title\n\n# Chapter\n\n### Section\n\nHello world\tafter a tab\nsecond line")
    assert "\n\n- beef\n\n1. first step\n\n" in doc.text
    assert "see the link-\nafter a carriage return" in doc.text


def _counting_open(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real: Callable[..., IO[bytes]] = zipfile.ZipFile.open

    def spy(self: zipfile.ZipFile, name: Any, *args: Any, **kwargs: Any) -> IO[bytes]:
        opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else str(name))
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    return opened


def test_a_small_docx_holding_60_mib_of_xml_is_refused_before_its_text_is_unpacked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compression ratio of the text part is checked before it is unpacked."""
    bomb = with_document_xml(rich_document(), repeated_paragraphs(60 * 1024 * 1024))
    assert len(bomb) < 400_000
    opened = _counting_open(monkeypatch)
    with pytest.raises(KnowledgeValidationError, match=r"unpacks to \d+ times its packed size, over the limit"):
        extract_text(bomb, filename="bomb.docx")
    assert "word/document.xml" not in opened


def test_text_parts_past_the_unpacked_bound_are_refused_before_unpacking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The declared size of the text parts is bounded far below 256 MiB."""
    assert extract.MAX_DOCX_UNPACKED <= 32 * 1024 * 1024
    monkeypatch.setattr(docx_text, "MAX_DOCX_RATIO", 10**9)
    bomb = with_document_xml(rich_document(), repeated_paragraphs(extract.MAX_DOCX_UNPACKED + 1024))
    opened = _counting_open(monkeypatch)
    with pytest.raises(KnowledgeValidationError, match=r"unpacks to \d+ bytes of text parts, over the limit"):
        extract_text(bomb, filename="bomb.docx")
    assert "word/document.xml" not in opened


def test_the_text_limit_is_checked_while_the_xml_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text over the limit stops the reader, naming the limit."""
    monkeypatch.setattr(extract, "MAX_TEXT_CHARS", 1000)
    many = with_document_xml(rich_document(), repeated_paragraphs(200_000))
    with pytest.raises(KnowledgeValidationError, match="its text is over the limit of 1000 characters"):
        extract_text(many, filename="long.docx")


def test_a_docx_whose_xml_declares_entities_is_refused_as_damaged() -> None:
    """No entity is ever expanded (Word never writes a document type)."""
    xml = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
        b'<w:document xmlns:w="' + _W_NS.encode() + b'"><w:body><w:p><w:r><w:t>&b;</w:t></w:r></w:p>'
        b"</w:body></w:document>"
    )
    with pytest.raises(KnowledgeValidationError, match="damaged"):
        extract_text(with_document_xml(rich_document(), xml), filename="entities.docx")


def test_a_docx_bomb_upload_is_413_and_stores_nothing(world: World) -> None:
    """Over REST the bomb gets 413 with the error shape; a normal DOCX still works."""
    kb = world.create_kb()
    bomb = with_document_xml(rich_document(), repeated_paragraphs(60 * 1024 * 1024))
    path = f"/kb/{kb['id']}/documents"
    response = world.request("POST", path, world["member"], files={"file": ("bomb.docx", bomb, DOCX_TYPE)})
    assert response.status_code == 413
    assert response.json()["error"] == "Payload Too Large"
    assert "ZIP bomb" in response.json()["message"]
    assert world.request("GET", path, world["owner"]).json()["total"] == 0
    ok = world.request("POST", path, world["member"], files={"file": ("minutes.docx", rich_document(), DOCX_TYPE)})
    assert ok.status_code == 201, ok.text
    assert ok.json()["document"]["title"] == "Minutes"
