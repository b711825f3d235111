"""Extraction of a stranger's file is bounded in time and memory, whatever the file is built to do.

``ctx.extract`` (P-GEN-02), the knowledge-base service's uploads (KB-GEN-01) and ``docs import`` parse
files in a child process with a deadline and a memory ceiling (:mod:`notochord.extraction.isolated`):
the answer is the in-process extractor's, word for word, and a file built to be slow or huge is
refused in words with its reader gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pypdf
import pytest
from gemnet_documents import DOCX_TYPE, docx_bytes, minimal_pdf
from gemnet_support import InstallGem

import notochord
from notochord.errors import BusyError, DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction import isolated
from notochord.extraction import text as extraction_text
from notochord.extraction.isolated import READER_MODULE, extract_file_isolated, extract_isolated
from notochord.extraction.text import MAX_INPUT_BYTES, extract_text
from pdf_files import slow_pdf


def _readers() -> set[int]:
    """This process's reader processes still alive, found as the system sees them."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="ascii").rsplit(") ", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # exited while we looked
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and READER_MODULE.encode() in command:
            found.add(int(stat.parent.name))
    return found


def _busy_readers() -> set[int]:
    """Reader processes still alive that are not idle in the pool: one still reading a file."""
    return _readers() - {reader.process.pid for reader in isolated._idle}


@pytest.mark.parametrize(
    ("data", "filename", "content_type"),
    [
        pytest.param(minimal_pdf(["Quarterly report", "Revenue grew"], title="Q3"), "q3.pdf", None, id="pdf"),
        pytest.param(docx_bytes(heading="Plan", paragraphs=["Ship it."], bullets=["one"]), None, DOCX_TYPE, id="docx"),
        pytest.param(b"<title>Stew</title><h1>Stew</h1><p>Slow.</p>", "stew.html", None, id="html"),
        pytest.param(b"# Notes\n\nplain words", "notes.md", None, id="markdown"),
    ],
)
def test_the_child_answers_exactly_what_the_extractor_answers(
    data: bytes, filename: str | None, content_type: str | None
) -> None:
    assert extract_isolated(data, filename=filename, content_type=content_type) == extract_text(
        data, filename=filename, content_type=content_type
    )


@pytest.mark.parametrize(
    ("data", "filename", "refusal"),
    [
        pytest.param(b"%PDF-1.4 nothing else", "broken.pdf", KnowledgeValidationError, id="damaged"),
        pytest.param(b"\x89PNG\r\n", "photo.png", UnsupportedDocumentError, id="unsupported"),
        pytest.param(b"a" * (MAX_INPUT_BYTES + 1), "big.txt", DocumentTooLargeError, id="too-large"),
    ],
)
def test_a_refusal_says_by_its_class_whether_the_file_is_unsupported_or_too_large(
    data: bytes, filename: str, refusal: type[KnowledgeValidationError]
) -> None:
    """Callers (the REST service's 413 and 415) branch on the class, never on the words."""
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_isolated(data, filename=filename)
    assert type(refused.value) is refusal
    assert refused.value.code == "E_VALIDATION"


@pytest.mark.parametrize(
    ("data", "filename", "content_type"),
    [
        pytest.param(b"%PDF-1.4 nothing else", "broken.pdf", None, id="damaged-pdf"),
        pytest.param(minimal_pdf([]), "scan.pdf", None, id="pdf-without-text"),
        pytest.param(b"\x89PNG", None, "image/png", id="unsupported"),
        pytest.param(b"a" * (MAX_INPUT_BYTES + 1), "big.txt", None, id="too-large"),
    ],
)
def test_a_refusal_is_worded_as_the_extractor_words_it(
    data: bytes, filename: str | None, content_type: str | None
) -> None:
    with pytest.raises(KnowledgeValidationError) as in_process:
        extract_text(data, filename=filename, content_type=content_type)
    with pytest.raises(KnowledgeValidationError) as in_child:
        extract_isolated(data, filename=filename, content_type=content_type)
    assert in_child.value.message == in_process.value.message
    assert type(in_child.value) is type(in_process.value)


def test_plain_text_and_refusals_without_a_parser_start_no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(*_args: Any) -> None:
        raise AssertionError("a child was started")

    monkeypatch.setattr(isolated, "_in_reader", no_child)
    assert extract_isolated(b"just words", filename="a.txt").text == "just words"
    with pytest.raises(KnowledgeValidationError, match="not supported"):
        extract_isolated(b"\x89PNG", content_type="image/png")


