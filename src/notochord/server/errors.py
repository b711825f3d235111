"""The one table that turns exceptions into HTTP statuses and the one error body.

Every error response of the service is ``{ "error": <title>, "message": <text> }``, except 404, which
is exactly ``{ "error": "Not found" }`` so that every not-found case is byte-identical (KB-LNK-09,
OD-B23). No response ever carries a stack trace: an unexpected exception is logged here and answered
with a plain 500.

Order matters: the first row whose class matches wins.

A 401 carries ``WWW-Authenticate: Bearer realm="notochord"`` (RFC 6750 §3); when a token was sent
and refused it adds ``error="invalid_token"`` and the reason. A 429 (the server is as busy with that
work as it may be) carries ``Retry-After``, as does a 503 (the database server cannot be reached: the
caller may retry; the host, port and user are logged for the operator, never told). A 415 for a
compressed body carries ``Accept-Encoding: identity`` (RFC 9110 §12.5.3). A client that goes away before its
request was read is logged as one line, not as an unexpected error.

No foreign library's wording reaches a client: a pydantic refusal is retold from its structured
``type`` and ``loc`` (:func:`validation_message`), and a Starlette ``HTTPException``'s ``detail`` is
never shown (a 405 names the method and the methods the path takes). PyJWT's refusals are mapped in
:mod:`notochord.server.auth`, Starlette's multipart parser's in :mod:`notochord.server.forms`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from notochord.errors import BusyError, NotochordError, StorageFullError, StoreLockedError, StoreUnreachableError
from notochord.kbservice.errors import (
    KbAuthenticationError,
    KbConflictError,
    KbForbiddenError,
    KbNotFoundError,
    KbPayloadTooLargeError,
    KbUnsupportedMediaTypeError,
    KbUpstreamError,
    KbValidationError,
)
from notochord.server.head import allowed_methods

__all__ = [
    "ERROR_TABLE",
    "NOT_FOUND_BODY",
    "REALM",
    "UNAVAILABLE_RETRY_AFTER",
    "ErrorBody",
    "NotFoundBody",
    "Row",
    "challenge",
    "documented",
    "error_body",
    "install",
    "row_for",
    "validation_message",
]

log = logging.getLogger("notochord.server")

NOT_FOUND_BODY: dict[str, str] = {"error": "Not found"}
_INTERNAL_MESSAGE = "The server could not complete the request; the error was logged."
_UNAVAILABLE_MESSAGE = "The service cannot use its database right now; retry after Retry-After seconds."
UNAVAILABLE_RETRY_AFTER = 5
"""Seconds a 503 asks a client to wait: long enough for a database server's restart to be worth
the retry, short enough that an agent's request still answers."""


@dataclass(frozen=True)
class Row:
    """One entry of the table: a class, its status, its title, and whether the message is shown."""

    exception: type[Exception]
    status: int
    title: str
    show_message: bool = True


ERROR_TABLE: tuple[Row, ...] = (
    Row(KbAuthenticationError, 401, "Unauthorized"),
    Row(KbForbiddenError, 403, "Forbidden"),
    Row(KbNotFoundError, 404, "Not found", show_message=False),
    Row(KbConflictError, 409, "Conflict"),
    Row(KbPayloadTooLargeError, 413, "Payload Too Large"),
    Row(KbUnsupportedMediaTypeError, 415, "Unsupported Media Type"),
    Row(KbValidationError, 400, "Bad Request"),
    Row(KbUpstreamError, 502, "Bad Gateway"),
    Row(BusyError, 429, "Too Many Requests"),
    Row(StorageFullError, 507, "Insufficient Storage"),
    # the database server is down or refuses the service's login: the caller may retry; where and
    # why (host, port, user) is the operator's to read in the log, not the caller's
    Row(StoreUnreachableError, 503, "Service Unavailable", show_message=False),
    # another process held the store past the wait (a backup, a repair): the same, shorter
    Row(StoreLockedError, 503, "Service Unavailable", show_message=False),
    # storage, configuration and every other failure: logged, never detailed to the caller
    Row(NotochordError, 500, "Internal Server Error", show_message=False),
    Row(Exception, 500, "Internal Server Error", show_message=False),
)


