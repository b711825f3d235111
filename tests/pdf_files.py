"""PDF files written by hand for the extraction tests (imported by bare name from every test folder:
``tests/`` is on pytest's path).

The cross-reference table is computed from the real object offsets, so each file is valid and not
merely tolerated by a lenient reader.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence


def pdf_file(objects: Sequence[bytes], *, info: int | None = None, trailer: bytes = b"") -> bytes:
    """A PDF of ``objects``, numbered from 1 (the first is the catalog), with ``info`` the number of
    the document information object, if any, and ``trailer`` further trailer entries (``/Encrypt``)."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    info_entry = b" /Info %d 0 R" % info if info is not None else b""
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s %s >>\n" % (len(objects) + 1, info_entry, trailer))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def slow_pdf(pages: int, stream_bytes: int) -> bytes:
    """A PDF built to be slow to read: ``pages`` pages that all draw one Flate-compressed content
    stream of ``stream_bytes`` bytes of text operators. Twenty pages of a megabyte fit in 6 KB and
    cost a PDF reader seconds per page."""
    operator = b"BT /F1 12 Tf 10 10 Td (a) Tj ET\n"
    content = (operator * (stream_bytes // len(operator) + 1))[:stream_bytes]
    stream = zlib.compress(content, 9)
    kids = b" ".join(b"%d 0 R" % (5 + page) for page in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
        b" /Resources << /Font << /F1 4 0 R >> >> >>"
    ] * pages
    return pdf_file(objects)
