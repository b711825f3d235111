"""MCP over stdin/stdout for one connection: what a desktop client launches.

No secret is asked for: the person started the process on their own machine, with their own
data directory. The connection must exist, and the whole process is one session, so one run.
A line that is not JSON-RPC is answered with a parse error (``id: null``) and the session goes on.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from notochord.app import Notochord
from notochord.mcp_server.app import STDIO_SESSION, McpService, build_server, not_json, not_json_rpc
from notochord.mcp_server.connections import Connections

__all__ = ["serve_stdio"]


def _parse_error(error: Exception) -> SessionMessage:
    # the SDK's reader hands over pydantic's error; its wording (and its class name) stays here
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and problems[0]["type"] == "json_invalid":
        message = not_json(str(problems[0]["msg"]).removeprefix("Invalid JSON: "))
    else:
        message = not_json_rpc()
    reply = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message=message))
    return SessionMessage(reply)


async def _serve(service: McpService, connection: str) -> None:
    server = build_server(service, lambda _ctx: (connection, STDIO_SESSION, "stdio"))
    async with stdio_server() as (read_stream, write_stream):
        relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with relay_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(_parse_error(item))
                    else:
                        await relay_send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
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
