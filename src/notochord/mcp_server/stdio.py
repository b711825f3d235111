"""MCP over stdin/stdout for one connection: what a desktop client launches.

No secret is asked for: the person started the process on their own machine, with their own
data directory. The connection must exist, and the whole process is one session, so one run, of the
connection as installed when the process started: once that connection is removed, every call is
refused, even if a connection of the same name is made again (that one is another connection).
A line that is not JSON is answered with a parse error (-32700), JSON that is no JSON-RPC message
with an Invalid Request (-32600), both with ``id: null``, and the session goes on; so is a request
whose id is not a string or an integer (:func:`~notochord.mcp_server.app.unanswerable_id`), with
-32600, before the SDK reads it as a notification and leaves it unanswered.

stdin is opened here rather than by the SDK, so that its lines can be looked at first; like the
SDK, the client's messages are read through a copy of descriptor 0 while descriptor 0 itself reads
nothing, so a tool, or a process it starts, reading stdin can never take one. Lines are read in
bounded pieces and decoded strictly (:mod:`notochord.mcp_server.lines`): a line past the limit is
refused with -32600 and bytes that are not UTF-8 with -32700, both with ``id: null``.

When stdin closes, the requests already read are answered before the server stops (a script may
write its calls and close stdin at once): stopping at once would cancel them, telling the client
"connection closed" about a write that may well have been made.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any, Final, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from notochord.app import Notochord
from notochord.mcp_server.app import STDIO_SESSION, Caller, McpService, build_server
from notochord.mcp_server.connections import Connections
from notochord.mcp_server.lines import LineProblem, bounded_lines
from notochord.mcp_server.words import (
    envelope_in_a_session,
    initialize_without_sessions,
    not_json,
    not_json_rpc,
    unanswerable_id,
)

__all__ = ["serve_stdio"]


def _error(code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)))


def _parse_error(error: Exception) -> SessionMessage:
    # the SDK's reader hands over pydantic's error; its wording (and its class name) stays here
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and problems[0]["type"] == "json_invalid":
        return _error(types.PARSE_ERROR, not_json(str(problems[0]["msg"]).removeprefix("Invalid JSON: ")))
    # JSON-RPC 2.0: JSON that is no request object is an Invalid Request; a parse error is for text that is not JSON
    return _error(types.INVALID_REQUEST, not_json_rpc())


# the SDK's refusals of a request of the other protocol than the connection's first one chose,
# raised before any handler (or middleware) of the server sees the request
_OTHER_ERA: Final = {
    "this connection serves the handshake protocol era; requests carrying the 2026-07-28 envelope are not "
    "accepted on it": envelope_in_a_session,
    "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted": (
        initialize_without_sessions
    ),
}


def _in_own_words(reply: SessionMessage) -> SessionMessage:
    """``reply``, with the project's words where the SDK refused in its own (code, id and data kept)."""
    message = reply.message
    if not isinstance(message, types.JSONRPCError):
        return reply
    words = _OTHER_ERA.get(message.error.message)
    if words is None:
        return reply
    error = message.error.model_copy(update={"message": words()})
    return SessionMessage(message.model_copy(update={"error": error}), metadata=reply.metadata)


def _batch(text: str) -> str | None:
    """The refusal of ``text`` when it is a JSON-RPC batch (a JSON list), else ``None``."""
    # pydantic's report of a list does not hand back the list itself, only what failed inside it
    if not text.lstrip().startswith("["):
        return None
    try:
        sent = json.loads(text)
    except (ValueError, RecursionError):
        return None  # not JSON: the SDK's reader answers that
    return not_json_rpc(sent) if isinstance(sent, list) else None


class _ScreenedStdin:
    """The client's lines for the SDK's reader (which only iterates them), less each line that is
    too long or not UTF-8, each batch (a JSON list of messages) and each request whose id cannot be
    answered: their refusals go to ``refusals`` instead."""

    def __init__(self, read: Callable[[int], bytes], refusals: MemoryObjectSendStream[SessionMessage]) -> None:
        self._read = read
        self._refusals = refusals

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._refusals:
            async for line in bounded_lines(self._read):
                if isinstance(line, LineProblem):
                    await self._refusals.send(_error(line.code, line.message))
                    continue
                problem = _batch(line.text) or unanswerable_id(line.text)
                if problem is None:
                    yield line.text
                else:
                    await self._refusals.send(_error(types.INVALID_REQUEST, problem))


