"""Document text extraction: the pure functions, and ``ctx.extract`` downloading through ``ctx.http``.

Covers P-GEN-02 (extraction is no permission), P-NET-10 (``fromUrl`` is checked against the same
network permission and rules as ``ctx.http``) and the supported kinds: text, Markdown, HTML, PDF, DOCX.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from gemnet_documents import DOCX_TYPE, docx_bytes, minimal_pdf
from gemnet_servers import RouteServer
from gemnet_support import InstallGem

import notochord
from notochord.errors import KnowledgeValidationError, NetworkPermissionError, NetworkRequestError
from notochord.extraction import text as extract_module
from notochord.extraction.text import ExtractedDocument, detect_kind, extract_file, extract_text
from notochord.net.user_rules import NetworkRulesStore

ARTICLE = b"""<!DOCTYPE html>
<html><head><title>Tomato beef stew</title><style>body { color: red }</style>
<script>trackVisitor("stew")</script></head>
<body>
<nav><a href="/">Home</a> <a href="/recipes">Recipes</a></nav>
<h1>Tomato beef stew</h1>
<p>A slow <b>braise</b> for cold evenings.<!-- editor's note: check salt --></p>
<h2>Ingredients</h2>
<ul><li>beef shin</li><li>tomatoes</li></ul>
<div hidden>subscribe to our newsletter</div>
<script>alert("ad")</script>
<table><tr><th>Time</th><td>3 hours</td></tr></table>
</body></html>"""


# ------------------------------------------------------------------ pure extraction


def test_html_keeps_headings_as_markdown_and_drops_script_style_nav_and_hidden_parts() -> None:
    doc = extract_text(ARTICLE, filename=None, content_type="text/html; charset=utf-8")
    assert doc.title == "Tomato beef stew"
    assert doc.content_type == "text/html"
    assert doc.text == (
        "# Tomato beef stew\n\nA slow braise for cold evenings.\n\n## Ingredients\n\n"
        "- beef shin\n\n- tomatoes\n\nTime 3 hours"
    )
    for gone in ("trackVisitor", "alert", "color: red", "Recipes", "newsletter", "editor's note"):
        assert gone not in doc.text


def test_html_without_a_title_element_is_titled_by_its_first_top_heading() -> None:
    doc = extract_text(b"<p>intro</p><h1>Field notes</h1><p>body</p>", filename="notes.html", content_type=None)
    assert doc.title == "Field notes"
    assert doc.text == "intro\n\n# Field notes\n\nbody"


def test_pdf_text_layer_and_title_are_extracted() -> None:
    data = minimal_pdf(["Quarterly report", "Revenue grew (a lot) by 12%"], title="Q3 report")
    doc = extract_text(data, filename="q3.pdf", content_type="application/pdf")
    assert doc.title == "Q3 report"
    assert doc.text == "Quarterly report\nRevenue grew (a lot) by 12%"
    assert doc.content_type == "application/pdf"


def test_docx_headings_become_markdown_and_lists_and_tables_are_kept() -> None:
    data = docx_bytes(title="Stew", heading="Ingredients", paragraphs=["Beef and tomato."], bullets=["beef", "tomato"])
    doc = extract_text(data, filename="stew.docx", content_type=DOCX_TYPE)
    assert doc.title == "Stew"
    assert doc.text == "# Stew\n\n# Ingredients\n\nBeef and tomato.\n\n- beef\n\n- tomato"


def test_docx_table_rows_are_joined_by_bars() -> None:
    import docx

    document = docx.Document()
    document.add_heading("Prices", level=2)
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("item", "price"), ("stew", "12")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    out = io.BytesIO()
    document.save(out)
    doc = extract_text(out.getvalue(), filename="prices.docx", content_type=None)
    assert doc.text == "## Prices\n\nitem | price\n\nstew | 12"
    assert doc.title is None


def test_markdown_title_is_its_first_top_heading_and_plain_text_has_none() -> None:
    markdown = extract_text(b"intro\n# Diary\n\ntext", filename="d.md", content_type="text/plain")
    assert (markdown.title, markdown.content_type) == ("Diary", "text/markdown")
    plain = extract_text(b"# not a title in plain text", filename="d.txt", content_type=None)
    assert (plain.title, plain.content_type) == (None, "text/plain")


def test_declared_charset_is_used_and_undeclared_legacy_text_still_reads() -> None:
    latin = "Café crème".encode("latin-1")
    assert extract_text(latin, content_type="text/plain; charset=iso-8859-1").text == "Café crème"
    assert extract_text(latin, filename="menu.txt").text == "Café crème"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        pytest.param(minimal_pdf(["x"]), "pdf", id="pdf-magic"),
        pytest.param(docx_bytes(heading="h", paragraphs=[]), "docx", id="docx-zip"),
        pytest.param(b"  <!doctype html><p>x</p>", "html", id="html-doctype"),
        pytest.param("naïve text".encode(), "text", id="utf8-text"),
    ],
)
def test_generic_content_type_without_a_name_is_recognised_by_content(data: bytes, kind: str) -> None:
    assert detect_kind(data, filename=None, content_type="application/octet-stream") == kind


@pytest.mark.parametrize(
    ("data", "filename", "content_type", "message"),
    [
        pytest.param(b"\x89PNG\r\n\x1a\n", None, "image/png", "image/png is not supported", id="image"),
        pytest.param(b"\xd0\xcf\x11\xe0\x00\x00", "old.doc", None, "not a supported document", id="doc"),
        pytest.param(b"%PDF-1.4\nthis is not a pdf", "x.pdf", None, "PDF is damaged", id="corrupt-pdf"),
        pytest.param(b"PK\x03\x04 not a zip", "x.docx", None, "DOCX is damaged", id="corrupt-docx"),
        pytest.param(minimal_pdf([]), "scan.pdf", None, "no text layer", id="pdf-without-text"),
        pytest.param(b"  \n\n ", "empty.txt", None, "contains no text", id="empty"),
        pytest.param(b"abc\x00def", "bin.dat", "text/plain", "binary", id="nul-in-text"),
        pytest.param(b"x", "x.txt", "text/plain; charset=klingon", "charset", id="unknown-charset"),
    ],
)
def test_unsupported_or_corrupt_input_is_a_validation_error_saying_what_is_wrong(
    data: bytes, filename: str | None, content_type: str | None, message: str
) -> None:
    with pytest.raises(KnowledgeValidationError, match=message) as refused:
        extract_text(data, filename=filename, content_type=content_type)
    assert refused.value.message.startswith("cannot extract text from ")


def test_docx_that_would_unpack_past_the_bound_is_refused_before_unpacking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<a>" + b" " * 50_000 + b"</a>")
    monkeypatch.setattr(extract_module, "MAX_DOCX_UNPACKED", 10_000)
    with pytest.raises(KnowledgeValidationError, match="unpacks to"):
        extract_text(out.getvalue(), filename="bomb.docx")


def test_extract_file_reads_a_host_file_and_names_a_missing_one(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Plan\n\nbuy beef", encoding="utf-8")
    assert extract_file(note).title == "Plan"
    with pytest.raises(KnowledgeValidationError, match="cannot read"):
        extract_file(tmp_path / "missing.md")


def test_extracted_document_speaks_camel_case_for_javascript() -> None:
    doc = ExtractedDocument(title="t", text="x", content_type="text/plain", url="https://a.example/x")
    assert doc.model_dump(by_alias=True) == {
        "title": "t",
        "text": "x",
        "contentType": "text/plain",
        "url": "https://a.example/x",
    }
    assert doc["contentType"] == doc["content_type"] == "text/plain"


# ------------------------------------------------------------------ ctx.extract


@pytest.fixture
def local_gem(install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer) -> str:
    """A gem with allowLocalNetwork, and the user's entry for the test server."""
    rules.add_local(f"127.0.0.1:{server.port}")
    return install_gem("reader", hosts=[], allow_local=True)


