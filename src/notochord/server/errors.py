"""The one table that turns exceptions into HTTP statuses and the one error body.

Every error response of the service is ``{ "error": <title>, "message": <text> }``, except 404, which
is exactly ``{ "error": "Not found" }`` so that every not-found case is byte-identical (KB-LNK-09,
OD-B23). No response ever carries a stack trace: an unexpected exception is logged here and answered
with a plain 500.

Order matters: the first row whose class matches wins.

A 401 carries ``WWW-Authenticate: Bearer realm="notochord"`` (RFC 6750 §3); when a token was sent
and refused it adds ``error="invalid_token"`` and the reason. A client that goes away before its
request was read is logged as one line, not as an unexpected error.
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

from notochord.errors import NotochordError, StorageFullError
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

__all__ = [
    "ERROR_TABLE",
    "NOT_FOUND_BODY",
    "REALM",
    "ErrorBody",
    "NotFoundBody",
    "Row",
    "challenge",
    "documented",
    "error_body",
    "install",
    "row_for",
]

log = logging.getLogger("notochord.server")

NOT_FOUND_BODY: dict[str, str] = {"error": "Not found"}
_INTERNAL_MESSAGE = "The server could not complete the request; the error was logged."


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
    Row(StorageFullError, 507, "Insufficient Storage"),
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
    if row.status >= 500 and row.status != 502:
        log.error("unexpected error while serving a request", exc_info=exc)
    message = exc.message if row.show_message and isinstance(exc, NotochordError) else None
    response = error_body(row.status, row.title, message)
    if isinstance(exc, KbAuthenticationError):
        response.headers["WWW-Authenticate"] = challenge(exc)
    return response


def _handle_disconnect(request: Request, _exc: Exception) -> JSONResponse:
    # Nobody is left to read the answer; one line says what happened without a traceback.
    peer = f"{request.client.host}:{request.client.port}" if request.client is not None else "a client"
    log.info("%s disconnected before its request to %s %s was read", peer, request.method, request.url.path)
    return error_body(400, "Bad Request", "The client disconnected before the request was read")


def _handle_http(_request: Request, exc: Exception) -> JSONResponse:
    # routing failures: an unknown path is an ordinary not-found; a wrong method says which
    status = exc.status_code if isinstance(exc, StarletteHTTPException) else 500
    title = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    response = error_body(status, title, f"{title}: {exc.detail}" if isinstance(exc, StarletteHTTPException) else None)
    if isinstance(exc, StarletteHTTPException) and exc.headers:
        response.headers.update(exc.headers)
    return response


def _handle_validation(_request: Request, _exc: Exception) -> JSONResponse:
    return error_body(400, "Bad Request", "The request is malformed")


def install(app: FastAPI) -> None:
    """Register the table's handlers on ``app``."""
    app.add_exception_handler(StarletteHTTPException, _handle_http)
    app.add_exception_handler(RequestValidationError, _handle_validation)
    app.add_exception_handler(ClientDisconnect, _handle_disconnect)
    for row in ERROR_TABLE:
        app.add_exception_handler(row.exception, _handle)


_DESCRIPTIONS = {
    400: "The body or an argument is malformed (limit and offset must be whole numbers of 0 or more).",
    401: "No token, or a malformed, expired or wrongly signed one.",
    403: "The caller lacks the role or grant.",
    404: "Missing, deleted, of another organization, or a malformed id: all alike.",
    409: "The knowledge base and the agent belong to different organizations.",
    413: "The body (1 MiB; an upload 32 MiB), the document's text or the record is over the service's limit.",
    415: "The body or the uploaded file is of a type the service does not ingest.",
    502: "The URL to ingest could not be fetched (connection failure, timeout or error status).",
    507: "The service's disk is full: nothing was written; retry once space is freed.",
}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route can return."""
    return {
        status: {"model": NotFoundBody if status == 404 else ErrorBody, "description": _DESCRIPTIONS[status]}
        for status in statuses
    }