class ErrorBody(BaseModel):
    """The error body of every status but 404."""

    error: str
    message: str


class NotFoundBody(BaseModel):
    """The 404 body: exactly ``{ "error": "Not found" }``."""

    error: str


def row_for(exc: Exception) -> Row:
    for row in ERROR_TABLE:
        if isinstance(exc, row.exception):
            return row
    raise AssertionError("the table ends with Exception")  # pragma: no cover


def error_body(status: int, title: str, message: str | None) -> JSONResponse:
    if status == 404:
        return JSONResponse(NOT_FOUND_BODY, status_code=404)
    text = message if message is not None else _INTERNAL_MESSAGE
    return JSONResponse({"error": title, "message": text}, status_code=status)


REALM = "notochord"
_QUOTABLE = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}


def challenge(exc: KbAuthenticationError) -> str:
    """The ``WWW-Authenticate`` value of a refusal (RFC 6750 §3)."""
    if not exc.invalid_token:
        return f'Bearer realm="{REALM}"'
    # error_description is a quoted string of printable ASCII without quotes or backslashes
    reason = "".join(ch if ch in _QUOTABLE else "'" if ch == '"' else " " for ch in exc.message)[:200]
    return f'Bearer realm="{REALM}", error="invalid_token", error_description="{reason}"'