@pytest.mark.anyio
async def test_from_url_extracts_html_pdf_and_docx_served_locally(
    net_space: notochord.Space, local_gem: str, server: RouteServer
) -> None:
    """P-NET-10: the download goes through the gem's network permission and the user's rules."""
    server.route("/stew.html", ARTICLE, content_type="text/html; charset=utf-8")
    server.route("/q3", minimal_pdf(["Revenue grew"], title="Q3"), content_type="application/pdf")
    server.route(
        "/files/notes.docx",
        docx_bytes(heading="Notes", paragraphs=["Buy beef."]),
        content_type="application/octet-stream",
    )
    extract = net_space.gems.context(local_gem).extract

    html = await extract.from_url(server.url("/stew.html"))
    assert (html.title, html.content_type, html.url) == (
        "Tomato beef stew",
        "text/html",
        server.url("/stew.html"),
    )
    assert "## Ingredients" in html.text

    pdf = await extract.fromUrl(server.url("/q3"))
    assert (pdf.title, pdf.text) == ("Q3", "Revenue grew")

    word = await extract.from_url(server.url("/files/notes.docx"))
    assert (word.text, word.content_type) == ("# Notes\n\nBuy beef.", DOCX_TYPE)
    assert [s.path for s in server.seen] == ["/stew.html", "/q3", "/files/notes.docx"]


