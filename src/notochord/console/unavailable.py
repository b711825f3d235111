"""The answer when the store cannot be used right now, for a page, a form or a part of a page.

The store is out of reach when its PostgreSQL server is down or refuses the login
(:class:`~notochord.errors.StoreUnreachableError`) or another process held it locked past the wait
(:class:`~notochord.errors.StoreLockedError`). Both leave everything as it was, and both pass by
themselves, so the console answers 503 with ``Retry-After`` (the REST service's number of seconds)
and says so in the reader's language: the store cannot be reached right now, nothing was changed,
try again in a few seconds. Where the server is and as whom notochord logs in (host, port, user)
is written to the log for the operator, never into the page.

A page or a form gets a page of its own, with a link that tries the page again (after a form, the
page the form was on). A part of a page that htmx asked for gets the same sentence as a fragment,
swapped into the page's alert area (``#console-alert`` of ``base.html``), so the page stays as it
was. A route that catches a broad :class:`~notochord.errors.NotochordError` to show a refusal lets
every :class:`~notochord.errors.StorageError` through first (``except StorageError: raise``): the
store being out of reach, full or damaged is no refusal of what the person asked for; these two
are answered here, any other by :mod:`notochord.console.failure`.
"""

from __future__ import annotations

import logging
from typing import Final
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from notochord.console.i18n import choose_lang, text
from notochord.console.render import render_page
from notochord.errors import StoreLockedError, StoreUnreachableError
from notochord.server.errors import UNAVAILABLE_RETRY_AFTER

__all__ = ["ALERT_ID", "CLEAR_ALERT", "STORE_UNAVAILABLE", "return_path", "store_unavailable"]

log = logging.getLogger("notochord.server")

STORE_UNAVAILABLE: Final = (StoreUnreachableError, StoreLockedError)
ALERT_ID: Final = "console-alert"
"""The element of every console page an htmx answer of this module is swapped into."""
CLEAR_ALERT: Final = f'<div id="{ALERT_ID}" hx-swap-oob="true"></div>'
"""Appended to every other part of a page htmx asks for: once the store answers again, the alert
that it could not be reached goes away with the next part that arrives."""


def _on_this_console(path: str) -> bool:
    # "//host/…" would leave for another site, and a browser reads "\\" as "/"
    return path.startswith("/") and not path.startswith("//") and not any(c in path for c in "\\\r\n")


def return_path(request: Request) -> str:
    """Where "Try again" leads: the page itself, or after a form the page the form was on."""
    if request.method in ("GET", "HEAD"):
        # the path as the server read it, encoded again: a decoded "?" or space stays part of it
        where, query = quote(request.url.path, safe="/"), request.url.query
    else:
        referer = urlsplit(request.headers.get("referer", ""))
        # only a page of this same console, whose address the guard has checked as the Host
        same = referer.netloc == request.headers.get("host")
        where, query = (referer.path, referer.query) if same else ("/gems", "")
    if not _on_this_console(where):
        return "/gems"
    return where + (f"?{query}" if query else "")


async def store_unavailable(request: Request, exc: Exception) -> Response:
    """The 503 of a store that cannot be used right now (an exception handler of the console)."""
    assert isinstance(exc, StoreUnreachableError | StoreLockedError)
    # the operator's to read: the message names the server (never the password), the page does not
    log.error("a console request could not be served: %s", exc.message)
    lang = choose_lang(request.cookies.get("lang"), request.headers.get("accept-language"))
    key = "unavailable_locked" if isinstance(exc, StoreLockedError) else "unavailable_unreachable"
    page = {"lang": lang, "title": text("unavailable_title", lang), "message": text(key, lang)}
    if request.headers.get("hx-request") == "true":
        response = render_page(request, "_unavailable.html", page, status_code=503)
        response.headers["HX-Retarget"] = f"#{ALERT_ID}"
        response.headers["HX-Reswap"] = "innerHTML"
    else:
        response = render_page(request, "unavailable.html", {**page, "again": return_path(request)}, status_code=503)
    response.headers["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER)
    return response
