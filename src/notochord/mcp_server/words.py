"""The MCP server's refusals in its own words: what is wrong, and what to send instead.

Each function is the message of one refusal, shared by the transports that meet it (stdio, HTTP).
A message repeats of the client's input only enough to recognise it (:func:`echoed`), names what
to send in place of what was sent, and never uses the SDK's, pydantic's or Python's words.

The protocol versions named are the SDK's: the 2025 protocols, spoken in a session begun with
``initialize``, and 2026-07-28, without sessions, where every request carries its version and the
client's capabilities in ``params._meta`` (its "envelope") and repeats its version, method and
name in headers.
"""

from __future__ import annotations

import json
from typing import Final

from mcp.shared.inbound import encode_header_value
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS

from notochord.knowledge.arguments import shown
from notochord.mcp_server.echo import echoed

__all__ = [
    "authorization_twice",
    "envelope_lacks",
    "foreign_origin",
    "header_differs",
    "header_twice",
    "initialize_again",
    "method_not_allowed",
    "no_envelope",
    "no_secret",
    "no_session_id",
    "not_acceptable",
    "not_in_protocol",
    "not_json",
    "not_json_declared",
    "not_json_rpc",
    "not_utf8",
    "stream_open",
    "too_large",
    "too_many_sessions",
    "unanswerable_id",
    "unknown_method",
    "unknown_session",
    "unsupported_version",
    "version_differs",
    "version_not_agreed",
    "wrong_host",
]

_SERVED: Final = ("tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read")
"""The methods of the tools and resources, answered in every protocol."""


_ENVELOPE: Final = (
    f'params._meta {{"{PROTOCOL_VERSION_META_KEY}": "{LATEST_MODERN_VERSION}", "{CLIENT_CAPABILITIES_META_KEY}": '
    f'{{}}}} (the client\'s capabilities in that object; "{CLIENT_INFO_META_KEY}" may be added)'
)
"""What every request of the stateless protocol carries."""


def _quoted(value: object) -> str:
    """``value`` as JSON writes it, cut as :func:`echoed` cuts."""
    return echoed(json.dumps(value, ensure_ascii=False), 60)


_TOO_DEEP: Final = "recursion limit exceeded"
"""How the SDK's parser begins its ``detail`` for JSON nested past what it reads."""


def not_json(detail: str) -> str:
    """The answer to a message that is not JSON at all; ``detail`` is the parser's where and why."""
    if detail.startswith(_TOO_DEEP):
        # valid JSON all the same: saying it is not JSON would send the client looking for a typo
        where = detail.removeprefix(_TOO_DEEP).strip()
        return (
            "not a JSON-RPC message: its lists and objects are nested too deeply for this server to read "
            f"(past the limit {where}); send values with fewer lists and objects inside one another"
        )
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


def not_json_rpc(sent: object = None) -> str:
    """The answer to JSON that is not a JSON-RPC 2.0 message (a list, a string, a wrong version, …);
    ``sent`` is the JSON as read, when known."""
    # JSON-RPC 2.0 has batches; MCP took them out, and the SDK reads one message at a time
    batch = (
        "; a batch (a JSON list of messages) is not part of MCP: send each message on its own (over HTTP, one "
        "message in each POST)"
        if isinstance(sent, list)
        else ""
    )
    return (
        'not a JSON-RPC message: send one JSON object with "jsonrpc": "2.0", a "method", an "id" (a string '
        f'or an integer) when it is a request, and "params", when given, as an object{batch}'
    )


def wrong_host() -> str:
    """The answer to a request whose ``Host`` does not name this server (DNS rebinding)."""
    return (
        "refused: this server is not reachable under that host name; send the request to the address "
        "notochord serve printed (127.0.0.1 or localhost and its port)"
    )


def foreign_origin(origin: str) -> str:
    """The answer to a request a web page of another site sent (its ``Origin``)."""
    return (
        f"refused: requests from origin {echoed(origin)} are refused; an assistant connects from its own "
        "app, not from a web page of another site"
    )


def no_secret() -> str:
    """The answer to a request without the verified secret of a connection."""
    return (
        "refused: no valid connection secret; send the secret notochord mcp connect NAME showed, as the "
        "header Authorization: Bearer SECRET (a revoked secret, or one of a removed connection, stays "
        "refused: see the connections and their secrets' state with notochord mcp list)"
    )


def authorization_twice(count: int) -> str:
    """The answer to a request sending the ``Authorization`` header ``count`` times."""
    return (
        f"refused: the Authorization header is sent {count} times, so which connection is asking cannot be "
        "told; send one header: Authorization: Bearer SECRET"
    )


