"""Every answer of the console carries its protections, not only the pages it renders.

A page of the console is never framed by another site (``frame-ancestors 'none'`` and
``X-Frame-Options: DENY``), never read as another type than it says (``nosniff``), loads nothing
from elsewhere (its Content-Security-Policy) and sends no address of its own to another site
(``Referrer-Policy``). The console's static files and its redirects used to go out without any of
these, as they are not rendered pages: now every answer has them, and every answer but a static
file (the same for everybody) is never kept by a cache (``no-store``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import httpx
from console_harness import ConsoleServer

PROTECTIONS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


def _assert_protected(answer: httpx.Response, *, cached: bool = False) -> None:
    where = f"{answer.request.method} {answer.request.url.path} ({answer.status_code})"
    missing = [name for name in PROTECTIONS if name not in answer.headers]
    assert missing == [], f"{where} goes out without {missing}"
    policy = answer.headers["content-security-policy"]
    for directive in ("default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"):
        assert directive in policy, (where, policy)
    assert answer.headers["x-frame-options"] == "DENY", where
    assert answer.headers["x-content-type-options"] == "nosniff", where
    if not cached:
        assert answer.headers.get("cache-control") == "no-store", where


def test_a_static_file_is_sent_with_the_console_s_protections(console: ConsoleServer) -> None:
    """K-UI-01: the style sheet, the script and the licence beside it are answered, to GET and to
    HEAD, with the policy of the pages; a static file may be cached, as it is the same for all."""
    client = console.client()
    for path in ("/static/console.css", "/static/htmx.min.js", "/static/htmx.LICENSE"):
        for answer in (client.get(path), client.head(path)):
            assert answer.status_code == 200, path
            _assert_protected(answer, cached=True)


def test_every_redirect_of_the_console_carries_the_protections(console: ConsoleServer) -> None:
    """K-UI-01: the first page's redirect, a form's redirect, signing in and signing out, and the
    redirect Starlette makes for ``/static`` without its slash."""
    link = console.login_url()
    browser = console.client(signed_in=False)
    signed_in = browser.get(link)
    assert signed_in.status_code == 303
    _assert_protected(signed_in)
    # the sign-in answer keeps its own, stricter rule: the link must not leave in a Referer
    assert signed_in.headers["referrer-policy"] == "no-referrer"

    home = browser.get("/")
    assert (home.status_code, home.headers["location"]) == (303, "/gems")
    _assert_protected(home)
    assert home.headers["referrer-policy"] == "same-origin"

    static = browser.get("/static")
    assert static.is_redirect
    _assert_protected(static)

    token = browser.get("/gems").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    switched = browser.post("/prefs/lang", data={"csrf": token, "lang": "en", "next": "/gems"})
    assert switched.status_code == 303
    _assert_protected(switched)

    signed_out = browser.post("/logout", data={"csrf": token})
    assert signed_out.status_code == 303
    _assert_protected(signed_out)


def test_the_refusals_and_error_pages_keep_carrying_the_protections(console: ConsoleServer) -> None:
    """K-UI-12: the answers that already had the policy keep it: no session, a foreign Host, a
    foreign Origin, a page that does not exist, a wrong method, a static file that does not exist,
    and the console's 500 page of a form whose store fails."""
    client, token = console.signed_in("/knowledge")
    answers = [
        console.client(signed_in=False).get("/gems"),
        client.get("/gems", headers={"Host": "evil.example"}),
        client.post("/prefs/lang", data={"lang": "en"}, headers={"Origin": "https://evil.example"}),
        client.get("/no-such-page"),
        client.post("/gems", data={}),
        client.get("/static/no-such-file.js"),
    ]
    database = sqlite3.connect(Path(console.nc.data_dir) / "spaces" / "personal.db", isolation_level=None)
    try:
        database.execute("DROP TABLE changes")
    finally:
        database.close()
    answers.append(client.post("/knowledge/collections", data={"csrf": token, "name": "Recipes"}))
    assert [a.status_code for a in answers] == [401, 421, 403, 404, 405, 404, 500]
    for answer in answers:
        _assert_protected(answer)


def test_htmx_runs_no_code_a_page_carries_and_keeps_no_copy_of_a_page(console: ConsoleServer) -> None:
    """K-UI-01: defence behind the Content-Security-Policy. htmx is told never to evaluate code a
    swapped-in answer carries (its `hx-on`, `js:` values and trigger filters, `<script>` in a swap),
    which the console never uses, and to keep no copies of pages in the browser's storage (its
    history cache), where a page's private data would outlive the session."""
    client, _ = console.signed_in("/gems")
    page = client.get("/gems")
    found = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", page.text)
    assert found is not None
    config = json.loads(found.group(1))

    assert config["allowEval"] is False
    assert config["allowScriptTags"] is False
    assert config["historyCacheSize"] == 0
    assert config["selfRequestsOnly"] is True
