"""Document text extraction in a child process of its own, with a deadline and a memory ceiling.

Why a child process: parsing is the one thing notochord does with a stranger's file whose cost the
file decides. A 6 KB PDF of twenty pages that all draw one compressed megabyte of text operators
costs the PDF parser 17 s of CPU, and the page limit lets one such file cost hours; HTML and DOCX
parsers hold many times their input in memory. Run in the serving process, such a file would also
hold the interpreter lock the whole time, stalling every other request. A child can be stopped when
its time is up, its memory is capped by the kernel, and it shares no lock with the server.

Rules:

- :func:`extract_isolated` answers exactly what :func:`~notochord.extraction.text.extract_text`
  answers for the same bytes, or raises :class:`~notochord.errors.KnowledgeValidationError` in the
  same words; plain text and Markdown, which are read in one linear pass, are read in the calling
  process, and so is every refusal that needs no parser (size, type).
- The others run in a fresh child forked from a small server process that has already imported the
  parsers (``forkserver``): the server never forks a threaded process, and a child costs milliseconds.
- A child gets :data:`EXTRACT_SECONDS` of wall time and :data:`EXTRACT_MEMORY_BYTES` of address space;
  past either the file is refused as too slow or too large to read, and the child is gone before the
  call returns. At most :data:`CONCURRENT_EXTRACTIONS` children run at once per process: a burst of
  hostile files queues instead of taking every core, and a call that waits :data:`QUEUE_SECONDS`
  for its turn is refused with :class:`~notochord.errors.BusyError` instead of holding its thread.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import resource
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

from notochord.errors import BusyError, DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.text import MAX_INPUT_BYTES, ExtractedDocument, detect_kind, extract_text, read_document

__all__ = [
    "CONCURRENT_EXTRACTIONS",
    "EXTRACT_MEMORY_BYTES",
    "EXTRACT_SECONDS",
    "QUEUE_SECONDS",
    "extract_file_isolated",
    "extract_isolated",
]

EXTRACT_SECONDS: Final = 120.0
EXTRACT_MEMORY_BYTES: Final = 2 * 1024 * 1024 * 1024
CONCURRENT_EXTRACTIONS: Final = max(1, os.cpu_count() or 1)
QUEUE_SECONDS: Final = 30.0

_IN_PROCESS_KINDS: Final = frozenset({"text", "markdown"})
_PRELOADED: Final = ["notochord.extraction.text", "pypdf", "bs4"]
# The CPU limit is the kernel's backstop for a child whose parent died before it could stop it.
_CPU_GRACE_SECONDS: Final = 5
_OUT_OF_MEMORY: Final = 3
_FAILED: Final = 4

_slots = threading.BoundedSemaphore(CONCURRENT_EXTRACTIONS)
_context_lock = threading.Lock()
_context: multiprocessing.context.ForkServerContext | None = None

# ("ok", title, text, content type), ("invalid", the refusal's class, its words, "") or (kind, None, words, "")
Outcome = tuple[str, str | None, str, str]
_REFUSALS: Final[dict[str, type[KnowledgeValidationError]]] = {
    cls.__name__: cls for cls in (DocumentTooLargeError, UnsupportedDocumentError)
}


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOADED)
            _context = context
        return _context


def _child(
    answer: Connection,
    data: bytes,
    filename: str | None,
    content_type: str | None,
    seconds: float,
    memory_bytes: int,
) -> None:
    """The child's whole life: cap itself, extract, send one outcome, exit.

    Out of memory it exits with :data:`_OUT_OF_MEMORY` instead of answering: with the address space
    exhausted even pickling a short answer can fail again, and a status needs no memory.
    """
    try:
        cpu = math.ceil(seconds) + _CPU_GRACE_SECONDS
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        with contextlib.suppress(ValueError, OSError):  # macOS refuses an address-space limit: time still holds
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        outcome: Outcome
        try:
            document = extract_text(data, filename=filename, content_type=content_type)
            outcome = ("ok", document.title, document.text, document.content_type)
        except KnowledgeValidationError as exc:
            outcome = ("invalid", type(exc).__name__, exc.message, "")
        except MemoryError:
            raise
        except Exception as exc:  # the parent turns whatever else a parser raises into words
            outcome = ("failed", None, " ".join(str(exc).split())[:200], "")
        answer.send(outcome)
        answer.close()
    except MemoryError:
        os._exit(_OUT_OF_MEMORY)
    except BaseException:  # a child prints no traceback: its exit code is its answer
        os._exit(_FAILED)


def _exit_outcome(exitcode: int | None) -> Outcome:
    if exitcode == _OUT_OF_MEMORY:
        return ("memory", None, "", "")
    return ("failed", None, f"the reader stopped unexpectedly, exit code {exitcode}", "")


def _refused(
    what: str, problem: str, kind: type[KnowledgeValidationError] = KnowledgeValidationError
) -> KnowledgeValidationError:
    return kind(f"cannot extract text from {what}: {problem}")


def _in_child(
    data: bytes, filename: str | None, content_type: str | None, seconds: float, memory_bytes: int
) -> ExtractedDocument:
    what = filename or "the file"
    context = _forkserver()
    if not _slots.acquire(timeout=QUEUE_SECONDS):
        raise BusyError(
            f"cannot extract text from {what} now: {CONCURRENT_EXTRACTIONS} other files are being read and none"
            f" finished within {QUEUE_SECONDS:g} s; try again in a minute",
            retry_after=60,
        )
    try:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(
            target=_child,
            args=(send, data, filename, content_type, seconds, memory_bytes),
            name="notochord-extract",
        )
        try:
            child.start()
            send.close()
            if not receive.poll(seconds):
                raise _refused(
                    what,
                    f"reading it took longer than {seconds:g} s, so it was stopped; a file this slow to read is"
                    " usually damaged or built to be slow: save or export it again and retry",
                )
            try:
                kind, title, text, content_type_read = receive.recv()
            except EOFError:
                child.join()
                kind, title, text, content_type_read = _exit_outcome(child.exitcode)
        finally:
            receive.close()
            if child.is_alive():
                child.kill()
            if child.pid is not None:
                child.join()
                child.close()
    finally:
        _slots.release()
    if kind == "ok":
        return ExtractedDocument(title=title, text=text, content_type=content_type_read)
    if kind == "invalid":
        raise _REFUSALS.get(title or "", KnowledgeValidationError)(text)
    if kind == "memory":
        raise _refused(
            what,
            f"reading it needs more than {memory_bytes // (1024 * 1024)} MB of memory, over the limit",
            DocumentTooLargeError,
        )
    raise _refused(what, f"the file could not be read ({text})" if text else "the file could not be read")


def extract_isolated(
    data: bytes,
    *,
    filename: str | None = None,
    content_type: str | None = None,
    seconds: float | None = None,
    memory_bytes: int | None = None,
) -> ExtractedDocument:
    """Extract the text of one document held in memory, parsing it in a child process.

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
    return _in_child(
        data,
        filename,
        content_type,
        EXTRACT_SECONDS if seconds is None else min(seconds, EXTRACT_SECONDS),
        EXTRACT_MEMORY_BYTES if memory_bytes is None else memory_bytes,
    )


def extract_file_isolated(path: str | Path, *, content_type: str | None = None) -> ExtractedDocument:
    """Extract the text of a file on the host (imports), parsing it in a child process.

    Raises:
        KnowledgeValidationError: the file cannot be read, or see :func:`extract_isolated`.
    """
    source = Path(path)
    return extract_isolated(read_document(source), filename=source.name, content_type=content_type)