def unknown_session(idle_minutes: int) -> str:
    """The answer to an ``Mcp-Session-Id`` that names no session of the caller's connection: never
    begun, ended, or begun with another connection's secret, which must read the same."""
    return (
        "unknown session: no session of this connection has the id sent in the Mcp-Session-Id header (a "
        f"session ends when its client ends it, after {idle_minutes} minutes without a request, or when the "
        "server stops); begin a new session by sending initialize without the Mcp-Session-Id header"
    )


def no_session_id(method: str) -> str:
    """The answer to a request of a session that does not name it (``method`` the HTTP one)."""
    what = {"GET": "a GET (the stream of a session)", "DELETE": "a DELETE (the end of a session)"}
    return (
        f"no Mcp-Session-Id header: {what.get(method, 'every request after initialize')} names its session "
        "with that header; send initialize without it to begin a session, then send the Mcp-Session-Id "
        "header its answer carries with every request"
    )


def method_not_allowed(method: str, allowed: list[str]) -> str:
    """The answer to an HTTP ``method`` the endpoint does not take; ``allowed`` those it does."""
    uses = {
        "POST": "POST to send a JSON-RPC message",
        "GET": "GET to open the stream of a session",
        "DELETE": "DELETE to end a session",
    }
    said = "; ".join(uses.get(m, m) for m in allowed)
    # the stateless protocol takes POST alone: there is no session to stream or end
    sessionless = (
        " (the protocol version in the Mcp-Protocol-Version header has no sessions)" if allowed == ["POST"] else ""
    )
    return f"/mcp does not take {echoed(method, 20)} requests: use {said}{sessionless}"


def not_acceptable(*, stream: bool) -> str:
    """The answer to a request whose ``Accept`` header leaves out what the answer is sent as;
    ``stream`` for the GET that opens a session's stream."""
    if stream:
        return "a session's stream is sent as an event stream: send the header Accept: text/event-stream"
    return (
        "an answer is sent as JSON or as an event stream: send the header Accept: application/json, text/event-stream"
    )


def stream_open() -> str:
    """The answer to a GET for a session whose one stream is open already."""
    return (
        "this session's stream is open already, and a session has one: read the open one, or close it "
        "before a GET opens another"
    )


def too_many_sessions(limit: int, idle_minutes: int) -> str:
    """The answer to a request that would open a session while ``limit`` are open."""
    return (
        f"too many sessions are open ({limit}, this server's limit): end the sessions no longer used (a "
        "DELETE with their Mcp-Session-Id header; a session ends by itself after "
        f"{idle_minutes} minutes without a request), then send initialize again"
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


def initialize_again(*, http: bool) -> str:
    """The answer to ``initialize`` in a session it began already (``http`` when it came over HTTP,
    with the session's ``Mcp-Session-Id``)."""
    begin = (
        "to begin a new session, send initialize without the Mcp-Session-Id header (and end this one with a "
        "DELETE when it is no longer used)"
        if http
        else "to begin a new session, start a new connection and send initialize first"
    )
    return (
        "this session has begun already: initialize is sent once, as a session's first request, and the "
        f"session goes on in the protocol it agreed; send its other requests as they are, or, {begin}"
    )


def unknown_method(method: str, version: str) -> str:
    """The answer to a request of a ``method`` this server does not answer in protocol ``version``."""
    # the handshake's methods are not part of the stateless protocol, which has discovery instead
    own = ("server/discover",) if version in MODERN_PROTOCOL_VERSIONS else ("initialize", "ping")
    # a notification sent with an id is a request of that name, which no server answers
    hint = "; a notification is sent without an id" if method.startswith("notifications/") else ""
    return f"unknown method {shown(method)} (this server answers {', '.join((*own, *_SERVED))}){hint}"


def not_in_protocol(method: str, version: str, *, http: bool) -> str:
    """The answer to a request of ``method``, which the server answers, but not in protocol ``version``;
    ``http`` when it came over HTTP, where headers name the protocol."""
    if version in MODERN_PROTOCOL_VERSIONS:
        begin = (
            "send initialize without the Mcp-Protocol-Version header"
            if http
            else "send initialize as the first request of a new connection"
        )
        if method == "initialize":
            return (
                f"initialize is not part of the {version} protocol, which has no handshake and no sessions: send "
                f"each request with {_ENVELOPE} (server/discover tells what this server offers), or, to begin a "
                f"session of an earlier protocol, {begin}"
            )
        instead = "; server/discover answers whether the server is there" if method == "ping" else ""
        return (
            f"{echoed(method, 60)} is not part of the {version} protocol; it is answered in a session of an earlier "
            f"protocol (to begin one, {begin}){instead}"
        )
    outside = (
        f"send it without the Mcp-Session-Id header, with the header Mcp-Protocol-Version: {LATEST_MODERN_VERSION} "
        "and the request's params._meta"
        if http
        else f"send it as the first request of a new connection, with {_ENVELOPE}"
    )
    return (
        f"{echoed(method, 60)} is not part of the {version} protocol this session speaks; it belongs to the "
        f"{LATEST_MODERN_VERSION} protocol, which has no sessions: {outside}"
    )


def unsupported_version(version: str) -> str:
    """The answer to a request whose ``Mcp-Protocol-Version`` header names a ``version`` this server
    does not speak (a made-up or garbled one, or one newer than the server)."""
    return (
        f"unsupported protocol version {_quoted(version)} in the Mcp-Protocol-Version header: this server speaks "
        f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS)} in a session, begun with initialize sent without that header "
        "(every later request of the session sends the version its answer names), and "
        f"{' and '.join(MODERN_PROTOCOL_VERSIONS)} without sessions, whose every request sends that header and "
        f"{_ENVELOPE}"
    )


