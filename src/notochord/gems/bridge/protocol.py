"""Messages on the channel: one JSON object per line, in both directions.

Host → child::

    {"type": "start", "input": …, "runId": "run-…", "gemId": "…", "tool": "…"}
    {"type": "result", "id": 7, "value": …}
    {"type": "error", "id": 7, "error": {"code": "E_PERMISSION", "name": "KnowledgePermissionError",
                                         "message": "lacks knowledge permission …"}}

Child → host::

    {"type": "call", "id": 7, "method": "knowledge.facts.put", "args": […], "kwargs": {…}}
    {"type": "done", "output": …}
    {"type": "failed", "error": {"name": "…", "message": "…", "code": "…"}}

Only methods in :data:`METHODS` can be called; anything else is refused with ``E_NO_METHOD``. The
same file is read by the child (no notochord imports here beyond the standard library).

A message is at most :data:`MAX_LINE_BYTES` long. Each side checks what it is about to send: a call
too large to send fails in the tool as a ``GemError`` it can catch, an answer too large becomes an
error answer, an output too large fails the run with words that say so. The host also reads no
longer line, so a tool process that skips the check ends its own run, never the host.

A value a message carries (a call's argument, an answer, the tool's output) nests at most
:data:`MAX_NESTING` lists or objects: each side walks values with Python's recursion, which a
value built to be deep would exhaust. Text may hold lone surrogates (JavaScript's JSON writes them,
and a caller may echo them back in an error); such a message crosses with them escaped, as JSON
allows, since UTF-8 has no bytes for them.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "METHODS",
    "Call",
    "decode",
    "encode",
    "megabytes",
    "read_call",
    "read_failure",
    "read_notes",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The most one channel message may take, its newline included (bytes cross as base64: a third more)."""

MAX_NESTING = 128
"""How many lists or objects a value on the channel may nest, one inside the other (a stored
knowledge value nests at most 100, with room for the answer around it)."""

METHODS: frozenset[str] = frozenset(
    {
        "knowledge.profile.get",
        "knowledge.facts.lookup",
        "knowledge.facts.put",
        "knowledge.facts.retract",
        "knowledge.entities.resolve",
        "knowledge.entities.get",
        "knowledge.entities.list",
        "knowledge.entities.addIdentifier",
        "knowledge.entities.add_identifier",
        "knowledge.search",
        "knowledge.documents.upsert",
        "knowledge.documents.get",
        "knowledge.documents.getByKey",
        "knowledge.documents.get_by_key",
        "knowledge.documents.list",
        "knowledge.documents.delete",
        "knowledge.collections.list",
        "knowledge.collections.create",
        "knowledge.changes.list",
        "knowledge.changes.revert",
        "http.fetch",
        "extract.fromUrl",
        "extract.from_url",
        "extract.fromBytes",
        "extract.from_bytes",
        "files.read",
        "files.readText",
        "files.read_text",
        "files.write",
        "files.list",
        "files.stat",
        "files.delete",
        "files.move",
        "files.mkdir",
        "storage.kv.get",
        "storage.kv.set",
        "storage.kv.delete",
        "storage.kv.list",
        "storage.sql.execute",
        "storage.sql.executemany",
        "storage.sql.query",
        "data.documents.write",
        "data.documents.read",
        "data.documents.list",
        "data.documents.delete",
        "data.blobs.put",
        "data.blobs.get",
        "data.blobs.delete",
        "data.blobs.list",
    }
)


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of UTF-8 JSON; text holding a lone surrogate is written escaped."""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # only ASCII escapes can carry a lone surrogate; every other message keeps its compact UTF-8
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def decode(line: bytes) -> dict[str, Any]:
    """One message, or ``ValueError`` for a line that is not one (nesting too deep included)."""
    try:
        value = json.loads(line.decode("utf-8"))
    except RecursionError:
        raise ValueError("a channel message is nested too deeply") from None
    if not isinstance(value, dict) or "type" not in value:
        raise ValueError("a channel message is a JSON object with a type")
    return value


class Call(NamedTuple):
    id: int
    method: str
    args: list[Any]
    kwargs: dict[str, Any]


def read_call(message: dict[str, Any]) -> Call:
    """The parts of a ``call`` message, or ``ValueError`` when one is missing or of the wrong kind."""
    call_id, method = message.get("id"), message.get("method")
    args, kwargs = message.get("args", []), message.get("kwargs", {})
    if isinstance(call_id, bool) or not isinstance(call_id, int) or not isinstance(method, str):
        raise ValueError("a call has a whole-number id and a method name")
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ValueError("a call's arguments are a list and its keywords an object")
    return Call(call_id, method, args, kwargs)


def read_failure(message: dict[str, Any]) -> dict[str, str]:
    """``name``, ``code``, ``message`` and ``trace`` of a ``failed`` message, as text (empty if absent)."""
    error = message.get("error")
    found = error if isinstance(error, dict) else {}
    return {key: str(found.get(key, "")) for key in ("name", "code", "message", "trace")}


def read_notes(message: dict[str, Any]) -> list[str]:
    """The isolation notes of a ``ready`` message (what is not text is left out)."""
    notes = message.get("isolation")
    return [note for note in notes if isinstance(note, str)] if isinstance(notes, list) else []


def megabytes(size: int) -> str:
    """``size`` bytes in whole megabytes for a message, rounded up (never "0 MB" for a large one)."""
    return f"{-(-size // (1024 * 1024))} MB"