def test_a_pdf_built_to_be_slow_is_stopped_at_the_deadline_and_its_reader_is_gone() -> None:
    """Twenty pages sharing one compressed megabyte of text operators: 6 KB that cost about a second
    of parsing per page."""
    data = slow_pdf(pages=20, stream_bytes=1_000_000)
    assert len(data) < 10_000
    with pytest.raises(KnowledgeValidationError) as refused:
        extract_isolated(data, filename="slow.pdf", seconds=1)
    assert refused.value.message.startswith("cannot extract text from slow.pdf: reading it took longer than 1 s")
    assert "save or export it again" in refused.value.message
    assert _busy_readers() == set()


def test_a_file_needing_more_memory_than_the_ceiling_is_refused_in_words() -> None:
    page = b"<html><body>" + b"<div><p>word</p></div>" * 1_000_000 + b"</body></html>"
    with pytest.raises(DocumentTooLargeError) as refused:
        extract_isolated(page, filename="huge.html", memory_bytes=256 * 1024 * 1024)
    assert refused.value.message == (
        "cannot extract text from huge.html: reading it needs more than 256 MB of memory, over the limit"
    )
    assert _busy_readers() == set()


def test_a_pdf_stops_at_the_page_that_passes_the_text_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text limit is checked page by page, so a long file is refused without reading the rest."""
    pages_read: list[int] = []
    extract_page: Callable[..., str] = pypdf.PageObject.extract_text

    def counted(page: pypdf.PageObject, *args: Any, **kwargs: Any) -> str:
        pages_read.append(1)
        return extract_page(page, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counted)
    monkeypatch.setattr(extraction_text, "MAX_TEXT_CHARS", 10_000)
    per_page = len(extract_text(slow_pdf(pages=1, stream_bytes=200_000), filename="one.pdf").text)
    assert 5_000 < per_page < 10_000
    pages_read.clear()
    with pytest.raises(KnowledgeValidationError, match="its text is over the limit of 10000 characters"):
        extract_text(slow_pdf(pages=8, stream_bytes=200_000), filename="long.pdf")
    assert len(pages_read) == 2


def test_a_file_on_the_host_is_read_and_extracted_in_a_child(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(minimal_pdf(["Revenue grew"], title="Q3"))
    assert extract_file_isolated(report).text == "Revenue grew"
    with pytest.raises(KnowledgeValidationError, match="cannot read"):
        extract_file_isolated(tmp_path / "missing.pdf")


@pytest.mark.anyio
async def test_a_gems_slow_pdf_is_refused_without_holding_the_host(
    net_space: notochord.Space, install_gem: InstallGem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P-GEN-02: ``ctx.extract.fromBytes`` is every gem's, so its cost is bounded for every gem."""
    monkeypatch.setattr(isolated, "EXTRACT_SECONDS", 1.0)
    extract = net_space.gems.context(install_gem("offline")).extract
    with pytest.raises(KnowledgeValidationError, match="took longer than 1 s"):
        await extract.fromBytes(slow_pdf(pages=20, stream_bytes=1_000_000), {"filename": "slow.pdf"})
    assert _busy_readers() == set()