def no_envelope(version: str) -> str:
    """The answer to a request of the stateless protocol ``version`` whose ``params._meta`` is missing
    or is no object."""
    return (
        f"a request of the {version} protocol carries {_ENVELOPE}; send it in the request's params, or, to begin "
        "a session of an earlier protocol, send initialize without the Mcp-Protocol-Version header"
    )


def envelope_lacks(version: str, missing: list[str]) -> str:
    """The answer to a request of the stateless protocol ``version`` whose ``params._meta`` lacks the
    keys ``missing``."""
    lacks = " and ".join(_quoted(key) for key in missing)
    return f"params._meta lacks {lacks}: a request of the {version} protocol carries {_ENVELOPE}"


def header_differs(header: str, sent: str | None, field: str, value: object) -> str:
    """The answer to a request of the stateless protocol whose ``header`` (``sent``, ``None`` when
    missing) does not repeat ``value``, its ``field`` in the body."""
    said = f"no {header} header" if sent is None else f"the {header} header says {_quoted(sent)}"
    if not isinstance(value, str):
        # the header repeats a string; no header can repeat anything else
        return (
            f"{said}, and the request's {field} is {_quoted(value)}: {field} must be a string, which {header} repeats"
        )
    return (
        f"{said}, but the request's {field} is {_quoted(value)}: every request of the {LATEST_MODERN_VERSION} "
        f"protocol repeats it in that header; send {header}: {echoed(encode_header_value(value), 200)}"
    )


def version_differs(sent: str, value: object) -> str:
    """The answer to a request of the stateless protocol whose ``Mcp-Protocol-Version`` header
    (``sent``) and envelope (``value``) name different versions."""
    stateless = " or ".join(MODERN_PROTOCOL_VERSIONS)
    return (
        f"the Mcp-Protocol-Version header says {_quoted(sent)}, but params._meta's "
        f"{_quoted(PROTOCOL_VERSION_META_KEY)} is {_quoted(value)}: send the same version in both ({stateless}, "
        "the protocol this server speaks without sessions)"
    )


def version_not_agreed(sent: str, agreed: str) -> str:
    """The answer to a request of a session whose ``Mcp-Protocol-Version`` header names ``sent``, a
    version the server speaks, but not the one the session's ``initialize`` agreed (``agreed``)."""
    sessionless = (
        f"; the {sent} protocol has no sessions: send its requests without the Mcp-Session-Id header, with {_ENVELOPE}"
        if sent in MODERN_PROTOCOL_VERSIONS
        else ""
    )
    return (
        f"the Mcp-Protocol-Version header says {_quoted(sent)}, but this session agreed {agreed} in its "
        f"initialize and speaks it until it ends: send Mcp-Protocol-Version: {agreed} with its requests, or leave "
        f"the header out; to speak another version, begin a new session with initialize{sessionless}"
    )


def header_twice(header: str) -> str:
    """The answer to a request of the stateless protocol that sends ``header`` more than once."""
    return f"the {header} header is sent more than once: send it once, as the request's only {header} header"


def envelope_in_a_session() -> str:
    """The answer, over stdio, to a request carrying the stateless protocol's envelope on a connection
    that began with ``initialize`` (a connection speaks the protocol its first request chose)."""
    return (
        f"this connection began with initialize, so it speaks a session's protocol "
        f"({', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}): send the request without the "
        f"{LATEST_MODERN_VERSION} envelope in params._meta, or start a new connection whose first request "
        f"carries {_ENVELOPE} to speak {LATEST_MODERN_VERSION}"
    )


def initialize_without_sessions() -> str:
    """The answer, over stdio, to ``initialize`` on a connection whose first request chose the
    stateless protocol, which has no handshake."""
    return (
        f"this connection began with a {LATEST_MODERN_VERSION} request, a protocol without sessions or initialize: "
        f"send each request with {_ENVELOPE}, or start a new connection and send initialize first to begin a "
        "session"
    )
