"""The front door reads a request's claims about where it comes from exactly, or refuses it.

The guard compares a request's ``Origin`` with the console's own address, and refuses a browser's
``Sec-Fetch-Site: cross-site``. It used to read only the first of several such headers, so a request
that also named another site went through, and it took an ``https://`` Origin for the console that
only speaks ``http://``. A WebSocket, which a browser opens from any site and which is bound by no
same-origin rule, was passed on without any check at all (no Host, no Origin, no session); the
console serves none, and now refuses every one before anything else sees it.
"""

from __future__ import annotations

import asyncio

import httpx
from console_harness import ConsoleServer
from starlette.types import Message

from notochord.console import create_console


def _switch_language(console: ConsoleServer, headers: list[tuple[str, str]]) -> tuple[httpx.Response, str]:
    """A signed-in post of the language switch to Chinese with ``headers``; its answer, and the
    language the console speaks to the same browser afterwards."""
    client, token = console.signed_in("/gems")
    answer = client.post("/prefs/lang", data={"csrf": token, "lang": "zh"}, headers=headers)
    after = client.get("/gems").text
    return answer, "zh" if '<html lang="zh-CN">' in after else "en"


def test_an_origin_of_another_scheme_is_not_the_console_s_own(console: ConsoleServer) -> None:
    """The console answers over http only: ``https://`` with its host and port is another origin,
    while the browser's own same-origin post goes through."""
    answer, lang = _switch_language(console, [("Origin", console.url), ("Sec-Fetch-Site", "same-origin")])
    assert (answer.status_code, lang) == (303, "zh")
    answer, lang = _switch_language(console, [("Origin", console.url.replace("http://", "https://"))])
    assert answer.status_code == 403
    assert "another site" in answer.text
    assert lang == "en", "nothing was changed"


def test_a_request_naming_two_origins_or_also_cross_site_is_refused(console: ConsoleServer) -> None:
    """Two Origin headers say two things, and a ``Sec-Fetch-Site: cross-site`` counts wherever it
    stands among the headers: whichever comes first, the request is refused."""
    origins = [("Origin", console.url), ("Origin", "https://evil.example")]
    sites = [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "cross-site")]
    for headers in (origins, origins[::-1], sites, sites[::-1]):
        answer, lang = _switch_language(console, headers)
        assert answer.status_code == 403, headers
        assert lang == "en", "nothing was changed"


def _websocket(console: ConsoleServer, path: str, headers: list[tuple[bytes, bytes]]) -> list[Message]:
    """What the console answers to a WebSocket opened at ``path``."""
    app = create_console(console.nc)
    scope = {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "scheme": "ws",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", console.port),
        "client": ("127.0.0.1", 40000),
        "subprotocols": [],
    }
    incoming = [{"type": "websocket.connect"}]
    sent: list[Message] = []

    async def receive() -> Message:
        if incoming:
            return incoming.pop(0)
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_a_websocket_is_refused_before_anything_answers_it(console: ConsoleServer) -> None:
    """Opened by another site's page under its own rebound name, or by the console's own address
    with the person's cookie: never accepted, closed as a policy violation (1008)."""
    client = console.client()
    cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    for path in ("/gems", "/static/htmx.min.js", "/login"):
        for host, origin in ((b"evil.example", b"https://evil.example"), (f"127.0.0.1:{console.port}".encode(), b"")):
            headers = [(b"host", host), (b"cookie", cookie.encode())]
            headers += [(b"origin", origin)] if origin else []
            sent = _websocket(console, path, headers)
            assert [m["type"] for m in sent] == ["websocket.close"], (path, sent)
            assert sent[0]["code"] == 1008


SAME_SITE = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


def test_a_page_of_another_port_on_the_same_host_is_refused_like_another_site(console: ConsoleServer) -> None:
    """A browser calls ``localhost:3000`` the same site as ``localhost:<console>`` and sends the
    console's cookie along; the console refuses it all the same, to GET as to POST."""
    client, token = console.signed_in("/gems")
    for path in ("/gems", "/search?q=diagnosis", "/static/console.css"):
        answer = client.get(path, headers=SAME_SITE)
        assert answer.status_code == 403, path
        assert "another site" in answer.text
    answer = client.post("/prefs/lang", data={"csrf": token, "lang": "zh"}, headers={"Sec-Fetch-Site": "same-site"})
    assert answer.status_code == 403
    assert '<html lang="en">' in client.get("/gems").text, "nothing was changed"


def test_a_sign_in_link_opened_from_the_same_site_asks_before_it_signs_in(console: ConsoleServer) -> None:
    """The sign-in link stays the one thing another site may open: it asks, spends nothing, and
    the console's own button then signs in."""
    token = console.login_url().split("token=")[1]
    browser = console.client(signed_in=False)
    for answer in (
        browser.get("/login", params={"token": token}, headers=SAME_SITE),
        browser.head("/login", params={"token": token}, headers=SAME_SITE),
    ):
        assert answer.status_code == 200
        assert "set-cookie" not in answer.headers
    assert browser.get("/gems").status_code == 401
    signed_in = browser.post("/login", data={"token": token}, headers={"Origin": console.url})
    assert signed_in.status_code == 303
    assert browser.get("/gems").status_code == 200