def _handle(_request: Request, exc: Exception) -> JSONResponse:
    row = row_for(exc)
    if isinstance(exc, StoreUnreachableError | StoreLockedError):
        # an outage the operator must see, told in full; a traceback would add nothing to it
        log.error("a request could not be served: %s", exc.message)
    elif row.status >= 500 and row.status != 502:
        log.error("unexpected error while serving a request", exc_info=exc)
    message = exc.message if row.show_message and isinstance(exc, NotochordError) else None
    if isinstance(exc, StoreUnreachableError | StoreLockedError):
        message = _UNAVAILABLE_MESSAGE
    response = error_body(row.status, row.title, message)
    if isinstance(exc, KbAuthenticationError):
        response.headers["WWW-Authenticate"] = challenge(exc)
    if isinstance(exc, KbUnsupportedMediaTypeError) and exc.accept_encoding is not None:
        response.headers["Accept-Encoding"] = exc.accept_encoding
    if isinstance(exc, BusyError):
        response.headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, StoreUnreachableError | StoreLockedError):
        response.headers["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER)
    return response


def _handle_disconnect(request: Request, _exc: Exception) -> JSONResponse:
    # Nobody is left to read the answer; one line says what happened without a traceback.
    peer = f"{request.client.host}:{request.client.port}" if request.client is not None else "a client"
    log.info("%s disconnected before its request to %s %s was read", peer, request.method, request.url.path)
    return error_body(400, "Bad Request", "The client disconnected before the request was read")


_SHOWN_PATH_CHARS = 200


def _shown_path(path: str) -> str:
    """The path as sent when it is short and printable; else described, so that a NUL, bytes that
    were not UTF-8 (decoded as U+FFFD) or a path of thousands of characters are never echoed."""
    if len(path) <= _SHOWN_PATH_CHARS and path.isprintable() and "\ufffd" not in path:
        return path
    return "this path"


def _handle_http(request: Request, exc: Exception) -> JSONResponse:
    # Routing failures: an unknown path is an ordinary not-found; a wrong method says which ones the
    # path takes. Starlette's ``detail`` is never shown: it is Starlette's wording, not the service's.
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 500
    title = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    headers = dict(exc.headers or {}) if isinstance(exc, StarletteHTTPException) else {}
    if status == 405:
        allowed = allowed_methods(request.app.router.routes, request.scope)
        headers["Allow"] = ", ".join(allowed)
        # HEAD comes with every GET; naming it would only lengthen the advice
        named = [method for method in allowed if method != "HEAD"] or ["another path"]
        choices = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
        message: str | None = f"{request.method} is not allowed on {_shown_path(request.url.path)}; use {choices}"
    elif status < 500:
        message = "the request cannot be served as sent; check its method, path, headers and body"
    else:
        message = None
    response = error_body(status, title, message)
    response.headers.update(headers)
    return response


_WHERE = {
    "query": "query parameter",
    "path": "path parameter",
    "header": "header",
    "cookie": "cookie",
    "body": "body field",
}
# pydantic's error types, in the service's words; pydantic's ``msg`` is never shown
_PROBLEMS: dict[str, str] = {
    "missing": "is required",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "string_too_short": "must be at least {min_length} characters",
    "string_too_long": "must be at most {max_length} characters",
    "string_pattern_mismatch": "is not in the accepted form",
    "too_short": "must hold at least {min_length} items",
    "too_long": "must hold at most {max_length} items",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be {ge} or more",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be {le} or less",
    "literal_error": "is not one of the accepted values",
    "enum": "is not one of the accepted values",
    "uuid_parsing": "must be a UUID",
    "uuid_type": "must be a UUID",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "list_type": "must be a JSON array",
}


def _subject(loc: tuple[object, ...]) -> str:
    """``query parameter limit``, ``body field items[2].label`` or ``the request body``."""
    source = str(loc[0]) if loc else "body"
    path = ""
    for part in loc[1:]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    if not path:
        return "the request body" if source == "body" else f"a {_WHERE.get(source, 'parameter')}"
    return f"{_WHERE.get(source, 'parameter')} {path}"


def validation_message(problems: list[dict[str, Any]]) -> str:
    """A refusal by pydantic, told from its structured ``type``, ``loc`` and ``ctx`` alone.

    Example: ``query parameter organizationId must be at most 63 characters; correct it and send the
    request again (each route's parameters are described at /docs)``.
    """
    if not problems:
        return "The request is malformed; check it against the route's description at /docs"
    first = problems[0]
    kind = str(first.get("type", ""))
    loc = tuple(first.get("loc", ()))
    if kind == "json_invalid":
        problem = "the request body is not valid JSON"
    else:
        context = {k: v for k, v in (first.get("ctx") or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
        try:
            wording = _PROBLEMS.get(kind, "is not valid").format(**context)
        except KeyError:
            # a bound this pydantic version does not report: the problem without its number
            wording = "is not valid"
        problem = f"{_subject(loc)} {wording}"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{problem}{more}; correct it and send the request again (each route's parameters are described at /docs)"


def _handle_validation(_request: Request, exc: Exception) -> JSONResponse:
    problems = list(exc.errors()) if isinstance(exc, RequestValidationError) else []
    return error_body(400, "Bad Request", validation_message(problems))


def install(app: FastAPI) -> None:
    """Register the table's handlers on ``app``."""
    app.add_exception_handler(StarletteHTTPException, _handle_http)
    app.add_exception_handler(RequestValidationError, _handle_validation)
    app.add_exception_handler(ClientDisconnect, _handle_disconnect)
    for row in ERROR_TABLE:
        app.add_exception_handler(row.exception, _handle)


_DESCRIPTIONS = {
    400: "The body or an argument is malformed (limit must be a whole number of 1 or more, offset of 0 or more).",
    401: "No token, or a malformed, expired or wrongly signed one.",
    403: "The caller lacks the role or grant.",
    404: "Missing, deleted, of another organization, or a malformed id: all alike.",
    409: "The knowledge base and the agent belong to different organizations.",
    413: "The body (1 MiB; an upload 32 MiB, a form field 1 MiB), the document's text or the record is over the limit.",
    415: "The body or the uploaded file is of a type the service does not ingest, or JSON declared in a "
    "charset other than UTF-8.",
    429: "As many files are being read as may be at once; nothing was added. Retry after Retry-After seconds.",
    502: "The URL to ingest could not be fetched (connection failure, timeout or error status).",
    503: "The service cannot use its database (the server is down, restarting or refusing the login, or another "
    "process holds the store). Retry after Retry-After seconds.",
    507: "The service's disk is full: nothing was written; retry once space is freed.",
}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route can return."""
    return {
        status: {"model": NotFoundBody if status == 404 else ErrorBody, "description": _DESCRIPTIONS[status]}
        for status in statuses
    }
