"""A page of another site in Chromium, against a signed-in console: it gets nothing from it.

The worst case is taken: the hostile page is *same-site* with the console (``localhost`` on another
port, whose requests carry the console's ``SameSite=Strict`` cookie) and even knows the session's
CSRF token. It frames the console, posts a form to it, and fetches from it, with and without htmx's
headers; the console is not shown inside its frame, no action is taken, and nothing is read. Its
requests are refused outright (403), as they are from any other site: another origin on the same
host is another site to the person, and a page of it could otherwise time what the console answers
it (how long a search for a word takes) without reading the answer.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from console_harness import WEATHER, ConsoleServer, csrf_of
from playwright.sync_api import Browser, Page

PERMISSION = "facts.read:self:location.home.*"


def _hostile_page(console_url: str, token: str) -> bytes:
    switch = f"permission={PERMISSION}&on=1&csrf={token}"
    return f"""<!doctype html>
<title>another site</title>
<iframe id="framed" src="{console_url}/gems/weather"></iframe>
<form id="post" method="post" action="{console_url}/gems/weather/permissions">
  <input name="permission" value="{PERMISSION}"><input name="on" value="1"><input name="csrf" value="{token}">
</form>
<script>
const results = [];
const post = {{method: "POST", credentials: "include", body: "{switch}",
               headers: {{"Content-Type": "application/x-www-form-urlencoded"}}}};
Promise.allSettled([
  fetch("{console_url}/gems/weather", {{credentials: "include"}}).then(r => r.text()),
  fetch("{console_url}/search?q=diagnosis", {{credentials: "include", mode: "no-cors"}}).then(r => r.type),
  fetch("{console_url}/gems/weather/permissions", {{...post, mode: "no-cors"}}).then(r => r.type),
  fetch("{console_url}/gems/weather/permissions",
        {{...post, headers: {{...post.headers, "HX-Request": "true", "X-CSRF-Token": "{token}"}}}}).then(r => r.text()),
]).then(settled => {{ window.outcome = settled.map(s => s.status === "fulfilled" ? String(s.value) : "refused"); }});
</script>
""".encode()


@pytest.fixture
def another_site(console: ConsoleServer) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A web server on ``localhost``, another port: its address, and the pages it is to serve."""
    pages: dict[str, bytes] = {}

    class Serving(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, b"")
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Serving)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_address[1]}", pages
    finally:
        server.shutdown()
        server.server_close()


def _signed_in_at_localhost(browser: Browser, console: ConsoleServer) -> tuple[Page, str]:
    """A browser signed in to the console under the name ``localhost``; the page, and its console's address."""
    console_url = console.url.replace("127.0.0.1", "localhost")
    page = browser.new_context().new_page()
    page.goto(console.login_url().replace("127.0.0.1", "localhost"))
    page.goto(f"{console_url}/gems/weather")
    assert page.title().startswith("weather")
    return page, console_url


def test_a_same_site_page_that_knows_the_token_can_neither_frame_nor_drive_nor_read_the_console(
    browser: Browser, console: ConsoleServer, another_site: tuple[str, dict[str, bytes]]
) -> None:
    """K-UI-01: the switch stays off whatever the other page does; its frame stays empty, its
    fetches read nothing, and its form post is refused."""
    console.space.gems.install(WEATHER)
    page, console_url = _signed_in_at_localhost(browser, console)
    token = csrf_of(page.content())
    site, pages = another_site
    pages["/"] = _hostile_page(console_url, token)

    hostile = page.context.new_page()
    answered: list[tuple[str, str, int]] = []
    hostile.on("response", lambda r: answered.append((r.request.method, r.url, r.status)))
    hostile.goto(f"{site}/")
    hostile.wait_for_function("window.outcome !== undefined")
    outcome = hostile.evaluate("window.outcome")
    # the fetches that would read an answer, or send htmx's headers, get none at all; the no-cors
    # ones only an opaque answer (refused inside, as the statuses below show)
    assert outcome[0] == "refused" and outcome[3] == "refused", outcome
    [framed] = hostile.main_frame.child_frames
    # Chromium shows its own error page in place of a page that refuses to be framed
    assert not framed.url.startswith(console_url), "the console was shown inside another site's frame"
    assert "notochord" not in framed.content()

    with hostile.expect_response(f"{console_url}/gems/weather/permissions") as posted:
        hostile.evaluate("document.getElementById('post').submit()")
    assert posted.value.status == 403

    # another origin on the same host is another site: a page of it is refused what it loads
    # (the frame, a fetch whose answer it may not read but could time), not only what it posts
    from_the_console = [(m, url, status) for m, url, status in answered if url.startswith(console_url)]
    assert from_the_console, answered
    assert {status for _, _, status in from_the_console} == {403}, from_the_console

    assert [(p.permission, p.on) for p in console.space.gems.permissions("weather")] == [(PERMISSION, False)]
    page.context.close()
