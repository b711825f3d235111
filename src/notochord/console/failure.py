"""The answer when a request fails on the server's side for a reason no page foresaw (500).

A page or a form whose work raised an exception the console has no answer of its own for (a
store that can no longer be written, a damaged database file, a bug) gets a page in the console's
look and the reader's language, status 500 as it is the server's fault: something went wrong on
this computer's side, what was asked may not have been done (check the page before trying again),
and the details are in the server's log. The exception's own text never reaches the page: it can
name paths, SQL, tables and the driver's words, which are the operator's to read, so it is logged
with its traceback instead.

A part of a page that htmx asked for gets the same sentence as a fragment swapped into the page's
alert area, the way :mod:`notochord.console.unavailable` answers a store out of reach, so the page
stays as it was.

:class:`ServerFailure` is a middleware inside :class:`~notochord.server.head.HeadAsGet` (a HEAD
gets the headers of this page and no body) and around everything else, the guard included. Once
an answer has started going out, nothing can replace it: the exception goes on to the server,
which ends the connection and logs it. A client that went away before its request was read gets
no answer, and one line in the log.
"""

from __future__ import annotations

import logging
from typing import Final

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notochord.console.i18n import choose_lang, text
from notochord.console.render import render_page
from notochord.console.unavailable import ALERT_ID, return_path

__all__ = ["FAILED_STATUS", "ServerFailure", "failure_page"]

log = logging.getLogger("notochord.server")

FAILED_STATUS: Final = 500


def failure_page(request: Request) -> Response:
    """The 500 answer to ``request``, in its reader's language; it says nothing of the cause."""
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    page = {"lang": lang, "title": text("failed_title", lang), "message": text("failed_message", lang)}
    if request.headers.get("hx-request") == "true":
        response = render_page(request, "_failed.html", page, status_code=FAILED_STATUS)
        response.headers["HX-Retarget"] = f"#{ALERT_ID}"
        response.headers["HX-Reswap"] = "innerHTML"
        return response
    return render_page(request, "failed.html", {**page, "again": return_path(request)}, status_code=FAILED_STATUS)


class ServerFailure:
    """ASGI middleware: an exception escaping the console becomes :func:`failure_page`, logged."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._app(scope, receive, watched)
        except ClientDisconnect:
            # nobody is left to read an answer, and nothing failed on this side
            log.info("a client disconnected before its console request %s was read", scope.get("path", ""))
        except Exception as exc:
            if started:
                raise
            log.error("a console request failed: %s %s", scope.get("method", ""), scope.get("path", ""), exc_info=exc)
            await failure_page(Request(scope))(scope, receive, send)
