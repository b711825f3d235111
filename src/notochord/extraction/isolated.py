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
- The others go to a reader (:mod:`notochord.extraction.reader`): a long-lived interpreter of its
  own, started with ``subprocess`` (so the caller never forks itself while it has threads, and
  never has its own main module run again in a reader). Readers are kept and reused, since
  starting one costs an interpreter and the parsers' imports (under a second); one is
  retired after :data:`_TASKS_PER_READER` files, and one left idle for
  :data:`READER_IDLE_SECONDS` is stopped, so a long-running server that read one PDF does not hold a
  parser's memory for the rest of its life.
- A file gets :data:`EXTRACT_SECONDS` of wall time and :data:`EXTRACT_MEMORY_BYTES` of address space;
  past either it is refused as too slow or too large to read, and its reader is stopped before the
  call returns. At most :data:`CONCURRENT_EXTRACTIONS` files are read at once per process: a burst of
  hostile files queues instead of taking every core, and a call that waits :data:`QUEUE_SECONDS`
  for its turn is refused with :class:`~notochord.errors.BusyError` instead of holding its thread.
  At most :data:`MAX_QUEUED` calls wait at once; one more is refused at once, so a burst of uploads
  cannot hold every thread of a server waiting for a reader.
- A reader whose parent is gone exits on its own within a second, even in the middle of a file.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

from notochord.errors import BusyError, DocumentTooLargeError, KnowledgeValidationError, UnsupportedDocumentError
from notochord.extraction.reader import OUT_OF_MEMORY, Outcome
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
    "MAX_QUEUED",
    "QUEUE_SECONDS",
    "READER_IDLE_SECONDS",
    "READER_MODULE",
    "extract_file_isolated",
    "extract_isolated",
]

EXTRACT_SECONDS: Final = 120.0
EXTRACT_MEMORY_BYTES: Final = 2 * 1024 * 1024 * 1024
CONCURRENT_EXTRACTIONS: Final = max(1, os.cpu_count() or 1)
QUEUE_SECONDS: Final = 30.0
MAX_QUEUED = 4 * CONCURRENT_EXTRACTIONS  # read at each call, so a test may lower it

_IN_PROCESS_KINDS: Final = frozenset({"text", "markdown"})
READER_MODULE: Final = "notochord.extraction.reader"
# the package's own root goes last on the reader's path: the interpreter's own packages come first,
# as in the caller, and a checkout run without an install still finds notochord
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])  # the folder that holds notochord/
_READER_PROGRAM: Final = (
    f"import sys; sys.path.append(sys.argv.pop(1)); from {READER_MODULE} import main; main(sys.argv[1:])"
)

_TASKS_PER_READER: Final = 200
_EXIT_SECONDS: Final = 5.0
READER_IDLE_SECONDS = 300.0  # read at each check, so a test may shorten it

_slots = threading.BoundedSemaphore(CONCURRENT_EXTRACTIONS)
_queued = 0  # calls waiting for a slot, under _lock
_lock = threading.Lock()
_pool_changed = threading.Condition(_lock)
_retirer: threading.Thread | None = None
_idle: list[_Reader] = []

_REFUSALS: Final[dict[str, type[KnowledgeValidationError]]] = {
    cls.__name__: cls for cls in (DocumentTooLargeError, UnsupportedDocumentError)
}


