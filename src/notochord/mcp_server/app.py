"""The MCP server of one space: tools, resources and sessions.

One :class:`McpService` serves every connection of the space; who is calling is decided per
message by the transport (stdio: the connection named on the command line, as installed when the
process started; HTTP: the bearer secret, checked on every request, and the installation it was made
for). A session is bound to that installation: once the connection is removed, every call of the
session is refused, even when a connection of the same name is made again. Each MCP session is one
run of its connection: the run is recorded on the session's first call, every change the session
writes carries its run id, and ``notochord runs undo RUN`` undoes all of them (K-CHG-06, K-CHG-08, OD-K45).

Errors: unknown tools, arguments that do not fit a tool's schema (or are no object at all) or are
over the size limit, and unknown resources are protocol errors (JSON-RPC ``error``), raised before
anything is called. What the gem API refuses or rejects is a tool error the model can read
(``isError``). A bug is a protocol error with a plain message; it never ends the session.

``initialize`` begins a session once: a second one in the same session is refused (``-32600``),
saying how to begin a new session, and the session goes on in the protocol it agreed.

A request whose id is not a string or an integer is answered by each transport before the SDK
reads it (:func:`~notochord.mcp_server.words.unanswerable_id`): the SDK would take it for a
notification and never answer. The words of every refusal are in :mod:`notochord.mcp_server.words`;
those the transports use are named here too.
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
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

import notochord
from notochord.errors import GemNotFoundError, KnowledgePermissionError, NotochordError
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.gems.context import new_run_id
from notochord.knowledge.arguments import shown
from notochord.mcp_server.connections import Connections, removed
from notochord.mcp_server.echo import echoed
from notochord.mcp_server.resources import list_resources, list_templates, read_resource
from notochord.mcp_server.tools import TOOLS, ArgumentError, check_arguments, to_json
from notochord.mcp_server.words import (
    initialize_again,
    not_in_protocol,
    unknown_method,
)

__all__ = ["STDIO_SESSION", "Caller", "McpService", "Session", "build_server"]

log = logging.getLogger("notochord.mcp")

STDIO_SESSION: Final = "stdio"
_TOOLS = {t.name: t for t in TOOLS}

INSTRUCTIONS: Final = (
    "notochord is the person's own knowledge vault. This connection sees only what the person has "
    "switched on for it; a refused call names the permission and the command that switches it on. "
    "Every write is recorded and the person can undo a whole session."
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


async def _initialize_once(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    # The lifecycle has initialize once, as a session's first request; the SDK would answer a second
    # one as if new and let it agree another protocol version in the middle of the session. Its
    # own client never sends one (its initialize() answers from the first handshake).
    if (
        ctx.request_id is not None
        and ctx.method == "initialize"
        and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        and ctx.session.client_params is not None
    ):
        raise MCPError(types.INVALID_REQUEST, initialize_again(http=ctx.request is not None))
    return await call_next(ctx)


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


_KINDS: Final = {
    "string_type": "a string",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
}
"""pydantic's error types, as a refusal says what a value must be."""
_UNION_TAGS: Final = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})
_PROTOCOL_KEYS: Final = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY})
"""The envelope's keys, longer than the cut of a client's own key names."""


def _params_misfit(method: str, error: ValidationError) -> str:
    """Which of the params of ``method`` does not fit, and what it must be, in place of the SDK's
    bare "Invalid request parameters"."""
    problems = error.errors()
    if not problems:
        return f"{method}: params are not of the form {method} takes"

    def where(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
        # pydantic names the params object itself, and each member of a union it tried
        found = [part for part in loc if part not in _UNION_TAGS]
        return tuple(found[1:] if found[:1] == ["params"] else found)

    first = where(problems[0]["loc"])
    # a key is the client's text, cut as such, unless the protocol names it: those are found whole
    named = "params" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p if p in _PROTOCOL_KEYS else echoed(p, 40)}" for p in first
    )
    if problems[0]["type"] == "missing":
        return f"{method}: {named} is required"
    kinds = dict.fromkeys(_KINDS[p["type"]] for p in problems if where(p["loc"]) == first and p["type"] in _KINDS)
    if kinds:
        return f"{method}: {named} must be {' or '.join(kinds)}"
    expected = (problems[0].get("ctx") or {}).get("expected")
    if isinstance(expected, str):
        return f"{method}: {named} must be one of {echoed(expected)}"
    return f"{method}: {named} is not of the form {method} takes"


