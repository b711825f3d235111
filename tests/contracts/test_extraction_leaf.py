"""Contract: text extraction is one leaf package that every caller shares.

``ctx.extract``, the REST service and ``notochord docs import`` extract text with
the same code, each in a reader process with a deadline, and name files by one
``file_extension``/``url_filename``, not two.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notochord.cli import docs_cmd
from notochord.extraction import isolated, text
from notochord.gems.api import extract as ctx_extract
from notochord.kbservice import documents as kb_documents
from notochord.server import app as app_module


def test_the_kb_service_and_ctx_extract_name_files_with_the_extraction_package() -> None:
    assert kb_documents.file_extension is text.file_extension
    assert kb_documents.url_filename is text.url_filename
    assert ctx_extract.url_filename is text.url_filename
    assert ctx_extract.extract_isolated is isolated.extract_isolated


def test_the_service_extracts_uploads_in_a_child_process() -> None:
    source = Path(app_module.__file__).read_text(encoding="utf-8")
    assert "KbService(nc, extractor=extract_isolated," in source


def test_the_importer_reads_files_with_the_extraction_package() -> None:
    source = Path(docs_cmd.__file__).read_text(encoding="utf-8")
    assert "from notochord.extraction.isolated import extract_file_isolated" in source
    assert "notochord.gems.api.extract" not in source


@pytest.mark.parametrize(
    ("filename", "expected"),
    [("Report.PDF", ".pdf"), ("notes.tar.gz", ".gz"), ("README", ""), (None, ""), ("dir/page.html", ".html")],
)
def test_file_extension_is_the_lowercased_suffix(filename: str | None, expected: str) -> None:
    assert text.file_extension(filename) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/papers/On%20Stew.pdf", "On Stew.pdf"),
        ("https://example.com/papers/a.docx?download=1", "a.docx"),
        ("https://example.com/", None),
    ],
)
def test_url_filename_is_the_decoded_last_path_segment(url: str, expected: str | None) -> None:
    assert text.url_filename(url) == expected
