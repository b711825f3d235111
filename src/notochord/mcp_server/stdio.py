"""MCP over stdin/stdout for one connection: what a desktop client launches.

No secret is asked for: the person started the process on their own machine, with their own
data directory. The connection must exist, and the whole process is one session, so one run.
A line that is not JSON is answered with a parse error (-32700), JSON that is no JSON-RPC message
with an Invalid Request (-32600), both with ``id: null``, and the session goes on; so is a request
whose id is not a string or an integer (:func:`~notochord.mcp_server.app.unanswerable_id`), with
-32600, before the SDK reads it as a notification and leaves it unanswered.

stdin is opened here rather than by the SDK, so that its lines can be looked at first; like the
SDK, the client's messages are read through a copy of descriptor 0 while descriptor 0 itself reads
nothing, so a tool, or a process it starts, reading stdin can never take one.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from notochord.app import Notochord
from notochord.mcp_server.app import (
    STDIO_SESSION,
    McpService,
    build_server,
    not_json,
    not_json_rpc,
    unanswerable_id,
)
from notochord.mcp_server.connections import Connections

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


class _ScreenedStdin(anyio.AsyncFile[str]):
    """The client's lines for the SDK's reader, less each request whose id cannot be answered:
    its refusal goes to ``refusals`` instead."""

    def __init__(self, fp: IO[str], refusals: MemoryObjectSendStream[SessionMessage]) -> None:
        super().__init__(fp)
        self._refusals = refusals

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._refusals:
            async for line in super().__aiter__():
                problem = unanswerable_id(line)
                if problem is None:
                    yield line
                else:
                    await self._refusals.send(_error(types.INVALID_REQUEST, problem))


def _copy_above_the_standard_three(fd: int) -> int:
    # were descriptor 1 or 2 closed, a plain copy could land there, where stdout or stderr goes
    try:
        import fcntl
    except ImportError:  # no fcntl on this platform: the plain copy
        return os.dup(fd)
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextlib.contextmanager
def _client_stdin() -> Iterator[IO[str]]:
    """stdin as text for the wire, read through a copy of descriptor 0 while descriptor 0 itself
    points at the null device; put back afterwards."""
    try:
        wire = _copy_above_the_standard_three(0) if sys.stdin is not None and sys.stdin.fileno() == 0 else None
    except (AttributeError, OSError, ValueError):
        wire = None
    if wire is None:
        # an in-process stand-in for stdin (a test's), or no stdin at all: read it as it is
        yield sys.stdin if sys.stdin is not None else io.StringIO()
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # never closed: a worker thread may still be blocked reading it once serving has ended
        yield open(wire, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    finally:
        os.dup2(wire, 0)


async def _serve(service: McpService, connection: str) -> None:
    server = build_server(service, lambda _ctx: (connection, STDIO_SESSION, "stdio"))
    refusals_send, refusals_receive = anyio.create_memory_object_stream[SessionMessage](math.inf)
    with _client_stdin() as stdin:
        screened = _ScreenedStdin(stdin, refusals_send)
        async with stdio_server(stdin=screened) as (read_stream, write_stream):
            relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)

            async def relay() -> None:
                async with relay_send:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await write_stream.send(_parse_error(item))
                        else:
                            await relay_send.send(item)

            async def refuse() -> None:
                async with refusals_receive:
                    async for reply in refusals_receive:
                        await write_stream.send(reply)

            async with anyio.create_task_group() as group:
                group.start_soon(relay)
                group.start_soon(refuse)
                await server.run(relay_receive, write_stream, server.create_initialization_options())
                group.cancel_scope.cancel()


def serve_stdio(nc: Notochord, connection: str) -> None:
    """Serve ``connection`` of the personal space until stdin closes; then its run is finished.

    Raises:
        GemNotFoundError: no such connection.
    """
    connections = Connections(nc.personal)
    connections.get(connection)
    service = McpService(connections)
    try:
        anyio.run(_serve, service, connection)
    finally:
        service.close_all()
