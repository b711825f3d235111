"""Document text extraction in reader processes of their own, with a deadline and a memory ceiling.

Why other processes: parsing is the one thing notochord does with a stranger's file whose cost the
file decides. A 6 KB PDF of twenty pages that all draw one compressed megabyte of text operators
costs the PDF parser 17 s of CPU, and the page limit lets one such file cost hours; HTML and DOCX
parsers hold many times their input in memory. Run in the serving process, such a file would also
hold the interpreter lock the whole time, stalling every other request. A reader process can be
stopped when its time is up, its memory is capped by the kernel, and it shares no lock with the server.

Rules:

- :func:`extract_isolated` answers exactly what :func:`~notochord.extraction.text.extract_text`
  answers for the same bytes, or raises the same refusal (same class, same words); plain text and
  Markdown, which are read in one linear pass, are read in the calling process, and so is every
  refusal that needs no parser (size, type).
- The others go to a reader: a long-lived process started from a small server process
  (``forkserver``, so the caller never forks itself while it has threads). Readers are kept and
  reused, since starting one costs the import of the caller's main module (a tenth of a second for
  the command line); one is retired after :data:`_TASKS_PER_READER` files.
- A file gets :data:`EXTRACT_SECONDS` of wall time and :data:`EXTRACT_MEMORY_BYTES` of address space;
  past either it is refused as too slow or too large to read, and its reader is stopped before the
  call returns. At most :data:`CONCURRENT_EXTRACTIONS` files are read at once per process: a burst of
  hostile files queues instead of taking every core, and a call that waits :data:`QUEUE_SECONDS`
  for its turn is refused with :class:`~notochord.errors.BusyError` instead of holding its thread.
- A reader whose parent is gone exits on its own within a second, even in the middle of a file.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import signal
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

from notochord.errors import BusyError, DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.text import (
    MAX_INPUT_BYTES,
    ExtractedDocument,
    cannot_extract,
    detect_kind,
    extract_text,
    read_document,
)

__all__ = [
    "CONCURRENT_EXTRACTIONS",
    "EXTRACT_MEMORY_BYTES",
    "EXTRACT_SECONDS",
    "QUEUE_SECONDS",
    "READER_NAME",
    "extract_file_isolated",
    "extract_isolated",
]

EXTRACT_SECONDS: Final = 120.0
EXTRACT_MEMORY_BYTES: Final = 2 * 1024 * 1024 * 1024
CONCURRENT_EXTRACTIONS: Final = max(1, os.cpu_count() or 1)
QUEUE_SECONDS: Final = 30.0

_IN_PROCESS_KINDS: Final = frozenset({"text", "markdown"})
_PRELOADED: Final = ["notochord.extraction.text", "pypdf", "bs4"]
READER_NAME: Final = "notochord-extract"
_OUT_OF_MEMORY: Final = 3
_FAILED: Final = 4

_TASKS_PER_READER: Final = 200
_PARENT_CHECK_SECONDS: Final = 1.0

_slots = threading.BoundedSemaphore(CONCURRENT_EXTRACTIONS)
_lock = threading.Lock()
_context: multiprocessing.context.ForkServerContext | None = None
_idle: list[_Reader] = []

# ("ok", title, text, content type), ("invalid", the refusal's class, its words, "") or (kind, None, words, "")
Outcome = tuple[str, str | None, str, str]
Request = tuple[bytes, str | None, str | None]  # data, filename, content type
_REFUSALS: Final[dict[str, type[KnowledgeValidationError]]] = {
    cls.__name__: cls for cls in (DocumentTooLargeError, UnsupportedDocumentError)
}


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOADED)
            _context = context
        return _context


# ---------------------------------------------------------------------- inside a reader


def _watch_parent(parent_pid: int) -> None:
    """A reader's watchdog: a parent killed mid-file leaves no reader parsing on for hours.

    A timer signal, not a thread: with a second thread a parser that meets the memory ceiling can
    crawl along its edge for minutes instead of failing at once.
    """

    def check(_signal: int, _frame: object) -> None:
        try:
            os.kill(parent_pid, 0)
        except (ProcessLookupError, PermissionError):  # gone, or the pid now names another user's process
            os._exit(0)

    signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, _PARENT_CHECK_SECONDS, _PARENT_CHECK_SECONDS)


def _read(request: Request) -> Outcome:
    data, filename, content_type = request
    try:
        document = extract_text(data, filename=filename, content_type=content_type)
        return ("ok", document.title, document.text, document.content_type)
    except KnowledgeValidationError as exc:
        return ("invalid", type(exc).__name__, exc.message, "")
    except MemoryError:
        raise
    except Exception as exc:  # the parent turns whatever else a parser raises into words
        return ("failed", None, " ".join(str(exc).split())[:200], "")


def _serve(connection: Connection, parent_pid: int, memory_bytes: int) -> None:
    """A reader's whole life: read one file per request and answer with its outcome, until the
    parent closes the pipe.

    Out of memory it exits with :data:`_OUT_OF_MEMORY` instead of answering: with the address space
    exhausted even pickling a short answer can fail again, and a status needs no memory.
    """
    try:
        # the ceiling is set once, for the reader's life: readers are kept and taken by their ceiling
        with contextlib.suppress(ValueError, OSError):  # macOS refuses an address-space limit: time still holds
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        _watch_parent(parent_pid)
        # what a parser or the interpreter would print (a generator it could not close out of memory)
        # is no business of the caller's terminal: the outcome says what happened
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (the reader's for life)
        while True:
            try:
                request: Request = connection.recv()
            except EOFError:
                os._exit(0)
            connection.send(_read(request))
    except MemoryError:
        os._exit(_OUT_OF_MEMORY)
    except BaseException:  # a reader prints no traceback: its exit code is its answer
        os._exit(_FAILED)


# ---------------------------------------------------------------------- the caller's side


class _Reader:
    """One reader process and the caller's end of its pipe."""

    def __init__(self, context: multiprocessing.context.ForkServerContext, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.connection, theirs = context.Pipe(duplex=True)
        self.process = context.Process(
            target=_serve, args=(theirs, os.getpid(), memory_bytes), name=READER_NAME, daemon=True
        )
        self.process.start()
        theirs.close()
        self.tasks = 0

    def stop(self) -> None:
        self.connection.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.process.close()


def _take_reader(memory_bytes: int) -> _Reader:
    with _lock:
        for reader in [r for r in _idle if r.memory_bytes == memory_bytes or not r.process.is_alive()]:
            _idle.remove(reader)
            if reader.process.is_alive():
                return reader
            reader.stop()
    return _Reader(_forkserver(), memory_bytes)


def _give_back(reader: _Reader) -> None:
    if reader.tasks >= _TASKS_PER_READER:
        reader.stop()
        return
    with _lock:
        _idle.append(reader)


def _exit_outcome(exitcode: int | None) -> Outcome:
    if exitcode == _OUT_OF_MEMORY:
        return ("memory", None, "", "")
    return ("failed", None, f"the reader stopped unexpectedly, exit code {exitcode}", "")


def _in_reader(
    data: bytes, filename: str | None, content_type: str | None, seconds: float, memory_bytes: int
) -> ExtractedDocument:
    what = filename or "the file"
    if not _slots.acquire(timeout=QUEUE_SECONDS):
        raise BusyError(
            f"cannot extract text from {what} now: {CONCURRENT_EXTRACTIONS} other files are being read and none"
            f" finished within {QUEUE_SECONDS:g} s; try again in a minute",
            retry_after=60,
        )
    try:
        reader = _take_reader(memory_bytes)
        healthy = False
        try:
            reader.tasks += 1
            reader.connection.send((data, filename, content_type))
            if not reader.connection.poll(seconds):
                raise cannot_extract(
                    what,
                    f"reading it took longer than {seconds:g} s, so it was stopped; a file this slow to read is"
                    " usually damaged or built to be slow: save or export it again and retry",
                )
            try:
                kind, title, text, content_type_read = reader.connection.recv()
                healthy = True
            except EOFError:
                reader.process.join()
                kind, title, text, content_type_read = _exit_outcome(reader.process.exitcode)
        finally:
            if healthy:
                _give_back(reader)
            else:
                reader.stop()
    finally:
        _slots.release()
    if kind == "ok":
        return ExtractedDocument(title=title, text=text, content_type=content_type_read)
    if kind == "invalid":
        raise _REFUSALS.get(title or "", KnowledgeValidationError)(text)
    if kind == "memory":
        raise cannot_extract(
            what,
            f"reading it needs more than {memory_bytes // (1024 * 1024)} MB of memory, over the limit",
            DocumentTooLargeError,
        )
    raise cannot_extract(what, f"the file could not be read ({text})" if text else "the file could not be read")


def extract_isolated(
    data: bytes,
    *,
    filename: str | None = None,
    content_type: str | None = None,
    seconds: float | None = None,
    memory_bytes: int | None = None,
) -> ExtractedDocument:
    """Extract the text of one document held in memory, parsing it in a reader process.

    ``seconds`` shortens the deadline (a caller with a budget of its own); it never lengthens it past
    :data:`EXTRACT_SECONDS`. ``memory_bytes`` defaults to :data:`EXTRACT_MEMORY_BYTES`. Both
    constants are read at call time.

    Raises:
        KnowledgeValidationError: as :func:`~notochord.extraction.text.extract_text`, or the file took
            too long or too much memory to read.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise KnowledgeValidationError(f"extract needs bytes, not {type(data).__name__}")
    data = bytes(data)
    # what needs no parser (too large, an unsupported type, plain text) is answered here
    if (
        len(data) > MAX_INPUT_BYTES
        or detect_kind(data, filename=filename, content_type=content_type) in _IN_PROCESS_KINDS
    ):
        return extract_text(data, filename=filename, content_type=content_type)
    return _in_reader(
        data,
        filename,
        content_type,
        EXTRACT_SECONDS if seconds is None else min(seconds, EXTRACT_SECONDS),
        EXTRACT_MEMORY_BYTES if memory_bytes is None else memory_bytes,
    )


def extract_file_isolated(path: str | Path, *, content_type: str | None = None) -> ExtractedDocument:
    """Extract the text of a file on the host (imports), parsing it in a reader process.

    Raises:
        KnowledgeValidationError: the file cannot be read, or see :func:`extract_isolated`.
    """
    source = Path(path)
    return extract_isolated(read_document(source), filename=source.name, content_type=content_type)
