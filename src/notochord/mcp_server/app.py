"""The MCP server of one space: tools, resources and sessions.

One :class:`McpService` serves every connection of the space; who is calling is decided per
message by the transport (stdio: the connection named on the command line; HTTP: the bearer
secret, checked on every request). Each MCP session is one run of its connection: the run is
recorded on the session's first call, every change the session writes carries its run id, and
``notochord runs undo RUN`` undoes all of them (K-CHG-06, K-CHG-08, OD-K45).

Errors: unknown tools, arguments that do not fit a tool's schema (or are no object at all) or are
over the size limit, and unknown resources are protocol errors (JSON-RPC ``error``), raised before
anything is called. What the gem API refuses or rejects is a tool error the model can read
(``isError``). A bug is a protocol error with a plain message; it never ends the session.

A request whose id is not a string or an integer is answered by each transport before the SDK
reads it (:func:`unanswerable_id`): the SDK would take it for a notification and never answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import anyio.to_thread
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

import notochord
from notochord.errors import GemNotFoundError, KnowledgePermissionError, NotochordError
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.gems.context import new_run_id
from notochord.knowledge.arguments import shown
from notochord.mcp_server.connections import Connections
from notochord.mcp_server.resources import list_resources, list_templates, read_resource
from notochord.mcp_server.tools import TOOLS, ArgumentError, check_arguments, to_json

__all__ = [
    "STDIO_SESSION",
    "McpService",
    "Session",
    "build_server",
    "not_json",
    "not_json_declared",
    "not_json_rpc",
    "not_utf8",
    "too_large",
    "unanswerable_id",
]

log = logging.getLogger("notochord.mcp")

STDIO_SESSION: Final = "stdio"
_TOOLS = {t.name: t for t in TOOLS}

INSTRUCTIONS: Final = (
    "notochord is the person's own knowledge vault. This connection sees only what the person has "
    "switched on for it; a refused call names the permission and the command that switches it on. "
    "Every write is recorded and the person can undo a whole session."
)


def not_json(detail: str) -> str:
    """The answer to a message that is not JSON at all; ``detail`` is the parser's where and why."""
    pairs = "; a lone surrogate escape such as \\ud800 is not text" if "hex escape" in detail else ""
    return f"not a JSON-RPC message: the text is not JSON ({detail}{pairs})"


def not_utf8(error: UnicodeDecodeError) -> str:
    """The answer to a message whose bytes stop being UTF-8 where ``error`` says."""
    byte = error.object[error.start]
    return (
        f"not a JSON-RPC message: the text is not UTF-8 (byte 0x{byte:02x} at byte {error.start + 1} of the "
        "message); send the message as UTF-8"
    )


def too_large(limit: int) -> str:
    """The answer to a message of more than ``limit`` bytes, over either transport."""
    return (
        f"not a JSON-RPC message: a message may be at most {limit} bytes; send less in one message "
        "(a long document in parts, or a shorter value)"
    )


def not_json_declared() -> str:
    """The answer to an HTTP body not declared as JSON (a web form, a careless client)."""
    return "not a JSON-RPC message: send the message as JSON with the header Content-Type: application/json"


def not_json_rpc() -> str:
    """The answer to JSON that is not a JSON-RPC 2.0 message (a list, a string, a wrong version, …)."""
    return (
        'not a JSON-RPC message: send one JSON object with "jsonrpc": "2.0", a "method", an "id" (a string '
        'or an integer) when it is a request, and "params", when given, as an object'
    )


def unanswerable_id(text: str | bytes) -> str | None:
    """Why the request in ``text`` cannot be answered, when its ``id`` is not a string or an integer.

    JSON-RPC 2.0 allows a string, a number or null, and MCP only a string or an integer; the SDK reads
    any other id as a notification's and stays silent, so the client waits forever. A null id is
    refused too: the message is a request all the same (only a missing ``id`` makes a notification),
    MCP forbids it, and the reply's ``id: null`` could not be told apart from the reply to a message
    that was not understood at all. ``None`` when the id is fine, or when ``text`` is not one request
    (the SDK answers that itself).
    """
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    found = message["id"]
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return None
    shown = json.dumps(found, ensure_ascii=False)
    if len(shown) > 60:
        shown = f"{shown[:59]}…"
    return (
        f'a request\'s "id" must be a string or an integer (digits only, no decimal point), not {shown}; '
        "send the request again with such an id"
    )


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "a list"


async def _name_and_arguments_are_usable(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    # The SDK refuses a name or uri that is no string, or arguments that are no object, with a bare
    # "Invalid request parameters", naming neither the field nor what it should be; this runs first.
    if ctx.request_id is None:
        return await call_next(ctx)
    params = ctx.params or {}
    if ctx.method == "resources/read":
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(
                types.INVALID_PARAMS,
                "resources/read needs the uri of a resource as a string (notochord://documents/<ref> from "
                f"resources/list, or a key filled into a template of resources/templates/list), not {_kind(uri)}",
            )
        return await call_next(ctx)
    if ctx.method != "tools/call":
        return await call_next(ctx)
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str):
        raise MCPError(
            types.INVALID_PARAMS,
            f"tools/call needs the name of a tool as a string ({', '.join(_TOOLS)}), not {_kind(name)}",
        )
    if not isinstance(arguments, dict | None):
        tool = _TOOLS.get(name)
        where = f"{tool.name}: " if tool is not None else ""
        which = f" ({', '.join(tool.schema.get('properties', {}))})" if tool is not None else ""
        raise MCPError(
            types.INVALID_PARAMS,
            f"{where}arguments must be an object of the tool's parameters by name{which}, not {_kind(arguments)}",
        )
    return await call_next(ctx)


