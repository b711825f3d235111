"""Small documents built in memory for the extraction tests: a PDF written by hand and a DOCX."""

from __future__ import annotations

import io
from collections.abc import Sequence

from pdf_files import pdf_file

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _pdf_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"({escaped})"


def minimal_pdf(lines: Sequence[str], *, title: str | None = None) -> bytes:
    """A one-page PDF with one text line per entry (Helvetica, so the text layer is extractable)."""
    operators = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
    for index, line in enumerate(lines):
        operators.append(f"{_pdf_string(line)} Tj" if index == 0 else f"T* {_pdf_string(line)} Tj")
    operators.append("ET")
    content = "\n".join(operators).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    if title is not None:
        objects.append(f"<< /Title {_pdf_string(title)} >>".encode("latin-1"))
    return pdf_file(objects, info=len(objects) if title is not None else None)


def docx_bytes(
    *, title: str | None = None, heading: str, paragraphs: Sequence[str], bullets: Sequence[str] = ()
) -> bytes:
    """A DOCX written by python-docx: an optional Title paragraph, one Heading 1, paragraphs, bullets."""
    import docx

    document = docx.Document()
    if title is not None:
        document.add_heading(title, level=0)
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    for text in bullets:
        document.add_paragraph(text, style="List Bullet")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