def _in_own_words(server: Server[Any]) -> ServerMiddleware[Any]:
    """The SDK's refusals of a request, in words that say what to send: an unknown method (whose
    name the SDK repeats whole) and params that do not fit the method (its bare "Invalid request
    parameters", naming neither the field nor its form)."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return await call_next(ctx)
        if ctx.method != "initialize" and server.get_request_handler(ctx.method) is None:
            raise MCPError(
                types.METHOD_NOT_FOUND, unknown_method(ctx.method, ctx.protocol_version), echoed(ctx.method, 60)
            )
        try:
            return await call_next(ctx)
        except ValidationError as error:
            raise MCPError(types.INVALID_PARAMS, _params_misfit(ctx.method, error)) from None
        except MCPError as error:
            if error.error.code == types.METHOD_NOT_FOUND and error.error.message == "Method not found":
                # a method the server answers, but not in the protocol of this request (initialize
                # in the stateless protocol, server/discover in a session); the SDK's data is kept
                said = not_in_protocol(ctx.method, ctx.protocol_version, http=ctx.request is not None)
                raise MCPError(types.METHOD_NOT_FOUND, said, error.error.data) from None
            if error.error.code == types.INVALID_PARAMS and error.error.message == "Invalid request parameters":
                # what the SDK answers to a request sent before the handshake
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"{ctx.method} before initialize: send initialize, then notifications/initialized, first",
                ) from None
            raise

    return middleware


@dataclass(frozen=True)
class Caller:
    """Who sends a message, as its transport tells."""

    connection: str
    key: str | None
    """The transport's session, or ``None`` for a message outside any (a run of its own)."""
    transport: str
    installation: str
    """The installation of the connection the client began with (:meth:`Connections.installation`)."""


@dataclass
class Session:
    """One MCP session of one installation of one connection: one run."""

    connection: str
    installation: str
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

    def session(self, connection: str, key: str, *, transport: str, installation: str) -> Session:
        """The session ``key`` of ``connection``, begun if new, for a client that began with
        ``installation`` of the connection.

        Raises:
            GemNotFoundError: that installation is gone (the connection was removed, whether or not
                one of its name was made again since); in the words of :func:`removed`.
        """
        connections = self.connections
        now = connections.installation(connection)
        if now != installation:
            raise GemNotFoundError(removed(connection, made_again=now is not None))
        with self._lock:
            found = self._sessions.get((connection, key))
            if found is None:
                run_id = new_run_id()
                knowledge = connections.knowledge(connection, run_id, installation=installation)
                found = Session(connection, installation, run_id, knowledge, transport)
                self._sessions[(connection, key)] = found
        if found.installation != installation:
            raise GemNotFoundError(removed(connection, made_again=True))
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


Resolve = Callable[[ServerRequestContext[Any, Any]], Caller]
"""Who sends this message."""


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _message(error: NotochordError, connections: Connections, connection: str) -> str:
    if not isinstance(error, KnowledgePermissionError):
        return error.message
    return _refusal(error, connections, connection)


def _refusal(error: KnowledgePermissionError, connections: Connections, connection: str) -> str:
    asked = connections.asks_for(connection, error.permission)
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
        """The caller's session; a removed connection's refusal is its ``GemNotFoundError``."""
        caller = resolve(ctx)
        # a message outside any transport session (the stateless era of HTTP) is a session of its own
        key = caller.key or new_run_id()
        opened = partial(
            service.session, caller.connection, key, transport=caller.transport, installation=caller.installation
        )
        session = await anyio.to_thread.run_sync(opened)
        try:
            await anyio.to_thread.run_sync(lambda: service.record(session))
            yield session
        finally:
            if caller.key is None:
                # a client gives up on a request without a session by closing its connection, which
                # cancels this; its run is finished all the same, not left running until the server stops
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(lambda: service.close(caller.connection, key))

    @contextlib.asynccontextmanager
    async def resource_session(ctx: ServerRequestContext[Any, Any]) -> AsyncIterator[Session]:
        try:
            async with session_of(ctx) as session:
                yield session
        except GemNotFoundError as error:
            raise MCPError(types.INVALID_REQUEST, error.message) from None

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
        try:
            async with session_of(ctx) as session:
                session.calls += 1
                try:
                    answer = to_json(await tool.call(session.knowledge, arguments))
                except NotochordError as error:
                    refusal = partial(_message, error, service.connections, session.connection)
                    return _tool_error(await anyio.to_thread.run_sync(refusal))
                except Exception:
                    log.exception("MCP tool %s failed", tool.name)
                    raise MCPError(
                        types.INTERNAL_ERROR, f"{tool.name} failed unexpectedly; nothing was written"
                    ) from None
        except GemNotFoundError as error:
            # the connection went before the session could begin: the model reads why, as from a call
            return _tool_error(error.message)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(answer, ensure_ascii=False))],
            structured_content={"result": answer},
        )

    async def resources(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        async with resource_session(ctx) as session:
            return types.ListResourcesResult(resources=await list_resources(session.knowledge))

    async def templates(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        async with resource_session(ctx) as session:
            return types.ListResourceTemplatesResult(resource_templates=await list_templates(session.knowledge))

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        async with resource_session(ctx) as session:
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
    server.middleware += [_initialize_once, _in_own_words(server), _name_and_arguments_are_usable]
    return server
