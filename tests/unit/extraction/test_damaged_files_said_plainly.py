"""A damaged PDF or DOCX is refused in the product's own words (K-DOC, KB-GEN-02): the message says the
file is damaged and what the parser found, never a parser's class name, and the parser's own log
lines do not reach the terminal of a program that set up no logging."""

from __future__ import annotations

import subprocess
import sys

import pytest

from notochord.errors import KnowledgeValidationError
from notochord.extraction.text import extract_text

DAMAGED = [
    pytest.param(b"%PDF-1.4\n garbage", "x.pdf", "the PDF is damaged or not a PDF", id="pdf-truncated"),
    pytest.param(b"not a pdf at all", "x.pdf", "the PDF is damaged or not a PDF", id="pdf-no-header"),
    pytest.param(b"%PDF-1.7\ntrailer\n<< /Root 1 0 R >>\n%%EOF", "x.pdf", "the PDF is damaged", id="pdf-no-xref"),
    pytest.param(b"PK\x03\x04garbage", "x.docx", "the DOCX is damaged or not a DOCX", id="docx-broken-zip"),
    pytest.param(b"nope", "x.docx", "the DOCX is damaged or not a DOCX", id="docx-not-zip"),
]
FOREIGN = ("PdfReadError", "PdfStreamError", "BadZipFile", "Error:", "pypdf", "zipfile")


@pytest.mark.parametrize(("data", "name", "said"), DAMAGED)
def test_a_damaged_file_is_refused_without_foreign_class_names(data: bytes, name: str, said: str) -> None:
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_text(data, filename=name)
    message = str(refused.value)
    assert message.startswith(f"cannot extract text from {name}: {said}")
    assert not [word for word in FOREIGN if word in message]


def test_the_pdf_parsers_log_lines_do_not_reach_a_terminal() -> None:
    program = (
        "from notochord.extraction.text import extract_text\n"
        "try:\n"
        "    extract_text(b'not a pdf at all', filename='x.pdf')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "KnowledgeValidationError"
    assert done.stderr == ""