def test_a_call_that_finds_every_reader_busy_is_refused_with_when_to_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of files queues for the readers; a call that waits past the queue's time is refused
    instead of holding its thread, and says when a retry is worth it. Plain text needs no reader."""
    monkeypatch.setattr(isolated, "QUEUE_SECONDS", 0.1)
    for _ in range(isolated.CONCURRENT_EXTRACTIONS):
        assert isolated._slots.acquire(timeout=5)
    try:
        with pytest.raises(BusyError) as busy:
            extract_isolated(minimal_pdf(["Revenue grew"]), filename="q3.pdf")
        assert extract_isolated(b"just words", filename="a.txt").text == "just words"
    finally:
        for _ in range(isolated.CONCURRENT_EXTRACTIONS):
            isolated._slots.release()
    assert busy.value.code == "E_BUSY"
    assert busy.value.retry_after == 60
    assert busy.value.message.startswith("cannot extract text from q3.pdf now:")
    assert extract_isolated(minimal_pdf(["Revenue grew"]), filename="q3.pdf").text == "Revenue grew"


def _idle_pids() -> set[int | None]:
    return {reader.process.pid for reader in isolated._idle}


def test_readers_are_reused_and_one_stopped_at_its_deadline_is_replaced() -> None:
    """Starting a reader costs the import of the caller's main module, so readers are kept; the one
    that was stopped for a slow file is not among them."""
    pdf = minimal_pdf(["Revenue grew"])
    extract_isolated(pdf, filename="a.pdf")
    before = _idle_pids()
    extract_isolated(pdf, filename="b.pdf")
    assert _idle_pids() == before
    with pytest.raises(KnowledgeValidationError, match="took longer than"):
        extract_isolated(slow_pdf(pages=20, stream_bytes=1_000_000), filename="slow.pdf", seconds=0.5)
    assert _busy_readers() == set()
    assert extract_isolated(pdf, filename="c.pdf").text == "Revenue grew"


def test_a_reader_whose_parent_is_killed_stops_reading(tmp_path: Path) -> None:
    """A parent killed in the middle of a slow file leaves no reader parsing on for hours."""
    slow = tmp_path / "slow.pdf"
    slow.write_bytes(slow_pdf(pages=200, stream_bytes=1_000_000))
    program = (
        "import sys\n"
        "from notochord.extraction import isolated\n"
        "from pathlib import Path\n"
        "isolated.extract_isolated(b'<p>warm</p>', filename='warm.html')\n"
        "print(isolated._idle[0].process.pid, flush=True)\n"
        "isolated.extract_isolated(Path(sys.argv[1]).read_bytes(), filename='slow.pdf')\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", program, str(slow)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        reader_pid = int(parent.stdout.readline())
        assert _alive(reader_pid)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 30
    while _alive(reader_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(reader_pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"  # a zombie has stopped; only its entry is left
    except FileNotFoundError:
        return False


def test_a_reader_left_idle_is_stopped_and_the_next_file_gets_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that read one PDF does not keep a parser's process and memory for the rest of its life."""
    monkeypatch.setattr(isolated, "READER_IDLE_SECONDS", 0.3)
    pdf = minimal_pdf(["Revenue grew"])
    extract_isolated(pdf, filename="a.pdf")
    idle = _idle_pids()
    assert idle
    deadline = time.monotonic() + 20
    while any(pid is not None and _alive(pid) for pid in idle) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid is not None and _alive(pid) for pid in idle)
    assert not idle & _idle_pids()
    assert extract_isolated(pdf, filename="b.pdf").text == "Revenue grew"
    assert not idle & _idle_pids()


def test_a_reader_never_runs_the_callers_script_again(tmp_path: Path) -> None:
    """A script without an ``if __name__ == "__main__"`` guard (writes at top level, a server started
    at top level) has its extraction read once, and its own lines run once: a reader runs notochord's
    parser, not the caller's program."""
    script = tmp_path / "import_notes.py"
    script.write_text(
        "import os, sys\n"
        "from notochord.extraction.isolated import extract_isolated\n"
        "with open(sys.argv[1], 'a', encoding='utf-8') as runs:\n"
        "    runs.write(f'{os.getpid()}\\n')\n"
        "print(extract_isolated(b'<title>Stew</title><p>Slow.</p>', filename='stew.html').text)\n",
        encoding="utf-8",
    )
    runs = tmp_path / "runs.txt"
    done = subprocess.run(
        [sys.executable, str(script), str(runs)], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "Slow.")
    assert len(runs.read_text(encoding="utf-8").split()) == 1


def test_a_program_read_from_standard_input_extracts_too() -> None:
    """``python - < script.py`` has a main module with no file behind it; its readers start all the same."""
    program = (
        "from notochord.extraction.isolated import extract_isolated\n"
        "print(extract_isolated(b'<title>Stew</title><p>Slow.</p>', filename='stew.html').text)\n"
    )
    done = subprocess.run(
        [sys.executable, "-"], input=program, capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "Slow.", "")


def test_a_call_past_the_longest_queue_is_refused_at_once_not_after_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """P-GEN-02, KB-GEN-01: a burst of uploads cannot hold every thread of a server waiting for a
    reader: when as many calls wait as the queue holds, the next is refused without waiting, and
    says so; once a reader is free, files are read again."""
    monkeypatch.setattr(isolated, "QUEUE_SECONDS", 60.0)
    monkeypatch.setattr(isolated, "MAX_QUEUED", 0)
    for _ in range(isolated.CONCURRENT_EXTRACTIONS):
        assert isolated._slots.acquire(timeout=5)
    try:
        started = time.monotonic()
        with pytest.raises(BusyError) as busy:
            extract_isolated(minimal_pdf(["Revenue grew"]), filename="q3.pdf")
        waited = time.monotonic() - started
    finally:
        for _ in range(isolated.CONCURRENT_EXTRACTIONS):
            isolated._slots.release()
    assert waited < isolated.QUEUE_SECONDS
    assert busy.value.message == (
        f"cannot extract text from q3.pdf now: {isolated.CONCURRENT_EXTRACTIONS} other files are being read"
        " and 0 more wait for their turn; try again in a minute"
    )
    assert busy.value.retry_after == 60
    assert extract_isolated(minimal_pdf(["Revenue grew"]), filename="q3.pdf").text == "Revenue grew"