@dataclass
class Session:
    """One MCP session of one connection: one run."""

    connection: str
    run_id: str
    knowledge: KnowledgeApi
    transport: str
    calls: int = 0
    recorded: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class McpService:
    """The sessions of one space's connections, keyed by (connection, transport session)."""

    def __init__(self, connections: Connections | Callable[[], Connections]) -> None:
        # a factory defers opening the space to the first request (the app is built before that)
        self._connections = connections
        self._sessions: dict[tuple[str, str], Session] = {}
        self._lock = threading.Lock()

    @property
    def connections(self) -> Connections:
        with self._lock:
            if not isinstance(self._connections, Connections):
                self._connections = self._connections()
            return self._connections

    def session(self, connection: str, key: str, *, transport: str) -> Session:
        connections = self.connections
        with self._lock:
            found = self._sessions.get((connection, key))
            if found is None:
                run_id = new_run_id()
                found = Session(connection, run_id, connections.knowledge(connection, run_id), transport)
                self._sessions[(connection, key)] = found
            return found

    def record(self, session: Session) -> None:
        """Record the session's run once, before its first call does anything."""
        with session.lock:
            if not session.recorded:
                self.connections.begin_session(session.connection, session.run_id, transport=session.transport)
                session.recorded = True

    def close(self, connection: str, key: str) -> None:
        with self._lock:
            session = self._sessions.pop((connection, key), None)
        if session is not None and session.recorded:
            self.connections.end_session(session.run_id, calls=session.calls)

    def close_key(self, key: str) -> None:
        """End the session ``key`` of whichever connection holds it (the transport ended it)."""
        for connection, held in self._keys():
            if held == key:
                self.close(connection, key)

    def close_all(self) -> None:
        for connection, key in self._keys():
            self.close(connection, key)

    def _keys(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._sessions)


Resolve = Callable[[ServerRequestContext[Any, Any]], tuple[str, str | None, str]]
"""``(ctx) -> (connection, session key or None, transport)``: who sends this message."""


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _message(error: NotochordError, connections: Connections, connection: str) -> str:
    if not isinstance(error, KnowledgePermissionError):
        return error.message
    return _refusal(error, connections, connection)


def _refusal(error: KnowledgePermissionError, connections: Connections, connection: str) -> str:
    asked = connections.asks_for(connection, error.permission)
    if asked is None and not connections.exists(connection):
        # removed while a session of it was still open (stdio has no secret to refuse it at the door)
        return (
            f"refused: connection {connection} no longer exists, so it may do nothing; to connect again, "
            f"make it anew: notochord mcp connect {connection}, then switch on what it may do with "
            f"notochord gem grant {connection} PERMISSION"
        )
    if asked is not False:
        return f"refused: {error.message}"
    # the gem API's hint speaks of a gem's manifest; a connection's is written once, when it is made
    return (
        f"refused: lacks knowledge permission {error.permission} (connection {connection} was not made to ask for "
        f"it; to let it ask, make the connection again: notochord mcp revoke {connection} --uninstall, then "
        f"notochord mcp connect {connection} --permissions-from FILE, FILE a JSON list of the permissions it may "
        "ask for with this one among them; what it wrote stays, its switches start off again)"
    )


def build_server(service: McpService, resolve: Resolve) -> Server[Any]:
    """The low-level MCP server over ``service``; ``resolve`` names the caller of each message."""

    @contextlib.asynccontextmanager
    async def session_of(ctx: ServerRequestContext[Any, Any]) -> AsyncIterator[Session]:
        connection, key, transport = resolve(ctx)
        # a message outside any transport session (the stateless era of HTTP) is a session of its own
        ephemeral = key is None
        key = key or new_run_id()
        try:
            session = await anyio.to_thread.run_sync(lambda: service.session(connection, key, transport=transport))
            await anyio.to_thread.run_sync(lambda: service.record(session))
        except GemNotFoundError as error:
            raise MCPError(types.INVALID_REQUEST, error.message) from None
        try:
            yield session
        finally:
            if ephemeral:
                await anyio.to_thread.run_sync(lambda: service.close(connection, key))

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.schema,
                    annotations=types.ToolAnnotations(read_only_hint=not t.writes, open_world_hint=False),
                )
                for t in TOOLS
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = _TOOLS.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {shown(params.name)} (tools: {', '.join(_TOOLS)})")
        try:
            arguments = check_arguments(tool, params.arguments)
        except ArgumentError as error:
            raise MCPError(types.INVALID_PARAMS, f"{tool.name}: {error}") from None
        async with session_of(ctx) as session:
            session.calls += 1
            try:
                answer = to_json(await tool.call(session.knowledge, arguments))
            except NotochordError as error:
                refusal = partial(_message, error, service.connections, session.connection)
                return _tool_error(await anyio.to_thread.run_sync(refusal))
            except Exception:
                log.exception("MCP tool %s failed", tool.name)
                raise MCPError(types.INTERNAL_ERROR, f"{tool.name} failed unexpectedly; nothing was written") from None
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(answer, ensure_ascii=False))],
            structured_content={"result": answer},
        )

    async def resources(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        async with session_of(ctx) as session:
            return types.ListResourcesResult(resources=await list_resources(session.knowledge))

    async def templates(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        async with session_of(ctx) as session:
            return types.ListResourceTemplatesResult(resource_templates=await list_templates(session.knowledge))

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        async with session_of(ctx) as session:
            refused = partial(_refusal, connections=service.connections, connection=session.connection)
            return types.ReadResourceResult(
                contents=await read_resource(session.knowledge, str(params.uri), refused=refused)
            )

    server: Server[Any] = Server(
        "notochord",
        version=notochord.__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=resources,
        on_list_resource_templates=templates,
        on_read_resource=read,
    )
    server.middleware.append(_name_and_arguments_are_usable)
    return server
