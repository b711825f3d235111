"""The reader process of :mod:`notochord.extraction.isolated`: the side that parses a stranger's file.

It runs as its own interpreter (``python -c`` calling :func:`main`), never as a copy of the caller:
a fork or a forkserver child re-runs the caller's main module, so a script without an
``if __name__ == "__main__"`` guard would run its own lines (its writes, its server) again in every
reader, and a program read from standard input could not start one at all.

Protocol, over the socket whose descriptor is the first argument, in
:class:`multiprocessing.connection.Connection` frames: the caller sends a JSON header
``[filename, content type]`` and then the file's bytes; the reader answers with one JSON
:data:`Outcome`. JSON, not pickle, in both directions: the caller must never unpickle what a process
that parsed a hostile file sends back. When the caller closes its end the reader exits with 0.

Exit codes: :data:`OUT_OF_MEMORY` when the file needed more than the address-space ceiling,
:data:`FAILED` for anything else that stopped the reader; a reader prints nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Final

from notochord.errors import KnowledgeValidationError
from notochord.extraction.text import extract_text

__all__ = ["FAILED", "OUT_OF_MEMORY", "Outcome", "main"]

OUT_OF_MEMORY: Final = 3
FAILED: Final = 4
_PARENT_CHECK_SECONDS: Final = 1.0

# ("ok", title, text, content type), ("invalid", the refusal's class name, its words, "")
# or ("failed", None, words, "")
Outcome = tuple[str, str | None, str, str]


def _watch_parent(parent_pid: int) -> None:
    """A reader's watchdog: a parent killed mid-file leaves no reader parsing on for hours.

    A timer signal, not a thread: with a second thread a parser that meets the memory ceiling can
    crawl along its edge for minutes instead of failing at once.
    """

    def check(_signal: int, _frame: object) -> None:
        if os.getppid() != parent_pid:  # re-parented: the caller is gone
            os._exit(0)

    signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, _PARENT_CHECK_SECONDS, _PARENT_CHECK_SECONDS)


def _read(data: bytes, filename: str | None, content_type: str | None) -> Outcome:
    try:
        document = extract_text(data, filename=filename, content_type=content_type)
        return ("ok", document.title, document.text, document.content_type)
    except KnowledgeValidationError as exc:
        return ("invalid", type(exc).__name__, exc.message, "")
    except MemoryError:
        raise
    except Exception as exc:  # the caller turns whatever else a parser raises into words
        return ("failed", None, " ".join(str(exc).split())[:200], "")


def _serve(connection: Connection) -> None:
    while True:
        try:
            header = json.loads(connection.recv_bytes())
            data = connection.recv_bytes()
        except EOFError:
            os._exit(0)
        filename, content_type = header
        # ensure_ascii: a parser may hand back lone surrogates, which JSON carries only as escapes
        connection.send_bytes(json.dumps(_read(data, filename, content_type)).encode("ascii"))


def main(argv: Sequence[str]) -> None:
    """Serve one caller: ``argv`` is the socket's descriptor, the caller's pid and the memory ceiling.

    Out of memory it exits with :data:`OUT_OF_MEMORY` instead of answering: with the address space
    exhausted even encoding a short answer can fail again, and a status needs no memory.
    """
    try:
        descriptor, parent_pid, memory_bytes = (int(value) for value in argv)
        # the ceiling is set once, for the reader's life: readers are kept and taken by their ceiling
        with contextlib.suppress(ValueError, OSError):  # macOS refuses an address-space limit: time still holds
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        _watch_parent(parent_pid)
        # what a parser or the interpreter would print (a generator it could not close out of memory)
        # is no business of the caller's terminal: the outcome says what happened
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (the reader's for life)
        _serve(Connection(descriptor))
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except BaseException:  # a reader prints no traceback: its exit code is its answer
        os._exit(FAILED)