class _InFlight:
    """The client's requests not answered yet, so that the end of stdin can wait for them."""

    def __init__(self) -> None:
        self._ids: set[types.RequestId] = set()
        self._ended = False
        self._settled = anyio.Event()

    def read(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # a request the client cancelled is never answered (the SDK keeps to the protocol)
            self._settle((message.params or {}).get("requestId"))

    def written(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._settle(message.id)

    def _settle(self, request_id: object) -> None:
        if isinstance(request_id, int | str):
            self._ids.discard(request_id)
        if self._ended and not self._ids:
            self._settled.set()

    async def answered(self) -> None:
        """Once every request read so far has its answer written."""
        self._ended = True
        self._settle(None)
        await self._settled.wait()


def _copy_above_the_standard_three(fd: int) -> int:
    # were descriptor 1 or 2 closed, a plain copy could land there, where stdout or stderr goes
    try:
        import fcntl
    except ImportError:  # no fcntl on this platform: the plain copy
        return os.dup(fd)
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextlib.contextmanager
def _client_stdin() -> Iterator[Callable[[int], bytes]]:
    """A read of the client's bytes (at most n, as soon as any are there; ``b""`` at the end),
    through a copy of descriptor 0 while descriptor 0 itself points at the null device; put back
    afterwards."""
    try:
        wire = _copy_above_the_standard_three(0) if sys.stdin is not None and sys.stdin.fileno() == 0 else None
    except (AttributeError, OSError, ValueError):
        wire = None
    if wire is None:
        # an in-process stand-in for stdin (a test's), or no stdin at all: read it as it is
        yield _stand_in_reader(sys.stdin)
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # unbuffered, so that a read returns what has come rather than waiting for n bytes; never
        # closed: a worker thread may still be blocked reading it once serving has ended
        raw = open(wire, "rb", buffering=0, closefd=False)  # noqa: SIM115
        yield lambda n: raw.read(n) or b""
    finally:
        os.dup2(wire, 0)


def _stand_in_reader(stdin: IO[str] | None) -> Callable[[int], bytes]:
    if stdin is None:
        return lambda _n: b""
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None and callable(getattr(buffer, "read1", None)):
        read1: Callable[[int], bytes] = buffer.read1
        return read1
    return lambda n: stdin.read(n).encode("utf-8", "surrogateescape")


async def _serve(service: McpService, caller: Caller) -> None:
    server = build_server(service, lambda _ctx: caller)
    refusals_send, refusals_receive = anyio.create_memory_object_stream[SessionMessage](math.inf)
    in_flight = _InFlight()
    with _client_stdin() as read:
        screened = cast("anyio.AsyncFile[str]", _ScreenedStdin(read, refusals_send))
        async with stdio_server(stdin=screened) as (read_stream, write_stream):
            relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)
            answers_send, answers_receive = anyio.create_memory_object_stream[SessionMessage](0)

            async def relay() -> None:
                async with relay_send:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await write_stream.send(_parse_error(item))
                        else:
                            in_flight.read(item.message)
                            await relay_send.send(item)
                    await in_flight.answered()

            async def answer() -> None:
                async with answers_receive:
                    async for reply in answers_receive:
                        reply = _in_own_words(reply)
                        await write_stream.send(reply)
                        in_flight.written(reply.message)

            async def refuse() -> None:
                async with refusals_receive:
                    async for reply in refusals_receive:
                        await write_stream.send(reply)

            # each task ends of itself once stdin has ended and every answer and refusal is written
            async with write_stream, anyio.create_task_group() as group:
                group.start_soon(relay)
                group.start_soon(answer)
                group.start_soon(refuse)
                async with answers_send:
                    await server.run(relay_receive, answers_send, server.create_initialization_options())


def serve_stdio(nc: Notochord, connection: str) -> None:
    """Serve ``connection`` of the personal space until stdin closes, or the client stops reading
    stdout; then its run is finished.

    Raises:
        GemNotFoundError: no such connection.
    """
    connections = Connections(nc.personal)
    installation = connections.installed(connection)
    service = McpService(connections)
    try:
        anyio.run(_serve, service, Caller(connection, STDIO_SESSION, "stdio", installation))
    except* BrokenPipeError:
        # the client closed its end (its app quit): nobody is left to answer, which is no failure
        # of this server; a write that was running has finished whole, and the run is ended below
        pass
    finally:
        service.close_all()