@pytest.mark.anyio
async def test_from_url_reports_the_final_url_after_a_redirect(
    net_space: notochord.Space, local_gem: str, server: RouteServer
) -> None:
    server.route("/doc.md", b"# Moved\n\nhere", content_type="text/markdown")
    server.redirect("/old", "/doc.md")
    doc = await net_space.gems.context(local_gem).extract.from_url(server.url("/old"))
    assert (doc.title, doc.url) == ("Moved", server.url("/doc.md"))


@pytest.mark.anyio
async def test_from_url_is_refused_for_a_gem_without_network_permission(
    net_space: notochord.Space, install_gem: InstallGem, rules: NetworkRulesStore, server: RouteServer
) -> None:
    """P-NET-10, P-GEN-01: ``fromUrl`` is a network request like ``ctx.http.fetch``."""
    server.route("/stew.html", ARTICLE, content_type="text/html")
    rules.add_local(f"127.0.0.1:{server.port}")
    gem = install_gem("offline")
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(gem).extract.from_url(server.url("/stew.html"))
    assert refused.value.rule == "no-network-permission"
    assert server.seen == []


@pytest.mark.anyio
async def test_from_url_obeys_the_user_local_list(
    net_space: notochord.Space, install_gem: InstallGem, server: RouteServer
) -> None:
    """P-NET-10, P-NET-16: the same user rules as ``ctx.http``."""
    gem = install_gem("reader", hosts=[], allow_local=True)
    with pytest.raises(NetworkPermissionError) as refused:
        await net_space.gems.context(gem).extract.from_url(server.url("/x.pdf"))
    assert refused.value.rule == "user-local-list"
    assert server.seen == []


@pytest.mark.anyio
async def test_from_url_of_a_missing_document_is_a_request_error(
    net_space: notochord.Space, local_gem: str, server: RouteServer
) -> None:
    with pytest.raises(NetworkRequestError, match="answered HTTP 404"):
        await net_space.gems.context(local_gem).extract.from_url(server.url("/missing.pdf"))


@pytest.mark.anyio
async def test_from_bytes_needs_no_network_permission(net_space: notochord.Space, install_gem: InstallGem) -> None:
    """P-GEN-02: extraction itself is available to every tool of every gem."""
    gem = install_gem("offline")
    extract = net_space.gems.context(gem).extract
    doc = await extract.from_bytes(minimal_pdf(["Hello"]), filename="hello.pdf")
    assert doc.text == "Hello"
    same = await extract.fromBytes(b"# Hi\n\nthere", {"contentType": "text/markdown"})
    assert same.title == "Hi"
    with pytest.raises(KnowledgeValidationError, match="not supported"):
        await extract.from_bytes(b"\x89PNG", content_type="image/png")