class _Reader:
    """One reader process and the caller's end of its socket."""

    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _READER_PROGRAM,
                    _PACKAGE_ROOT,
                    str(theirs.fileno()),
                    str(os.getpid()),
                    str(memory_bytes),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",  # nothing in the caller's folder can stand in for a module the reader imports
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.connection = Connection(ours.detach())
        self.tasks = 0
        self.idle_since = time.monotonic()

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_code(self) -> int:
        """The exit code of a reader that closed its end: it is exiting, or is made to."""
        try:
            return self.process.wait(timeout=_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def stop(self) -> None:
        self.connection.close()
        if self.alive():
            self.process.kill()
        self.process.wait()


def _take_reader(memory_bytes: int) -> _Reader:
    with _lock:
        for reader in [r for r in _idle if r.memory_bytes == memory_bytes or not r.alive()]:
            _idle.remove(reader)
            if reader.alive():
                return reader
            reader.stop()
    return _Reader(memory_bytes)


def _give_back(reader: _Reader) -> None:
    global _retirer
    if reader.tasks >= _TASKS_PER_READER:
        reader.stop()
        return
    with _lock:
        reader.idle_since = time.monotonic()
        _idle.append(reader)
        if _retirer is None:
            _retirer = threading.Thread(target=_retire_idle_readers, name="notochord-extract-retirer", daemon=True)
            _retirer.start()
        _pool_changed.notify()


@atexit.register
def _stop_idle_readers() -> None:
    """At exit, readers in the pool are stopped and waited for, not left for the garbage collector."""
    with _lock:
        leaving = list(_idle)
        _idle.clear()
    for reader in leaving:
        reader.stop()


def _retire_idle_readers() -> None:
    """Stop readers left idle for :data:`READER_IDLE_SECONDS`, for the life of the process.

    The caller's side decides, never the reader: a reader that timed itself out could exit just as
    a caller sends it a file. A reader is taken out of the pool under the lock before it is stopped,
    so no caller can take one that is being stopped.
    """
    while True:
        with _lock:
            now = time.monotonic()
            stale = [reader for reader in _idle if now - reader.idle_since >= READER_IDLE_SECONDS]
            for reader in stale:
                _idle.remove(reader)
            if not stale:
                soonest = min((reader.idle_since for reader in _idle), default=None)
                _pool_changed.wait(None if soonest is None else soonest + READER_IDLE_SECONDS - now)
        for reader in stale:
            reader.stop()


def _exit_outcome(exitcode: int) -> Outcome:
    if exitcode == OUT_OF_MEMORY:
        return ("memory", None, "", "")
    return ("failed", None, f"the reader stopped unexpectedly, exit code {exitcode}", "")


def _wait_for_a_slot(what: str) -> None:
    global _queued
    if _slots.acquire(blocking=False):
        return
    with _lock:
        if _queued >= MAX_QUEUED:
            raise BusyError(
                f"cannot extract text from {what} now: {CONCURRENT_EXTRACTIONS} other files are being read and"
                f" {_queued} more wait for their turn; try again in a minute",
                retry_after=60,
            )
        _queued += 1
    try:
        acquired = _slots.acquire(timeout=QUEUE_SECONDS)
    finally:
        with _lock:
            _queued -= 1
    if not acquired:
        raise BusyError(
            f"cannot extract text from {what} now: {CONCURRENT_EXTRACTIONS} other files are being read and none"
            f" finished within {QUEUE_SECONDS:g} s; try again in a minute",
            retry_after=60,
        )


def _in_reader(
    data: bytes, filename: str | None, content_type: str | None, seconds: float, memory_bytes: int
) -> ExtractedDocument:
    what = filename or "the file"
    _wait_for_a_slot(what)
    try:
        reader = _take_reader(memory_bytes)
        healthy = False
        try:
            reader.tasks += 1
            try:
                reader.connection.send_bytes(json.dumps([filename, content_type]).encode("ascii"))
                reader.connection.send_bytes(data)
                answered = reader.connection.poll(seconds)
            except OSError:  # the reader is gone: its exit code says why
                answered = True
            if not answered:
                raise cannot_extract(
                    what,
                    f"reading it took longer than {seconds:g} s, so it was stopped; a file this slow to read is"
                    " usually damaged or built to be slow: save or export it again and retry",
                )
            try:
                kind, title, text, content_type_read = json.loads(reader.connection.recv_bytes())
                healthy = True
            except (EOFError, OSError):  # the reader exited; a reset socket says so too
                kind, title, text, content_type_read = _exit_outcome(reader.exit_code())
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
